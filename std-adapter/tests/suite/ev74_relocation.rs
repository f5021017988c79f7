//! DMA-BUF relocations through the Runtime (SPEC §6, §9; issue 23 scope 4), for every
//! entry, on the simulated transport:
//!
//! - a relocation table gives the bound packet `bind` gives for the same regions, byte for
//!   byte (the descriptor the transport saw, read back from device memory, and its address
//!   slots at bytes 24 and 32 as literals), and the same output bytes, at address phases and
//!   with both ports in one buffer;
//! - a buffer too small, a misaligned offset, an offset past the buffer, an unknown slot, a
//!   port named twice, a missing port, aliasing ports and a packet of another plan each fail
//!   closed with their code: the transport saw no submission and no allocation, the buffers
//!   are not retained and the output keeps its fill.

use crate::support::forward;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use simak::ev74::runtime::{
    BufferRelocation, DeviceBuffer, Executor, ExecutorOptions, Retire, RuntimeError, SimConfig,
    SimTransport, Transport, TransportError,
};
use simak::ev74::{self, CastTess, DevicePlan, NativeEntry, Quant};
use simak::layout::{Channels, MlaTiled};
use simak::ops::{casttess, quant};
use simak::{DType, Port, TensorSpec};
use simak_ev74_fw::Command;
use simak_tests::rng::Rng;

const LONG: Duration = Duration::from_secs(30);
/// The output fill; a refused submission leaves it.
const FILL: u8 = 0xa5;

/// A simulated transport that counts allocations and submissions and records the
/// descriptor bytes of each submitted command.
struct Recorder {
    inner: SimTransport,
    allocations: AtomicUsize,
    packets: Mutex<Vec<Vec<u8>>>,
}

impl Transport for Recorder {
    forward!(inner: capabilities, free, read, write, abort, wait_idle);
    fn allocate(&self, len: u64) -> Result<u32, TransportError> {
        self.allocations.fetch_add(1, Ordering::SeqCst);
        self.inner.allocate(len)
    }
    fn submit(&self, command: Command, retire: Retire) -> Result<(), TransportError> {
        let mut bytes = vec![0u8; command.length as usize];
        self.inner.read(command.descriptor, &mut bytes)?;
        self.packets.lock().unwrap().push(bytes);
        self.inner.submit(command, retire)
    }
}

impl Recorder {
    /// (allocations, submissions) so far.
    fn counts(&self) -> (usize, usize) {
        (
            self.allocations.load(Ordering::SeqCst),
            self.packets.lock().unwrap().len(),
        )
    }

    fn last_packet(&self) -> Vec<u8> {
        self.packets.lock().unwrap().last().unwrap().clone()
    }
}

fn connect() -> (Arc<Recorder>, Executor) {
    let recorder = Arc::new(Recorder {
        inner: SimTransport::new(SimConfig::new(2)),
        allocations: AtomicUsize::new(0),
        packets: Mutex::new(Vec::new()),
    });
    let executor = Executor::connect_with(
        recorder.clone(),
        ExecutorOptions {
            probe_casttess: true,
        },
    )
    .unwrap();
    (recorder, executor)
}

/// One entry's test case: a plan, another plan of the entry, input bytes, the input element
/// size and the output alignment (written out: 1 for Quant's INT8, 16 for CastTess's tiled
/// output).
struct Case<E: NativeEntry> {
    plan: DevicePlan<E>,
    other: DevicePlan<E>,
    input: Vec<u8>,
    elem: u64,
    out_align: u64,
}

fn quant_case() -> Case<Quant> {
    let plan = |n: u64| {
        let p = quant::check_inference(&quant::Request {
            input: TensorSpec::contiguous([n], DType::F32),
            output: TensorSpec::contiguous([n], DType::I8),
            params: quant::Params::new(0.5).with_zero_point(3),
        })
        .unwrap();
        ev74::check_inference(&p).unwrap()
    };
    let mut rng = Rng::new(0x4e10_ca7e);
    let input = (0..100)
        .flat_map(|_| (rng.range_i64(-300, 300) as f32 * 0.75).to_le_bytes())
        .collect();
    Case {
        plan: plan(100),
        other: plan(99),
        input,
        elem: 4,
        out_align: 1,
    }
}

