//! Runtime fault injection (issue 6, item 4; SPEC §9): transports wrapping a
//! [`SimTransport`] that
//!
//! - (a) fail the submission itself → [`RuntimeError::Transport`], nothing stays retained;
//! - (b) report a device error code → [`RuntimeError::Device`] with the firmware's status;
//! - (c) never complete (the device hangs) → [`RuntimeError::Timeout`], `reset` refuses
//!   ([`RuntimeError::NotQuiescent`]), buffers stay retained (`Busy` on map) until the
//!   completion finally arrives;
//! - (d) complete twice → the first status wins, the duplicate is ignored, nothing is freed
//!   twice (the shim checks every `free` names a live allocation);
//! - (e) complete out of order (several in flight, retired in reverse and shuffled order) →
//!   each submission gets its own status and output, and releases only its own buffers;
//! - (f) a bound packet naming unmapped memory → the simulator faults →
//!   [`RuntimeError::Device`]`(`[`FwError::Fault`]`(`[`Fault::Unmapped`]`))`, and the
//!   device keeps working afterwards.
//! - a transport that refuses a submission but keeps its callback (and runs the command
//!   later) → [`RuntimeError::Transport`], yet the buffers stay retained until it confirms;
//! - dropping the executor while the device still holds a command frees nothing until the
//!   command's completion is confirmed.
//!
//! Every wait is bounded; the file runs in well under a few seconds.

use crate::support::forward;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use simak::ev74::DeviceRegion;
use simak::ev74::quant::{self, DevicePlan};
use simak::ev74::runtime::{
    Completion, DeviceBuffer, Executor, Retire, RuntimeError, SimConfig, SimTransport, Status,
    Transport, TransportError,
};
use simak::ops::quant::{Params, Request, check_inference};
use simak::state::Encoded;
use simak::{DType, TensorSpec};
use simak_ev74_fw::{Capabilities, Capability, Command, Fault, FwError};

/// Long enough for any simulated command on a loaded machine, short enough to never hang CI.
const BOUND: Duration = Duration::from_secs(10);
const SHORT: Duration = Duration::from_millis(30);

/// What the shim does with a submission.
#[derive(Clone, Debug, PartialEq)]
enum Mode {
    /// Forward unchanged.
    Pass,
    /// Refuse the submission (the mailbox is closed); the retire callback is dropped.
    FailSubmit,
    /// Report a refused submission but hand the command to the device anyway (a driver
    /// violating the `Transport` contract: its callback is not dropped).
    FailSubmitButRun,
    /// Replace the device status by this error.
    Status(FwError),
    /// Device retires, completion is held by the shim (released by the test).
    Hold,
    /// Device hangs: the command is held before reaching the device and the device is not
    /// quiescent while it is held.
    Hang,
    /// Deliver the completion twice (a duplicated interrupt).
    Twice,
    /// Overwrite the descriptor in device memory with these bytes before forwarding.
    Corrupt(Vec<u8>),
}

struct Shim {
    inner: SimTransport,
    /// Entries advertised to the Runtime (may differ from what the firmware runs).
    advertised: Vec<Capability>,
    mode: Mutex<Mode>,
    /// Retired commands whose completion the shim holds.
    held: Arc<Mutex<Vec<(Status, Retire)>>>,
    /// Commands the hung device has not started.
    hung: Mutex<Vec<(Command, Retire)>>,
    /// Live allocations; a free of anything else is a double (or foreign) release.
    live: Mutex<HashSet<u32>>,
    bad_frees: AtomicUsize,
    frees: AtomicUsize,
    duplicates: Arc<AtomicUsize>,
}

impl Shim {
    fn new(config: SimConfig) -> Arc<Shim> {
        let inner = SimTransport::new(config);
        let advertised = inner.capabilities().unwrap();
        Shim::with_advertised(inner, advertised)
    }

    fn with_advertised(inner: SimTransport, advertised: Vec<Capability>) -> Arc<Shim> {
        Arc::new(Shim {
            inner,
            advertised,
            mode: Mutex::new(Mode::Pass),
            held: Arc::new(Mutex::new(Vec::new())),
            hung: Mutex::new(Vec::new()),
            live: Mutex::new(HashSet::new()),
            bad_frees: AtomicUsize::new(0),
            frees: AtomicUsize::new(0),
            duplicates: Arc::new(AtomicUsize::new(0)),
        })
    }

