//! The EV74 Runtime over the simulated transport (SPEC §9).
//!
//! - 1000 submissions from 4 threads with random sizes, dtypes and layouts, all in flight
//!   before any wait, each checked byte for byte against the A65 exact path;
//! - a transport that loses a completion: the wait times out, the submission keeps its
//!   buffers (they cannot be mapped or freed) until `reset` saw the device quiescent;
//! - a transport that delays completion: timeout first, then success, then release;
//! - a device that never becomes quiescent: `reset` refuses to release anything;
//! - missing capability → error; empty plans are not submitted; address 0 never appears.

use crate::support::{self, forward};

use support::SubmitEncoded;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use simak::a65::{self, Level};
use simak::ev74::quant::{self, DevicePlan};
use simak::ev74::runtime::{
    DeviceBuffer, Executor, Retire, RuntimeError, SimConfig, SimTransport, Transport,
    TransportError,
};
use simak::ops::quant::{Params, Plan, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_ev74_fw::{Capabilities, Command};
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;

const LONG: Duration = Duration::from_secs(60);

fn plan_1d(n: u64, dtype: DType, in_stride: u64, params: Params) -> Plan {
    check_inference(&Request {
        input: TensorSpec::strided([n], [in_stride], dtype),
        output: TensorSpec::contiguous([n], DType::I8),
        params,
    })
    .unwrap()
}

fn expected(plan: &Plan, input: &[u8], out_len: usize, fill: u8) -> Vec<u8> {
    let aligned = Aligned::from_slice(input);
    let mut out = vec![fill; out_len];
    let prepared = a65::quant::prepare_at(plan, Level::Scalar).unwrap();
    a65::quant::execute(&prepared, aligned.as_slice(), &mut out).unwrap();
    out
}

struct Pending {
    completion: simak::ev74::runtime::Completion,
    output: DeviceBuffer,
    want: Vec<u8>,
}

#[test]
fn a_thousand_submissions_from_four_threads() {
    let transport = Arc::new(SimTransport::new(SimConfig::new(4)));
    let executor = Executor::connect(transport.clone()).unwrap();
    let max_in_flight = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let executor = executor.clone();
            let max_in_flight = max_in_flight.clone();
            std::thread::spawn(move || {
                let mut rng = Rng::new(0x5eed_ee74 + t);
                let mut pending = Vec::new();
                for _ in 0..250 {
                    let dtype = *rng.pick(&[DType::F32, DType::BF16, DType::F16]);
                    let n = match rng.below(4) {
                        0 => rng.below(16),
                        1 => 16 + rng.below(112),
                        2 => 128 + rng.below(2000),
                        _ => 2000 + rng.below(20_000),
                    };
                    let elem = dtype.size() as u64;
                    let stride = elem * (1 + u64::from(rng.chance(1, 4)));
                    let params = Params::from_bits(0x3c00_0000 | rng.next_u32() & 0x7f_ffff)
                        .with_zero_point(rng.range_i64(-128, 127) as i32)
                        .with_rounding(*rng.pick(&Rounding::ALL));
                    let plan = plan_1d(n, dtype, stride, params);
                    let device_plan: DevicePlan = quant::check_inference(&plan).unwrap();
                    let packet = quant::encode_relocatable(&device_plan);
                    let in_len = plan.input().span().max(1);
                    let input_bytes: Vec<u8> = (0..in_len).map(|_| rng.next_u32() as u8).collect();
                    let input = executor.allocate(in_len).unwrap();
                    let output = executor.allocate(n + 3).unwrap();
                    assert_ne!(input.address(), 0);
                    assert_ne!(output.address(), 0);
                    {
                        let mut map = input.map().unwrap();
                        map.copy_from_slice(&input_bytes);
                        map.unmap().unwrap();
                    }
                    output.write(0, &vec![0xc3; (n + 3) as usize]).unwrap();
                    let want = expected(&plan, &input_bytes, (n + 3) as usize, 0xc3);
                    let completion = executor
                        .submit_encoded(&device_plan, &packet, &input, &output)
                        .unwrap();
                    max_in_flight.fetch_max(executor.in_flight(), Ordering::Relaxed);
                    // Drop the caller's input handle: the submission retains it.
                    drop(input);
                    pending.push(Pending {
                        completion,
                        output,
                        want,
                    });
                }
                let mut checked = 0;
                for p in pending {
                    p.completion.wait(LONG).unwrap();
                    assert!(!p.output.in_flight());
                    let mut got = vec![0u8; p.want.len()];
                    p.output.read(0, &mut got).unwrap();
                    assert_eq!(got, p.want);
                    checked += 1;
                }
                checked
            })
        })
        .collect();
    let checked: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(checked, 1000);
    assert_eq!(executor.in_flight(), 0);
    eprintln!(
        "1000 submissions checked; at most {} in flight at once",
        max_in_flight.load(Ordering::Relaxed)
    );
    assert!(max_in_flight.load(Ordering::Relaxed) > 4);
    // Every buffer (inputs, outputs, descriptors) was freed.
    drop(executor);
    assert_eq!(transport.with_device(|d| d.memory.regions()), 0);
}