fn casttess_case() -> Case<CastTess> {
    let plan = |w: u64| {
        let p = casttess::check_inference(&casttess::Request {
            input: TensorSpec::contiguous([5, w, 3], DType::F16),
            output: casttess::TiledTensorSpec::new(
                [5, w, 3],
                DType::BF16,
                MlaTiled::new(
                    [None, Some(0), Some(1), Some(2)],
                    [1, 2, 4, 3],
                    Channels::Compact,
                ),
            ),
        })
        .unwrap();
        ev74::check_inference(&p).unwrap()
    };
    let mut rng = Rng::new(0x7e55);
    let input = (0..5 * 7 * 3)
        .flat_map(|_| half::f16::from_f32(rng.range_i64(-500, 500) as f32 / 7.0).to_le_bytes())
        .collect();
    Case {
        plan: plan(7),
        other: plan(6),
        input,
        elem: 2,
        out_align: 16,
    }
}

/// Input and output buffers: the input bytes at `in_off`, the output filled with [`FILL`]
/// and `out_off + span + 16` bytes long.
fn buffers<E: NativeEntry>(
    executor: &Executor,
    case: &Case<E>,
    in_off: u64,
    out_off: u64,
) -> (DeviceBuffer, DeviceBuffer) {
    let input = executor.allocate(in_off + case.input.len() as u64).unwrap();
    input.write(in_off, &case.input).unwrap();
    let out_len = out_off + case.plan.output_span() + 16;
    let output = executor.allocate(out_len).unwrap();
    output.write(0, &vec![FILL; out_len as usize]).unwrap();
    (input, output)
}

fn contents(buffer: &DeviceBuffer) -> Vec<u8> {
    let mut out = vec![0u8; buffer.len() as usize];
    buffer.read(0, &mut out).unwrap();
    out
}

fn slot(packet: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(packet[at..at + 8].try_into().unwrap())
}

/// The bind path and the relocation path over the same buffers (ports at `in_off` and
/// `out_off`) give the same descriptor and the same output bytes.
fn relocation_equals_bind<E: NativeEntry>(case: &Case<E>, in_off: u64, out_off: u64) {
    let (recorder, executor) = connect();
    let encoded = ev74::encode_relocatable(&case.plan);
    let (input, output) = buffers(&executor, case, in_off, out_off);
    let left = |b: &DeviceBuffer, off: u64| b.region_at(off, b.len() - off).unwrap();
    let bound = ev74::bind(
        &case.plan,
        &encoded,
        left(&input, in_off),
        left(&output, out_off),
    )
    .unwrap();
    executor.run(&bound, &input, &output, LONG).unwrap();
    let by_bind = (recorder.last_packet(), contents(&output));
    output.write(0, &vec![FILL; output.len() as usize]).unwrap();
    let table = [
        BufferRelocation::new(Port::Output, &output).at_offset(out_off),
        BufferRelocation::at_slot(24, &input).at_offset(in_off),
    ];
    executor
        .run_relocated(&case.plan, &encoded, &table, LONG)
        .unwrap()
        .expect("a report");
    let by_relocation = (recorder.last_packet(), contents(&output));
    assert_eq!(recorder.counts().1, 2);
    assert_eq!(by_relocation.0, bound.as_bytes().as_ref());
    assert_eq!(by_relocation, by_bind);
    let packet = &by_relocation.0;
    assert_eq!(slot(packet, 24), u64::from(input.address()) + in_off);
    assert_eq!(slot(packet, 32), u64::from(output.address()) + out_off);
    // The device wrote the port and nothing before it.
    let out = &by_relocation.1;
    assert!(out[..out_off as usize].iter().all(|&b| b == FILL));
    assert!(out[out_off as usize..].iter().any(|&b| b != FILL));
    assert_eq!(executor.in_flight(), 0);
}