    fn set(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    fn regions(&self) -> usize {
        self.inner.with_device(|d| d.memory.regions())
    }

    /// Waits (bounded) until the shim holds `n` retired completions.
    fn wait_held(&self, n: usize) {
        let deadline = Instant::now() + BOUND;
        while self.held.lock().unwrap().len() < n {
            assert!(Instant::now() < deadline, "device did not retire in time");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// The hung device wakes up and runs what it was given.
    fn unhang(&self) {
        let jobs: Vec<_> = self.hung.lock().unwrap().drain(..).collect();
        for (command, retire) in jobs {
            self.inner.submit(command, retire).unwrap();
        }
    }

    fn assert_no_bad_free(&self) {
        assert_eq!(self.bad_frees.load(Ordering::SeqCst), 0, "double release");
    }
}

impl Transport for Shim {
    forward!(inner: read, write, abort);
    fn capabilities(&self) -> Result<Vec<Capability>, TransportError> {
        Ok(self.advertised.clone())
    }
    fn allocate(&self, len: u64) -> Result<u32, TransportError> {
        let address = self.inner.allocate(len)?;
        assert!(self.live.lock().unwrap().insert(address));
        Ok(address)
    }
    fn free(&self, address: u32) {
        self.frees.fetch_add(1, Ordering::SeqCst);
        if !self.live.lock().unwrap().remove(&address) {
            self.bad_frees.fetch_add(1, Ordering::SeqCst);
        }
        self.inner.free(address)
    }
    fn submit(&self, command: Command, retire: Retire) -> Result<(), TransportError> {
        let mode = self.mode.lock().unwrap().clone();
        match mode {
            Mode::Pass => self.inner.submit(command, retire),
            Mode::FailSubmit => {
                drop(retire);
                Err(TransportError::Closed)
            }
            Mode::FailSubmitButRun => {
                self.hung.lock().unwrap().push((command, retire));
                Err(TransportError::Closed)
            }
            Mode::Status(e) => self.inner.submit(
                command,
                Retire::new(move |_device_status| retire.complete(Err(e))),
            ),
            Mode::Hold => {
                let held = self.held.clone();
                self.inner.submit(
                    command,
                    Retire::new(move |status| held.lock().unwrap().push((status, retire))),
                )
            }
            Mode::Hang => {
                self.hung.lock().unwrap().push((command, retire));
                Ok(())
            }
            Mode::Twice => {
                // A driver whose interrupt fires twice: the first delivery consumes the
                // callback (`Retire::complete` takes it by value), the duplicate finds the
                // slot empty and can only be counted.
                let slot = Arc::new(Mutex::new(Some(retire)));
                let duplicates = self.duplicates.clone();
                self.inner.submit(
                    command,
                    Retire::new(move |status: Status| {
                        let deliveries = [status, Err(FwError::Internal)];
                        for status in deliveries {
                            match slot.lock().unwrap().take() {
                                Some(r) => r.complete(status),
                                None => {
                                    duplicates.fetch_add(1, Ordering::SeqCst);
                                }
                            }
                        }
                    }),
                )
            }
            Mode::Corrupt(bytes) => {
                self.inner.write(command.descriptor, &bytes)?;
                self.inner.submit(command, retire)
            }
        }
    }
    fn wait_idle(&self, timeout: Duration) -> bool {
        if !self.hung.lock().unwrap().is_empty() {
            std::thread::sleep(timeout.min(SHORT));
            return false;
        }
        self.inner.wait_idle(timeout)
    }
}

struct Job {
    plan: DevicePlan,
    packet: quant::Packet<Encoded>,
    input: DeviceBuffer,
    output: DeviceBuffer,
    n: usize,
    multiplier: f32,
}

impl Job {
    /// `n` FP32 inputs 0, 1, 2, … quantized with `multiplier` into I8.
    fn new(executor: &Executor, n: usize, multiplier: f32) -> Job {
        let plan = check_inference(&Request {
            input: TensorSpec::contiguous([n as u64], DType::F32),
            output: TensorSpec::contiguous([n as u64], DType::I8),
            params: Params::new(multiplier),
        })
        .unwrap();
        let plan = quant::check_inference(&plan).unwrap();
        let packet = quant::encode_relocatable(&plan);
        let input = executor.allocate(4 * n as u64).unwrap();
        let output = executor.allocate(n as u64).unwrap();
        let data: Vec<u8> = (0..n).flat_map(|k| (k as f32).to_le_bytes()).collect();
        input.write(0, &data).unwrap();
        output.write(0, &vec![0x5a; n]).unwrap();
        Job {
            plan,
            packet,
            input,
            output,
            n,
            multiplier,
        }
    }

    fn submit(&self, executor: &Executor) -> Result<Completion, RuntimeError> {
        let bound = quant::bind(
            &self.plan,
            &self.packet,
            self.input.region(),
            self.output.region(),
        )?;
        executor.submit(&bound, &self.input, &self.output)
    }

    fn want(&self) -> Vec<u8> {
        (0..self.n)
            .map(|k| {
                ((k as f32 * self.multiplier)
                    .round_ties_even()
                    .clamp(-128.0, 127.0)) as i8 as u8
            })
            .collect()
    }

    fn got(&self) -> Vec<u8> {
        let mut out = vec![0; self.n];
        self.output.read(0, &mut out).unwrap();
        out
    }

    fn untouched(&self) -> bool {
        self.got().iter().all(|&b| b == 0x5a)
    }

    /// Both buffers retained: in flight, shared with the submission, not mappable.
    fn assert_retained(&self) {
        for b in [&self.input, &self.output] {
            assert!(b.in_flight(), "{b:?} released early");
            assert!(b.holders() >= 2);
            let busy = RuntimeError::Busy {
                address: b.address(),
            };
            assert_eq!(b.map().unwrap_err(), busy);
            assert_eq!(b.write(0, &[0]).unwrap_err(), busy);
            assert_eq!(b.read(0, &mut [0]).unwrap_err(), busy);
        }
    }

    /// Both buffers released: not in flight, only the caller's handle left, mappable.
    fn assert_released(&self) {
        for b in [&self.input, &self.output] {
            assert!(!b.in_flight(), "{b:?} still retained");
            assert_eq!(b.holders(), 1);
            b.map().unwrap().unmap().unwrap();
        }
    }
}

#[test]
fn a_failed_submission_is_a_transport_error_and_retains_nothing() {
    let shim = Shim::new(SimConfig::new(2));
    let executor = Executor::connect(shim.clone()).unwrap();
    let job = Job::new(&executor, 300, 0.5);
    let regions = shim.regions();
    shim.set(Mode::FailSubmit);
    assert_eq!(
        job.submit(&executor).unwrap_err(),
        RuntimeError::Transport(TransportError::Closed)
    );
    assert_eq!(executor.in_flight(), 0);
    job.assert_released();
    assert!(job.untouched());
    // The descriptor buffer was freed once; nothing else.
    assert_eq!(shim.regions(), regions);
    assert_eq!(shim.frees.load(Ordering::SeqCst), 1);
    // The transport recovers: the same buffers run.
    shim.set(Mode::Pass);
    job.submit(&executor).unwrap().wait(BOUND).unwrap().unwrap();
    assert_eq!(job.got(), job.want());
    job.assert_released();
    shim.assert_no_bad_free();
}

#[test]
fn a_device_error_code_is_reported_and_releases_after_retirement() {
    // The real firmware refuses: the shim advertises Quant v1, the firmware build does not.
    let mut config = SimConfig::new(2);
    config.advertised = Capabilities::empty();
    let advertised = SimTransport::new(SimConfig::new(1)).capabilities().unwrap();
    let shim = Shim::with_advertised(SimTransport::new(config), advertised);
    let executor = Executor::connect(shim.clone()).unwrap();
    let job = Job::new(&executor, 300, 0.5);
    let err = job.submit(&executor).unwrap().wait(BOUND).unwrap_err();
    assert_eq!(
        err,
        RuntimeError::Device(FwError::NotAdvertised { route: 0x2f })
    );
    assert_eq!(
        err.to_string(),
        "device status 0x102: entry of route 0x2f is not advertised"
    );
    assert!(job.untouched());
    job.assert_released();

    // A driver reporting a status code of its own on a healthy device.
    let shim = Shim::new(SimConfig::new(2));
    let executor = Executor::connect(shim.clone()).unwrap();
    let job = Job::new(&executor, 300, 0.5);
    shim.set(Mode::Status(FwError::Internal));
    let completion = job.submit(&executor).unwrap();
    assert_eq!(
        completion.wait(BOUND),
        Err(RuntimeError::Device(FwError::Internal))
    );
    // Waiting again gives the same answer; nothing was released twice.
    assert_eq!(
        completion.wait(Duration::ZERO),
        Err(RuntimeError::Device(FwError::Internal))
    );
    assert_eq!(executor.in_flight(), 0);
    job.assert_released();
    assert_eq!(executor.reset(BOUND), Ok(0));
    shim.assert_no_bad_free();
}

#[test]
fn a_hung_device_never_completes_and_keeps_everything_until_it_does() {
    let shim = Shim::new(SimConfig::new(2));
    let executor = Executor::connect(shim.clone()).unwrap();
    let job = Job::new(&executor, 300, 0.5);
    let regions = shim.regions();
    shim.set(Mode::Hang);
    let completion = job.submit(&executor).unwrap();
    let start = Instant::now();
    assert_eq!(completion.wait(SHORT), Err(RuntimeError::Timeout));
    assert_eq!(executor.reset(SHORT), Err(RuntimeError::NotQuiescent));
    assert!(start.elapsed() < BOUND, "bounded waits");
    assert!(!completion.is_complete());
    assert_eq!(executor.in_flight(), 1);
    job.assert_retained();
    // Nothing is freed while the device may run the command.
    let (input, output) = (job.input.address(), job.output.address());
    assert_eq!(shim.regions(), regions + 1, "descriptor stays allocated");
    assert_eq!(shim.frees.load(Ordering::SeqCst), 0);
    // Dropping every caller handle frees nothing either.
    let Job {
        plan,
        packet,
        input: in_buf,
        output: out_buf,
        ..
    } = job;
    drop((in_buf, plan, packet));
    assert_eq!(shim.regions(), regions + 1);
    // The device finally runs the command: completion, then release.
    shim.unhang();
    let report = completion.wait(BOUND).unwrap().unwrap();
    assert_eq!(report.units, 1);
    assert_eq!(executor.in_flight(), 0);
    assert!(!out_buf.in_flight());
    assert_eq!(out_buf.holders(), 1);
    assert_eq!(shim.regions(), regions - 1, "input and descriptor freed");
    assert!(!shim.live.lock().unwrap().contains(&input));
    assert!(shim.live.lock().unwrap().contains(&output));
    shim.assert_no_bad_free();
}

#[test]
fn a_completion_held_by_the_driver_then_reset_after_quiescence_releases_once() {
    let shim = Shim::new(SimConfig::new(2));
    let executor = Executor::connect(shim.clone()).unwrap();
    let job = Job::new(&executor, 300, 0.5);
    shim.set(Mode::Hold);
    let completion = job.submit(&executor).unwrap();
    shim.wait_held(1);
    assert_eq!(completion.wait(SHORT), Err(RuntimeError::Timeout));
    job.assert_retained();
    // The device is quiescent: reset releases, the late completion is ignored.
    assert_eq!(executor.reset(BOUND), Ok(1));
    assert_eq!(completion.wait(Duration::ZERO), Err(RuntimeError::Aborted));
    job.assert_released();
    let frees = shim.frees.load(Ordering::SeqCst);
    let (status, retire) = shim.held.lock().unwrap().pop().unwrap();
    assert!(status.is_ok());
    retire.complete(status);
    assert_eq!(completion.wait(Duration::ZERO), Err(RuntimeError::Aborted));
    assert_eq!(shim.frees.load(Ordering::SeqCst), frees);
    job.assert_released();
    shim.assert_no_bad_free();
}

#[test]
fn a_duplicated_completion_is_ignored() {
    let shim = Shim::new(SimConfig::new(2));
    let executor = Executor::connect(shim.clone()).unwrap();
    shim.set(Mode::Twice);
    let jobs: Vec<Job> = (0..6)
        .map(|k| Job::new(&executor, 100 + 50 * k, 0.25 * (k + 1) as f32))
        .collect();
    let regions = shim.regions();
    let completions: Vec<Completion> = jobs.iter().map(|j| j.submit(&executor).unwrap()).collect();
    for (job, completion) in jobs.iter().zip(&completions) {
        let report = completion.wait(BOUND).unwrap().unwrap();
        assert_eq!(report.units, 1);
        // The duplicate (an error status) did not overwrite the first answer.
        assert!(completion.wait(Duration::ZERO).is_ok());
        assert_eq!(job.got(), job.want());
        job.assert_released();
    }
    // The duplicate is delivered just after the first completion woke the waiter.
    let deadline = Instant::now() + BOUND;
    while shim.duplicates.load(Ordering::SeqCst) < 6 {
        assert!(Instant::now() < deadline, "duplicates not delivered");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(shim.duplicates.load(Ordering::SeqCst), 6);
    assert_eq!(executor.in_flight(), 0);
    assert_eq!(
        shim.regions(),
        regions,
        "each descriptor freed, nothing else"
    );
    assert_eq!(shim.frees.load(Ordering::SeqCst), 6);
    assert_eq!(executor.reset(BOUND), Ok(0));
    shim.assert_no_bad_free();
}

#[test]
fn a_completion_inside_submit_and_a_refused_submit_are_not_confused() {
    // A driver that runs synchronously completes before `submit` returns.
    struct Sync(Arc<Shim>);
    impl Transport for Sync {
        forward!(0: capabilities, allocate, free, read, write, abort, wait_idle);
        fn submit(&self, command: Command, retire: Retire) -> Result<(), TransportError> {
            let (tx, rx) = std::sync::mpsc::channel();
            self.0.submit(
                command,
                Retire::new(move |status| {
                    let _ = tx.send(status);
                }),
            )?;
            let status = rx.recv_timeout(BOUND).expect("device retired");
            let refuse = status.is_err();
            retire.complete(status);
            // A confused driver that also reports failure after completing.
            if refuse {
                Err(TransportError::Closed)
            } else {
                Ok(())
            }
        }
    }
    let shim = Shim::new(SimConfig::new(1));
    let executor = Executor::connect(Arc::new(Sync(shim.clone()))).unwrap();
    let job = Job::new(&executor, 300, 0.5);
    let completion = job.submit(&executor).unwrap();
    assert!(completion.is_complete());
    completion.wait(Duration::ZERO).unwrap().unwrap();
    assert_eq!(job.got(), job.want());
    job.assert_released();
    // Device error + refused submit: the caller sees the refusal, the buffers were
    // released once, after the device retired.
    let bad = Job::new(&executor, 300, 0.5);
    let bound = quant::bind(
        &bad.plan,
        &bad.packet,
        DeviceRegion::new(0x7000_0000, 1200),
        bad.output.region(),
    )
    .unwrap();
    shim.set(Mode::Corrupt(bound.as_bytes().to_vec()));
    assert_eq!(
        bad.submit(&executor).unwrap_err(),
        RuntimeError::Transport(TransportError::Closed)
    );
    assert_eq!(executor.in_flight(), 0);
    bad.assert_released();
    shim.assert_no_bad_free();
}

#[test]
fn out_of_order_completions_release_only_their_own_buffers() {
    for order in [[4usize, 3, 2, 1, 0], [2, 4, 0, 3, 1]] {
        let shim = Shim::new(SimConfig::new(2));
        let executor = Executor::connect(shim.clone()).unwrap();
        let jobs: Vec<Job> = (0..5)
            .map(|k| Job::new(&executor, 64 + 100 * k, 0.5 + k as f32))
            .collect();
        shim.set(Mode::Hold);
        let completions: Vec<Completion> =
            jobs.iter().map(|j| j.submit(&executor).unwrap()).collect();
        // The device retired everything in submission order; the driver holds the
        // completions and delivers them in `order`.
        shim.wait_held(jobs.len());
        let mut held: Vec<Option<(Status, Retire)>> =
            shim.held.lock().unwrap().drain(..).map(Some).collect();
        assert_eq!(executor.in_flight(), jobs.len());
        let mut delivered = HashSet::new();
        for (step, &k) in order.iter().enumerate() {
            for (j, job) in jobs.iter().enumerate() {
                if delivered.contains(&j) {
                    job.assert_released();
                } else {
                    job.assert_retained();
                    assert!(!completions[j].is_complete());
                    assert_eq!(
                        completions[j].wait(Duration::ZERO),
                        Err(RuntimeError::Timeout)
                    );
                }
            }
            let (status, retire) = held[k].take().unwrap();
            retire.complete(status);
            delivered.insert(k);
            let report = completions[k].wait(BOUND).unwrap().unwrap();
            assert_eq!(report.units, 1);
            assert_eq!(jobs[k].got(), jobs[k].want(), "step {step}");
            assert_eq!(executor.in_flight(), jobs.len() - delivered.len());
        }
        for job in &jobs {
            job.assert_released();
        }
        assert_eq!(executor.reset(BOUND), Ok(0));
        assert_eq!(shim.frees.load(Ordering::SeqCst), jobs.len(), "descriptors");
        shim.assert_no_bad_free();
    }
}

#[test]
fn a_packet_naming_unmapped_memory_faults_the_device() {
    let shim = Shim::new(SimConfig::new(2));
    let executor = Executor::connect(shim.clone()).unwrap();
    let job = Job::new(&executor, 300, 0.5);
    let faults = shim.inner.with_device(|d| d.memory.stats().faults);
    // The input slot names an address far outside every mapped region.
    let bogus = 0x7000_0000u32;
    let bound = quant::bind(
        &job.plan,
        &job.packet,
        DeviceRegion::new(bogus, 1200),
        job.output.region(),
    )
    .unwrap();
    shim.set(Mode::Corrupt(bound.as_bytes().to_vec()));
    let err = job.submit(&executor).unwrap().wait(BOUND).unwrap_err();
    match &err {
        &RuntimeError::Device(FwError::Fault(Fault::Unmapped { address, len })) => {
            assert!(
                (u64::from(bogus)..u64::from(bogus) + 1200).contains(&address),
                "{address:x}"
            );
            assert!(len > 0 && address + len <= u64::from(bogus) + 1200);
        }
        other => panic!("expected an unmapped-memory fault, got {other:?}"),
    }
    let RuntimeError::Device(fw) = &err else {
        unreachable!()
    };
    assert_eq!(fw.code(), 0x107);
    assert!(
        err.to_string()
            .starts_with("device status 0x107: device fault"),
        "{err}"
    );
    assert!(shim.inner.with_device(|d| d.memory.stats().faults) > faults);
    job.assert_released();

    // The output slot names the guard band right after the output buffer.
    let guard = job.output.address() + job.output.len() as u32 + 16;
    let bound = quant::bind(
        &job.plan,
        &job.packet,
        job.input.region(),
        DeviceRegion::new(guard, 300),
    )
    .unwrap();
    shim.set(Mode::Corrupt(bound.as_bytes().to_vec()));
    let err = job.submit(&executor).unwrap().wait(BOUND).unwrap_err();
    assert!(
        matches!(
            err,
            RuntimeError::Device(FwError::Fault(Fault::Unmapped { address, .. }))
                if address >= u64::from(guard)
        ),
        "{err:?}"
    );
    job.assert_released();

    // The device is not wedged: the same buffers run correctly afterwards.
    shim.set(Mode::Pass);
    job.submit(&executor).unwrap().wait(BOUND).unwrap().unwrap();
    assert_eq!(job.got(), job.want());
    job.assert_released();
    assert_eq!(executor.in_flight(), 0);
    shim.assert_no_bad_free();
}

#[test]
fn every_fault_at_once_from_several_threads_ends_without_leaks() {
    // Mixed faults on one executor from 4 threads: every wait is bounded, every buffer is
    // eventually freed exactly once.
    let shim = Shim::new(SimConfig::new(2));
    let executor = Executor::connect(shim.clone()).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let executor = executor.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut outcomes = [0usize; 3];
                for k in 0..40 {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let job = Job::new(&executor, 50 + 7 * ((t * 40 + k) % 30), 0.5);
                    match job.submit(&executor).map(|c| c.wait(BOUND)) {
                        Ok(Ok(_)) => {
                            assert_eq!(job.got(), job.want());
                            outcomes[0] += 1;
                        }
                        Ok(Err(RuntimeError::Device(FwError::Internal))) => outcomes[1] += 1,
                        Err(RuntimeError::Transport(TransportError::Closed)) => outcomes[2] += 1,
                        other => panic!("unexpected {other:?}"),
                    }
                    job.assert_released();
                }
                outcomes
            })
        })
        .collect();
    let modes = [
        Mode::Pass,
        Mode::FailSubmit,
        Mode::Status(FwError::Internal),
        Mode::Twice,
    ];
    let start = Instant::now();
    let mut k = 0;
    while threads.iter().any(|t| !t.is_finished()) {
        shim.set(modes[k % modes.len()].clone());
        k += 1;
        std::thread::sleep(Duration::from_millis(2));
        assert!(start.elapsed() < BOUND * 3, "stuck");
    }
    stop.store(true, Ordering::SeqCst);
    let mut total = [0usize; 3];
    for t in threads {
        let o = t.join().unwrap();
        for i in 0..3 {
            total[i] += o[i];
        }
    }
    eprintln!("ok / device error / refused: {total:?}");
    assert_eq!(total.iter().sum::<usize>(), 160);
    assert_eq!(executor.in_flight(), 0);
    drop(executor);
    assert_eq!(shim.regions(), 0);
    assert!(shim.live.lock().unwrap().is_empty());
    shim.assert_no_bad_free();
}