/// Forwards to a [`SimTransport`], but can lose completions, delay them, or claim the
/// device never becomes idle.
struct Faulty {
    inner: SimTransport,
    drop_completions: AtomicBool,
    delay: Mutex<Option<Duration>>,
    never_idle: AtomicBool,
}

impl Faulty {
    fn new() -> Faulty {
        Faulty {
            inner: SimTransport::new(SimConfig::new(2)),
            drop_completions: AtomicBool::new(false),
            delay: Mutex::new(None),
            never_idle: AtomicBool::new(false),
        }
    }
}

impl Transport for Faulty {
    forward!(inner: capabilities, allocate, free, read, write, abort);
    fn submit(&self, command: Command, retire: Retire) -> Result<(), TransportError> {
        let lose = self.drop_completions.load(Ordering::SeqCst);
        let delay = *self.delay.lock().unwrap();
        self.inner.submit(
            command,
            Retire::new(move |status| {
                if lose {
                    drop(retire);
                } else if let Some(d) = delay {
                    std::thread::spawn(move || {
                        std::thread::sleep(d);
                        retire.complete(status);
                    });
                } else {
                    retire.complete(status);
                }
            }),
        )
    }
    fn wait_idle(&self, timeout: Duration) -> bool {
        if self.never_idle.load(Ordering::SeqCst) {
            std::thread::sleep(timeout);
            return false;
        }
        self.inner.wait_idle(timeout)
    }
}

fn small_job(
    executor: &Executor,
) -> (
    DevicePlan,
    quant::Packet<simak::state::Encoded>,
    DeviceBuffer,
    DeviceBuffer,
) {
    let plan = plan_1d(300, DType::F32, 4, Params::new(2.0));
    let plan = quant::check_inference(&plan).unwrap();
    let packet = quant::encode_relocatable(&plan);
    let input = executor.allocate(1200).unwrap();
    let output = executor.allocate(300).unwrap();
    let data: Vec<u8> = (0..300).flat_map(|k| (k as f32).to_le_bytes()).collect();
    input.write(0, &data).unwrap();
    (plan, packet, input, output)
}