/// Both ports in one buffer, at disjoint offsets: relocation and bind agree.
fn one_buffer_both_ports<E: NativeEntry>(case: &Case<E>) {
    let (recorder, executor) = connect();
    let encoded = ev74::encode_relocatable(&case.plan);
    let in_len = case.input.len() as u64;
    let out_off = in_len.div_ceil(64) * 64;
    let len = out_off + case.plan.output_span();
    let shared = executor.allocate(len).unwrap();
    shared.write(0, &vec![FILL; len as usize]).unwrap();
    shared.write(0, &case.input).unwrap();
    let bound = ev74::bind(
        &case.plan,
        &encoded,
        shared.region_at(0, in_len).unwrap(),
        shared.region_at(out_off, len - out_off).unwrap(),
    )
    .unwrap();
    executor.run(&bound, &shared, &shared, LONG).unwrap();
    let by_bind = (recorder.last_packet(), contents(&shared));
    shared
        .write(out_off, &vec![FILL; (len - out_off) as usize])
        .unwrap();
    let table = [
        BufferRelocation::new(Port::Input, &shared),
        BufferRelocation::new(Port::Output, &shared).at_offset(out_off),
    ];
    executor
        .run_relocated(&case.plan, &encoded, &table, LONG)
        .unwrap();
    assert_eq!((recorder.last_packet(), contents(&shared)), by_bind);
}

/// Submits `table` and expects `code`: nothing allocated, nothing submitted, no buffer
/// retained, `output` still [`FILL`].
fn refused<E: NativeEntry>(
    recorder: &Recorder,
    executor: &Executor,
    plan: &DevicePlan<E>,
    table: &[BufferRelocation],
    output: &DeviceBuffer,
    code: u32,
) -> RuntimeError {
    let before = recorder.counts();
    let encoded = ev74::encode_relocatable(plan);
    let err = executor
        .submit_relocated(plan, &encoded, table)
        .expect_err("refused");
    assert_eq!(err.code(), code, "{err}");
    assert_eq!(
        recorder.counts(),
        before,
        "{err}: the transport saw nothing"
    );
    assert_eq!(executor.in_flight(), 0);
    for r in table {
        assert!(!r.buffer().in_flight(), "{err}: a buffer is retained");
    }
    assert!(contents(output).iter().all(|&b| b == FILL), "{err}");
    err
}