#[test]
fn dropping_the_executor_frees_nothing_the_device_may_still_touch() {
    let shim = Shim::new(SimConfig::new(2));
    let executor = Executor::connect(shim.clone()).unwrap();
    let job = Job::new(&executor, 300, 0.5);
    let regions = shim.regions();
    shim.set(Mode::Hang);
    let completion = job.submit(&executor).unwrap();
    assert_eq!(completion.wait(SHORT), Err(RuntimeError::Timeout));
    // The caller gives up on everything while the device still holds the command.
    drop(executor);
    let (input, output) = (job.input.address(), job.output.address());
    drop(job);
    assert_eq!(
        shim.regions(),
        regions + 1,
        "input, output and descriptor stay allocated"
    );
    assert_eq!(shim.frees.load(Ordering::SeqCst), 0);
    assert!(!completion.is_complete());
    // The device wakes up and retires the command: only now is everything freed.
    shim.unhang();
    let report = completion.wait(BOUND).unwrap().unwrap();
    assert_eq!(report.units, 1);
    assert_eq!(shim.regions(), 0);
    assert!(!shim.live.lock().unwrap().contains(&input));
    assert!(!shim.live.lock().unwrap().contains(&output));
    assert_eq!(shim.frees.load(Ordering::SeqCst), 3);
    shim.assert_no_bad_free();
}