#[test]
fn a_lost_completion_times_out_and_keeps_the_buffers_until_reset() {
    let transport = Arc::new(Faulty::new());
    transport.drop_completions.store(true, Ordering::SeqCst);
    let executor = Executor::connect(transport.clone()).unwrap();
    let (plan, packet, input, output) = small_job(&executor);
    let completion = executor
        .submit_encoded(&plan, &packet, &input, &output)
        .unwrap();
    assert_eq!(
        completion.wait(Duration::from_millis(50)),
        Err(RuntimeError::Timeout)
    );
    // Still retained: counted in flight, shared with the submission, not mappable.
    assert_eq!(executor.in_flight(), 1);
    assert!(input.in_flight() && output.in_flight());
    assert!(input.holders() >= 2);
    assert_eq!(
        input.map().unwrap_err(),
        RuntimeError::Busy {
            address: input.address()
        }
    );
    let regions = transport.inner.with_device(|d| d.memory.regions());
    assert_eq!(regions, 3, "input, output and descriptor stay allocated");
    // Dropping the caller's handles frees nothing while the submission retains them.
    let (in_addr, out_addr) = (input.address(), output.address());
    drop(input);
    let output_handle = output.clone();
    drop(output);
    assert_eq!(transport.inner.with_device(|d| d.memory.regions()), 3);
    assert_eq!(
        completion.wait(Duration::from_millis(20)),
        Err(RuntimeError::Timeout)
    );
    // reset: quiescence first, then release.
    assert_eq!(executor.reset(LONG), Ok(1));
    assert_eq!(completion.wait(LONG), Err(RuntimeError::Aborted));
    assert_eq!(executor.in_flight(), 0);
    assert!(!output_handle.in_flight());
    drop(output_handle);
    assert_eq!(transport.inner.with_device(|d| d.memory.regions()), 0);
    assert_ne!(in_addr, out_addr);
}

#[test]
fn a_delayed_completion_times_out_then_completes() {
    let transport = Arc::new(Faulty::new());
    *transport.delay.lock().unwrap() = Some(Duration::from_millis(300));
    let executor = Executor::connect(transport.clone()).unwrap();
    let (plan, packet, input, output) = small_job(&executor);
    let completion = executor
        .submit_encoded(&plan, &packet, &input, &output)
        .unwrap();
    assert_eq!(
        completion.wait(Duration::from_millis(10)),
        Err(RuntimeError::Timeout)
    );
    assert!(input.in_flight());
    let report = completion.wait(LONG).unwrap().unwrap();
    assert_eq!(report.units, 1);
    assert!(!input.in_flight());
    let mut out = [0u8; 300];
    output.read(0, &mut out).unwrap();
    assert!(
        out.iter()
            .enumerate()
            .all(|(k, &b)| b as i8 == (2 * k).min(127) as i8)
    );
}

#[test]
fn reset_without_quiescence_releases_nothing() {
    let transport = Arc::new(Faulty::new());
    transport.drop_completions.store(true, Ordering::SeqCst);
    transport.never_idle.store(true, Ordering::SeqCst);
    let executor = Executor::connect(transport.clone()).unwrap();
    let (plan, packet, input, output) = small_job(&executor);
    let completion = executor
        .submit_encoded(&plan, &packet, &input, &output)
        .unwrap();
    assert_eq!(
        executor.reset(Duration::from_millis(20)),
        Err(RuntimeError::NotQuiescent)
    );
    assert_eq!(executor.in_flight(), 1);
    assert!(input.in_flight() && output.in_flight());
    assert!(!completion.is_complete());
    transport.never_idle.store(false, Ordering::SeqCst);
    assert_eq!(executor.reset(LONG), Ok(1));
    assert!(!input.in_flight());
}

/// A firmware without Quant connects (connect requires no entry), and each Quant
/// submission fails closed with the missing-capability error.
#[test]
fn missing_capability_is_an_error() {
    let mut config = SimConfig::new(1);
    config.advertised = Capabilities::empty();
    let executor = Executor::connect(Arc::new(SimTransport::new(config))).unwrap();
    let (plan, packet, input, output) = small_job(&executor);
    let err = executor
        .submit_encoded(&plan, &packet, &input, &output)
        .unwrap_err();
    assert!(!input.in_flight() && !output.in_flight());
    assert_eq!(
        err,
        RuntimeError::MissingCapability {
            entry: "simaai_kernels_ev74_quant_v1",
            version: 1
        }
    );
    assert_eq!(
        err.to_string(),
        "device does not advertise simaai_kernels_ev74_quant_v1 v1"
    );
}