fn every_refusal<E: NativeEntry>(case: &Case<E>) {
    let (recorder, executor) = connect();
    let (input, output) = buffers(&executor, case, 0, 0);
    let plan = &case.plan;
    let (in_span, out_span) = (plan.input_span(), plan.output_span());
    let i = |b: &DeviceBuffer| BufferRelocation::new(Port::Input, b);
    let o = |b: &DeviceBuffer| BufferRelocation::new(Port::Output, b);
    let r = |table: &[BufferRelocation], code| {
        refused(&recorder, &executor, plan, table, &output, code)
    };

    // Too small, by one byte.
    let short_in = executor.allocate(in_span - 1).unwrap();
    let short_out = executor.allocate(out_span - 1).unwrap();
    let e = r(&[i(&short_in), o(&output)], 0x311);
    assert!(matches!(
        e,
        RuntimeError::Bind(ev74::BindError::Capacity { required, found, .. })
            if (required, found) == (in_span, in_span - 1)
    ));
    r(&[i(&input), o(&short_out)], 0x312);
    // An offset that leaves too little.
    r(&[i(&input), o(&output).at_offset(32)], 0x312);
    // Misaligned by half an element (input, in a buffer with room for the span past the
    // offset), by half the output granule.
    let roomy = executor.allocate(in_span + case.elem).unwrap();
    r(&[i(&roomy).at_offset(case.elem / 2), o(&output)], 36);
    if case.out_align > 1 {
        r(&[i(&input), o(&output).at_offset(case.out_align / 2)], 50);
    }
    // Past the buffer's end.
    r(&[i(&input), o(&output).at_offset(output.len() + 1)], 0x505);
    // Unknown slots: inside an address slot, another field, past the descriptor.
    for bad in [28, 40, 0, E::DESCRIPTOR_SIZE] {
        let e = r(&[i(&input), BufferRelocation::at_slot(bad, &output)], 0x313);
        assert_eq!(
            e,
            RuntimeError::Bind(ev74::BindError::UnknownSlot { slot: bad })
        );
    }
    // A port named twice.
    r(&[i(&input), o(&output), i(&input)], 0x314);
    r(&[o(&output), i(&input), o(&output)], 0x315);
    // A missing port is an unbound one.
    r(&[o(&output)], 38);
    r(&[i(&input)], 39);
    r(&[], 38);
    // Aliasing: both ports at the start of one buffer large enough for either.
    let both = executor.allocate(in_span.max(out_span)).unwrap();
    r(&[i(&both), o(&both)], 37);
    // Overlap by one granule inside one buffer.
    let tail = (in_span - 1) / case.out_align * case.out_align;
    let big = executor.allocate(tail + out_span).unwrap();
    r(&[i(&big), o(&big).at_offset(tail)], 37);
    // The packet is not the plan's.
    let before = recorder.counts();
    let other = ev74::encode_relocatable(&case.other);
    let e = executor
        .submit_relocated(plan, &other, &[i(&input), o(&output)])
        .unwrap_err();
    assert_eq!(e.code(), 0x310);
    assert_eq!(recorder.counts(), before);
    // After all that, the same buffers still run.
    executor
        .run_relocated(
            plan,
            &ev74::encode_relocatable(plan),
            &[i(&input), o(&output)],
            LONG,
        )
        .unwrap();
    assert_eq!(recorder.counts().1, before.1 + 1);
}

#[test]
fn quant_relocation_equals_bind() {
    let case = quant_case();
    for (in_off, out_off) in [(0, 0), (4, 1), (32, 63), (60, 16)] {
        relocation_equals_bind(&case, in_off, out_off);
    }
    one_buffer_both_ports(&case);
}

#[test]
fn casttess_relocation_equals_bind() {
    let case = casttess_case();
    for (in_off, out_off) in [(0, 0), (2, 16), (32, 48), (62, 32)] {
        relocation_equals_bind(&case, in_off, out_off);
    }
    one_buffer_both_ports(&case);
}

#[test]
fn quant_relocations_fail_closed() {
    every_refusal(&quant_case());
}

#[test]
fn casttess_relocations_fail_closed() {
    every_refusal(&casttess_case());
}

#[test]
fn capability_is_checked_first_and_empty_plans_are_not_submitted() {
    let (recorder, executor) = connect();
    let empty = quant::check_inference(&quant::Request {
        input: TensorSpec::contiguous([0], DType::F32),
        output: TensorSpec::contiguous([0], DType::I8),
        params: quant::Params::new(1.0),
    })
    .unwrap();
    let empty = ev74::check_inference(&empty).unwrap();
    let encoded = ev74::encode_relocatable(&empty);
    let before = recorder.counts();
    assert_eq!(
        executor.run_relocated(&empty, &encoded, &[], LONG).unwrap(),
        None
    );
    // The slot rules still apply to an empty plan's table.
    let b = executor.allocate(16).unwrap();
    let e = executor
        .submit_relocated(&empty, &encoded, &[BufferRelocation::at_slot(40, &b)])
        .unwrap_err();
    assert_eq!(e.code(), 0x313);
    assert_eq!(recorder.counts(), (before.0 + 1, before.1));
    // CastTess is not probed by default: refused before the table is read.
    let plain = Executor::connect(recorder.clone()).unwrap();
    let case = casttess_case();
    let e = plain
        .submit_relocated(
            &case.plan,
            &ev74::encode_relocatable(&case.plan),
            &[BufferRelocation::at_slot(40, &b)],
        )
        .unwrap_err();
    assert_eq!(e.code(), 0x502);
    assert_eq!(recorder.counts(), (before.0 + 1, before.1));
}
