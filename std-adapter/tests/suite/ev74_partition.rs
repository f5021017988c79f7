//! The EV74 work partition (SPEC §8, issue 23 scope 1): worker 0 always owns work unit 0,
//! ranges are contiguous and balanced, workers without a unit are never started, and the
//! started workers run in the order 1, …, N−1, then 0.
//!
//! The oracle is the rule written here: worker `id` of `n` owns
//! `⌈units·id/n⌉ .. ⌈units·(id+1)/n⌉`, one unit runs on worker 0 alone. The recording tests
//! run real Quant and CastTess calls on the simulator through a platform that logs which
//! worker was started, in which order, and which output addresses it wrote.

use simak::ev74;
use simak::ev74::sim::{SimDevice, SimWorker};
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess;
use simak::ops::casttess::TiledTensorSpec;
use simak::ops::quant::{self, Params};
use simak::{DType, TensorSpec};
use simak_ev74_fw::device::{
    ComputePath, DeviceMemory, Direction, Dma, Event, Fault, Meter, Platform, Transfer,
};
use simak_ev74_fw::work::{launched, range};
use simak_ev74_fw::{Firmware, FirmwareEntry, Ieee, Report};

use crate::support::{Staged, stage};

/// The oracle: `(launched, ranges)` for `units` on a ring of `workers`.
fn oracle(units: u64, workers: u64) -> (u64, Vec<(u64, u64)>) {
    let n = if units <= 1 { 1 } else { workers };
    let at = |k: u64| (units * k).div_ceil(n);
    (n, (0..n).map(|id| (at(id), at(id + 1))).collect())
}

#[test]
fn worker_zero_owns_unit_zero_for_1_to_9_units_on_1_to_4_workers() {
    for units in 1..=9u64 {
        for workers in 1..=4u64 {
            let (n, want) = oracle(units, workers);
            assert_eq!(launched(units, workers as usize) as u64, n);
            let got: Vec<_> = (0..n)
                .map(|id| range(units, id as usize, n as usize))
                .collect();
            assert_eq!(got, want, "{units} units on {workers} workers");
            // The properties the rule stands for: worker 0 holds unit 0; the ranges tile
            // 0..units in worker order; sizes differ by at most one.
            assert_eq!(got[0].0, 0);
            assert!(
                got[0].1 >= 1,
                "{units} units on {workers}: worker 0 has none"
            );
            assert_eq!(got.last().unwrap().1, units);
            assert!(got.windows(2).all(|w| w[0].1 == w[1].0));
            let sizes: Vec<u64> = got.iter().map(|(s, e)| e - s).collect();
            let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(hi - lo <= 1, "{units} on {workers}: {sizes:?}");
        }
    }
}

/// What one started worker did: its ID and the first bus address of each global output
/// write (direct store or `ToGlobal` DMA).
#[derive(Debug, Default)]
struct Started {
    id: usize,
    writes: Vec<u32>,
}

/// A simulated device that records the workers it hands out.
struct Recording<'d> {
    device: &'d mut SimDevice,
    started: Vec<Started>,
}

struct RecordingWorker<'a> {
    inner: SimWorker<'a>,
    log: &'a mut Started,
}

impl Platform for Recording<'_> {
    type Worker<'a>
        = RecordingWorker<'a>
    where
        Self: 'a;

    fn workers(&self) -> usize {
        self.device.workers()
    }

    fn worker(&mut self, id: usize) -> RecordingWorker<'_> {
        self.started.push(Started { id, writes: vec![] });
        RecordingWorker {
            inner: self.device.worker(id),
            log: self.started.last_mut().unwrap(),
        }
    }
}

impl DeviceMemory for RecordingWorker<'_> {
    fn read(&mut self, address: u32, out: &mut [u8]) -> Result<(), Fault> {
        self.inner.read(address, out)
    }
    fn write(&mut self, address: u32, data: &[u8]) -> Result<(), Fault> {
        self.log.writes.push(address);
        self.inner.write(address, data)
    }
}