#[test]
fn a_refused_submission_whose_callback_lives_on_stays_retained() {
    let shim = Shim::new(SimConfig::new(2));
    let executor = Executor::connect(shim.clone()).unwrap();
    let job = Job::new(&executor, 300, 0.5);
    let regions = shim.regions();
    shim.set(Mode::FailSubmitButRun);
    assert_eq!(
        job.submit(&executor).unwrap_err(),
        RuntimeError::Transport(TransportError::Closed)
    );
    // The driver kept the callback, so the device may still run the command: the buffers
    // stay retained although the caller got an error.
    assert_eq!(executor.in_flight(), 1);
    job.assert_retained();
    assert_eq!(shim.regions(), regions + 1);
    assert_eq!(executor.reset(SHORT), Err(RuntimeError::NotQuiescent));
    job.assert_retained();
    // The device runs it after all; the confirmation releases everything once.
    shim.unhang();
    let deadline = Instant::now() + BOUND;
    while executor.in_flight() > 0 {
        assert!(Instant::now() < deadline, "never confirmed");
        std::thread::sleep(Duration::from_millis(1));
    }
    job.assert_released();
    assert_eq!(job.got(), job.want());
    assert_eq!(shim.regions(), regions);
    assert_eq!(shim.frees.load(Ordering::SeqCst), 1);
    shim.assert_no_bad_free();
}

#[test]
fn a_submission_refused_halfway_retains_nothing() {
    let shim = Shim::new(SimConfig::new(2));
    let executor = Executor::connect(shim.clone()).unwrap();
    let job = Job::new(&executor, 300, 0.5);
    let regions = shim.regions();
    // The output is mapped on the host: the input was already marked, then the output refused.
    let map = job.output.map().unwrap();
    assert_eq!(
        job.submit(&executor).unwrap_err(),
        RuntimeError::Busy {
            address: job.output.address()
        }
    );
    drop(map);
    assert_eq!(executor.in_flight(), 0);
    job.assert_released();
    assert_eq!(shim.regions(), regions, "the descriptor was freed");
    job.submit(&executor).unwrap().wait(BOUND).unwrap().unwrap();
    assert_eq!(job.got(), job.want());
    shim.assert_no_bad_free();
}