#[test]
fn empty_plans_are_not_submitted_and_bind_errors_are_reported() {
    let transport = Arc::new(SimTransport::new(SimConfig::new(2)));
    let executor = Executor::connect(transport.clone()).unwrap();
    let empty = quant::check_inference(&plan_1d(0, DType::BF16, 2, Params::new(1.0))).unwrap();
    let a = executor.allocate(0).unwrap();
    let b = executor.allocate(0).unwrap();
    assert_ne!(a.address(), 0);
    let done = executor
        .submit_encoded(&empty, &quant::encode_relocatable(&empty), &a, &b)
        .unwrap();
    assert_eq!(done.wait(Duration::ZERO), Ok(None));
    assert_eq!(executor.in_flight(), 0);
    // Capacity is checked at bind; nothing is submitted.
    let (plan, packet, input, _) = small_job(&executor);
    let short = executor.allocate(299).unwrap();
    let err = executor
        .submit_encoded(&plan, &packet, &input, &short)
        .unwrap_err();
    assert!(matches!(err, RuntimeError::Bind(_)), "{err:?}");
    assert_eq!(executor.in_flight(), 0);
    // A mapped buffer cannot be submitted.
    let output = executor.allocate(300).unwrap();
    let map = output.map().unwrap();
    assert_eq!(
        executor
            .submit_encoded(&plan, &packet, &input, &output)
            .unwrap_err(),
        RuntimeError::Busy {
            address: output.address()
        }
    );
    drop(map);
    assert!(
        executor
            .run_encoded(&plan, &packet, &input, &output, LONG)
            .is_ok()
    );
}

#[test]
fn device_errors_are_reported_not_hidden() {
    // A run returns the firmware's report; a device error carries its status code.
    let transport = Arc::new(SimTransport::new(SimConfig::new(1)));
    let executor = Executor::connect(transport).unwrap();
    let (plan, packet, input, output) = small_job(&executor);
    let report = executor
        .run_encoded(&plan, &packet, &input, &output, LONG)
        .unwrap()
        .unwrap();
    assert_eq!(report.launched, 1);
    let err = RuntimeError::Device(simak_ev74_fw::FwError::Decode(
        quant::DecodeError::Unbound {
            port: simak::Port::Input,
        },
    ));
    assert_eq!(
        err.to_string(),
        "device status 0x026: descriptor rejected: input address slot is unbound"
    );
}

#[test]
fn dropping_everything_while_a_job_runs_still_completes_it() {
    // The completion of the last submission then releases the last buffers, which hold the
    // last reference to the transport, on the device thread itself: the transport must not
    // try to join that thread (it used to panic there, and the waiter only ever timed out).
    let executor = Executor::connect(Arc::new(SimTransport::new(SimConfig::new(1)))).unwrap();
    let n = 1u64 << 20;
    let plan = quant::check_inference(&plan_1d(n, DType::F32, 4, Params::new(2.0))).unwrap();
    let packet = quant::encode_relocatable(&plan);
    let input = executor.allocate(4 * n).unwrap();
    let output = executor.allocate(n).unwrap();
    let completion = executor
        .submit_encoded(&plan, &packet, &input, &output)
        .unwrap();
    drop(executor);
    drop(input);
    drop(output);
    let report = completion.wait(LONG).unwrap().unwrap();
    assert_eq!(report.launched, 1);
}

#[test]
fn a_ring_outside_one_to_four_fails_every_command() {
    for workers in [0, 5] {
        let transport = Arc::new(SimTransport::new(SimConfig::new(workers)));
        let executor = Executor::connect(transport).unwrap();
        let (plan, packet, input, output) = small_job(&executor);
        assert_eq!(
            executor.run_encoded(&plan, &packet, &input, &output, LONG),
            Err(RuntimeError::Device(simak_ev74_fw::FwError::Workers {
                configured: workers
            }))
        );
    }
}