impl Dma for RecordingWorker<'_> {
    fn local(&mut self) -> &mut [u8] {
        self.inner.local()
    }
    fn start(&mut self, transfer: &Transfer) -> Result<Event, Fault> {
        if transfer.direction == Direction::ToGlobal {
            self.log.writes.push(transfer.global);
        }
        self.inner.start(transfer)
    }
    fn wait(&mut self, event: Event) -> Result<(), Fault> {
        self.inner.wait(event)
    }
}

impl Meter for RecordingWorker<'_> {
    fn compute(&mut self, path: ComputePath, elements: u64) {
        self.inner.compute(path, elements)
    }
}

/// Dispatches the staged call on `workers` workers, recording; checks the order of the
/// started workers and that unit 0's output (the first output byte) came from worker 0.
/// Returns the report and the started workers.
fn record<E: FirmwareEntry>(mut s: Staged<E>, workers: usize) -> (Report, Vec<Started>) {
    let mut device = SimDevice::new(workers);
    std::mem::swap(&mut device.memory, &mut s.device.memory);
    // Decoded here, so that the dispatch's descriptor read (on worker 0) is not recorded.
    let repr = simak_core::ev74::decode::<E>(s.packet.as_ref()).unwrap();
    let mut rec = Recording {
        device: &mut device,
        started: vec![],
    };
    let report = Firmware::<Ieee>::full()
        .run_decoded::<E, _>(&mut rec, &repr)
        .unwrap();
    let started = rec.started;
    let (n, ranges) = oracle(report.units, workers as u64);
    assert_eq!(report.launched as u64, n);
    // Workers 1..N−1 then 0, only those with a nonempty range.
    let order: Vec<usize> = (1..n as usize)
        .chain([0])
        .filter(|&id| ranges[id].0 < ranges[id].1)
        .collect();
    let ids: Vec<usize> = started.iter().map(|w| w.id).collect();
    assert_eq!(ids, order, "{} units on {workers} workers", report.units);
    let first = started
        .iter()
        .find(|w| w.writes.contains(&s.output))
        .expect("the first output byte was written");
    assert_eq!(first.id, 0, "unit 0 ran on worker {}", first.id);
    (report, started)
}

#[test]
fn quant_runs_unit_zero_on_worker_zero_last() {
    for units in 1..=9u64 {
        let n = 4096 * units;
        let plan = quant::check_inference(&quant::Request {
            input: TensorSpec::contiguous([n], DType::F32),
            output: TensorSpec::contiguous([n], DType::I8),
            params: Params::new(0.5),
        })
        .unwrap();
        let device = ev74::quant::check_inference(&plan).unwrap();
        let input: Vec<u8> = (0..4 * n).map(|k| (k % 97) as u8 & 0x3f).collect();
        for workers in 1..=4 {
            let s = stage(&device, &input, n as usize);
            let (report, started) = record(s, workers);
            assert_eq!(report.units, units);
            // One output transfer per DMA block: each worker's count is its range's size.
            let (_, ranges) = oracle(units, workers as u64);
            for w in &started {
                let (a, b) = ranges[w.id];
                assert_eq!(w.writes.len() as u64, b - a, "worker {}", w.id);
            }
        }
    }
}

#[test]
fn casttess_runs_task_zero_on_worker_zero_last() {
    // Few tasks (2 and 3 bands) and many.
    for (shape, tile) in [
        ([1u64, 8, 16], [1u32, 1, 4, 16]),
        ([3, 8, 16], [1, 1, 8, 16]),
        ([20, 30, 3], [1, 4, 8, 3]),
    ] {
        let layout = MlaTiled::new([None, Some(0), Some(1), Some(2)], tile, Channels::Compact);
        let plan = casttess::check_inference(&casttess::Request {
            input: TensorSpec::contiguous(shape, DType::F32),
            output: TiledTensorSpec::new(shape, DType::BF16, layout),
        })
        .unwrap();
        let device = ev74::casttess::check_inference(&plan).unwrap();
        let span = plan.input().span();
        let input: Vec<u8> = (0..span).map(|k| (k % 89) as u8).collect();
        let out_len = plan.output().capacity() as usize;
        for workers in 1..=4 {
            record(stage(&device, &input, out_len), workers);
        }
    }
}
