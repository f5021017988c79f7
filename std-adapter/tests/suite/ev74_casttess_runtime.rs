//! CastTess through the EV74 Runtime (SPEC §9): submissions on the simulated transport
//! from several threads give the A65 bytes; a device without CastTess v1 fails closed;
//! empty plans are not submitted; bind errors and retention are reported.

use crate::support;
use simak::ops::casttess::TiledTensorSpec;

use support::SubmitEncoded;

use std::sync::Arc;
use std::time::Duration;

use simak::a65;
use simak::ev74::casttess;
use simak::ev74::runtime::{Executor, ExecutorOptions, RuntimeError, SimConfig, SimTransport};
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::{Plan, Request, check_inference};
use simak::{DType, Port, TensorSpec};
use simak_ev74_fw::Capabilities;
use simak_tests::bytes::Aligned;
use simak_tests::rng::Rng;

const LONG: Duration = Duration::from_secs(30);

fn plan(h: u64, w: u64, c: u64, dtype: DType, tile: [u32; 4], channels: Channels) -> Plan {
    check_inference(&Request {
        input: TensorSpec::contiguous([h, w, c], dtype),
        output: TiledTensorSpec::new(
            [h, w, c],
            DType::BF16,
            MlaTiled::new([None, Some(0), Some(1), Some(2)], tile, channels),
        ),
    })
    .unwrap()
}

/// Executor options with the CastTess probe on (it is opt-in, SPEC §9).
const PROBED: ExecutorOptions = ExecutorOptions {
    probe_casttess: true,
};

fn a65_bytes(plan: &Plan, input: &[u8]) -> Vec<u8> {
    let capacity = plan.output().capacity() as usize;
    let mut out = Aligned::new(capacity, 0);
    a65::casttess::execute(&a65::casttess::prepare(plan), input, out.as_mut_slice()).unwrap();
    out.as_slice().to_vec()
}

#[test]
fn submissions_from_four_threads_match_a65() {
    let transport = Arc::new(SimTransport::new(SimConfig::new(4)));
    let executor = Executor::connect_with(transport, PROBED).unwrap();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let executor = executor.clone();
            std::thread::spawn(move || {
                let mut rng = Rng::new(0xca57 + t);
                for k in 0..25 {
                    let dtype = [DType::F32, DType::F16, DType::BF16][(k % 3) as usize];
                    let (h, w, c) = (1 + rng.below(20), 1 + rng.below(40), 1 + rng.below(20));
                    let tile = [
                        1,
                        1 + rng.below(h) as u32,
                        1 + rng.below(w) as u32,
                        1 + rng.below(c) as u32,
                    ];
                    let channels = if rng.chance(1, 2) {
                        Channels::Compact
                    } else {
                        Channels::PadTo16
                    };
                    let plan = plan(h, w, c, dtype, tile, channels);
                    let device = casttess::check_inference(&plan).unwrap();
                    let packet = casttess::encode_relocatable(&device);
                    let input_bytes: Vec<u8> = (0..plan.input().span())
                        .map(|_| rng.next_u32() as u8)
                        .collect();
                    let capacity = plan.output().capacity();
                    let input = executor.allocate(input_bytes.len() as u64).unwrap();
                    let output = executor.allocate(capacity + 16).unwrap();
                    input.write(0, &input_bytes).unwrap();
                    output
                        .write(0, &vec![0xa5; capacity as usize + 16])
                        .unwrap();
                    let report = executor
                        .run_encoded(&device, &packet, &input, &output, LONG)
                        .unwrap()
                        .unwrap();
                    assert_eq!(report.units, report.tess.band_tasks);
                    let mut got = vec![0u8; capacity as usize + 16];
                    output.read(0, &mut got).unwrap();
                    assert_eq!(
                        &got[..capacity as usize],
                        &a65_bytes(&plan, &input_bytes)[..]
                    );
                    assert!(got[capacity as usize..].iter().all(|&b| b == 0xa5));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(executor.in_flight(), 0);
}

#[test]
fn a_device_without_casttess_fails_closed() {
    let mut config = SimConfig::new(2);
    config.advertised = Capabilities::QUANT_V1;
    let executor = Executor::connect_with(Arc::new(SimTransport::new(config)), PROBED).unwrap();
    let plan = plan(2, 3, 4, DType::F32, [1, 1, 3, 4], Channels::Compact);
    let device = casttess::check_inference(&plan).unwrap();
    let input = executor.allocate(96).unwrap();
    let output = executor.allocate(64).unwrap();
    let err = executor
        .submit_encoded(
            &device,
            &casttess::encode_relocatable(&device),
            &input,
            &output,
        )
        .unwrap_err();
    assert_eq!(
        err,
        RuntimeError::MissingCapability {
            entry: "simaai_kernels_ev74_casttess_v1",
            version: 1
        }
    );
    assert_eq!(
        err.to_string(),
        "device does not advertise simaai_kernels_ev74_casttess_v1 v1"
    );
    assert!(!input.in_flight() && !output.in_flight());
}

/// A firmware that advertises only CastTess connects and runs CastTess (connect requires
/// no entry); Quant on it fails closed with the missing-capability error, and CastTess
/// without the opt-in probe is refused with an error that says so.
#[test]
fn a_casttess_only_firmware_runs_casttess_and_refuses_quant() {
    let mut config = SimConfig::new(2);
    config.advertised = Capabilities::CASTTESS_V1;
    let transport = Arc::new(SimTransport::new(config));
    let executor = Executor::connect_with(transport.clone(), PROBED).unwrap();
    let plan = plan(2, 3, 4, DType::F32, [1, 1, 3, 4], Channels::Compact);
    let device = casttess::check_inference(&plan).unwrap();
    let data: Vec<u8> = (0..24)
        .flat_map(|k| (k as f32 - 7.5).to_le_bytes())
        .collect();
    let input = executor.allocate(96).unwrap();
    let output = executor.allocate(device.output_span()).unwrap();
    input.write(0, &data).unwrap();
    executor
        .run_encoded(
            &device,
            &casttess::encode_relocatable(&device),
            &input,
            &output,
            LONG,
        )
        .unwrap()
        .unwrap();
    let mut got = vec![0u8; device.output_span() as usize];
    output.read(0, &mut got).unwrap();
    assert_eq!(got, a65_bytes(&plan, &data));

    let q = simak::ops::quant::check_inference(&simak::ops::quant::Request {
        input: TensorSpec::contiguous([4], DType::F32),
        output: TensorSpec::contiguous([4], DType::I8),
        params: simak::ops::quant::Params::new(1.0),
    })
    .unwrap();
    let q = simak::ev74::quant::check_inference(&q).unwrap();
    let qin = executor.allocate(16).unwrap();
    let qout = executor.allocate(4).unwrap();
    let err = executor
        .submit_encoded(&q, &simak::ev74::quant::encode_relocatable(&q), &qin, &qout)
        .unwrap_err();
    assert_eq!(
        err,
        RuntimeError::MissingCapability {
            entry: "simaai_kernels_ev74_quant_v1",
            version: 1
        }
    );
    assert!(!qin.in_flight() && !qout.in_flight());

    let unprobed = Executor::connect(transport).unwrap();
    let err = unprobed
        .submit_encoded(
            &device,
            &casttess::encode_relocatable(&device),
            &input,
            &output,
        )
        .unwrap_err();
    assert_eq!(
        err,
        RuntimeError::NotProbed {
            entry: "simaai_kernels_ev74_casttess_v1"
        }
    );
    assert!(err.to_string().contains("probe_casttess"), "{err}");
}

#[test]
fn empty_plans_are_not_submitted_and_bind_errors_are_reported() {
    let executor =
        Executor::connect_with(Arc::new(SimTransport::new(SimConfig::new(2))), PROBED).unwrap();
    let empty = plan(0, 3, 4, DType::F32, [1, 1, 3, 4], Channels::Compact);
    let device = casttess::check_inference(&empty).unwrap();
    let a = executor.allocate(0).unwrap();
    let b = executor.allocate(0).unwrap();
    let done = executor
        .submit_encoded(&device, &casttess::encode_relocatable(&device), &a, &b)
        .unwrap();
    assert!(done.is_complete());
    assert_eq!(done.wait(LONG), Ok(None));

    // [2, 3, 4] FP32 with tile (1, 3, 4): two tiles of 3·4·2 = 24 → 32 bytes each.
    let plan = plan(2, 3, 4, DType::F32, [1, 1, 3, 4], Channels::Compact);
    let device = casttess::check_inference(&plan).unwrap();
    let packet = casttess::encode_relocatable(&device);
    let input = executor.allocate(96).unwrap();
    let small = executor.allocate(48).unwrap();
    let err = executor
        .submit_encoded(&device, &packet, &input, &small)
        .unwrap_err();
    assert_eq!(
        err,
        RuntimeError::Bind(casttess::BindError::Capacity {
            port: Port::Output,
            required: 64,
            found: 48
        })
    );
    // A mapped buffer cannot be submitted.
    let output = executor.allocate(64).unwrap();
    let mapping = output.map().unwrap();
    let err = executor
        .submit_encoded(&device, &packet, &input, &output)
        .unwrap_err();
    assert_eq!(
        err,
        RuntimeError::Busy {
            address: output.address()
        }
    );
    mapping.unmap().unwrap();
    let report = executor
        .run_encoded(&device, &packet, &input, &output, LONG)
        .unwrap()
        .unwrap();
    assert_eq!(report.units, 2);
}

/// Ports placed at address phases inside retained allocations (`DeviceBuffer::region_at`):
/// the output at its phase holds the A65 bytes, the bytes around both ports are untouched,
/// and a packet whose port is outside, or whose span runs past the end of, the buffer given
/// for it is refused before anything is queued.
#[test]
fn ports_at_offsets_inside_retained_buffers() {
    let executor =
        Executor::connect_with(Arc::new(SimTransport::new(SimConfig::new(4))), PROBED).unwrap();
    let mut rng = Rng::new(0x0ff5e7);
    for (dtype, input_phase, output_phase) in [
        (DType::F32, 4u64, 16u64),
        (DType::BF16, 2, 48),
        (DType::F16, 62, 0),
        (DType::F32, 0, 32),
    ] {
        let plan = plan(9, 70, 3, dtype, [1, 4, 32, 3], Channels::Compact);
        let input_bytes: Vec<u8> = (0..plan.input().span())
            .map(|_| rng.below(256) as u8)
            .collect();
        let want = a65_bytes(&plan, &input_bytes);
        let (span_in, span_out) = (input_bytes.len() as u64, want.len() as u64);
        let device = casttess::check_inference(&plan).unwrap();
        let packet = casttess::encode_relocatable(&device);
        let input = executor.allocate(input_phase + span_in + 7).unwrap();
        input.write(input_phase, &input_bytes).unwrap();
        let output = executor.allocate(output_phase + span_out + 16).unwrap();
        let dirty = vec![0x5au8; (output_phase + span_out + 16) as usize];
        output.write(0, &dirty).unwrap();
        let bound = casttess::bind(
            &device,
            &packet,
            input.region_at(input_phase, span_in).unwrap(),
            output.region_at(output_phase, span_out).unwrap(),
        )
        .unwrap();
        executor
            .run(&bound, &input, &output, LONG)
            .unwrap()
            .unwrap();
        let mut got = vec![0u8; dirty.len()];
        output.read(0, &mut got).unwrap();
        let (before, rest) = got.split_at(output_phase as usize);
        let (port, after) = rest.split_at(span_out as usize);
        assert_eq!(port, &want[..], "{dtype:?} +{input_phase}/+{output_phase}");
        assert!(before.iter().chain(after).all(|&b| b == 0x5a));

        // The same packet with buffers that do not contain its ports.
        let other = executor.allocate(span_out + output_phase).unwrap();
        let err = executor.submit(&bound, &input, &other).unwrap_err();
        assert_eq!(
            err,
            RuntimeError::NotBoundTo {
                port: Port::Output,
                packet: output.address() + output_phase as u32,
                buffer: other.address(),
            }
        );
        assert_eq!(executor.in_flight(), 0);
    }
    // A port that starts inside its buffer but whose span runs past the end (a region made
    // by hand, not by `region_at`).
    let plan = plan(2, 3, 4, DType::F32, [1, 1, 3, 4], Channels::Compact);
    let device = casttess::check_inference(&plan).unwrap();
    let packet = casttess::encode_relocatable(&device);
    let input = executor.allocate(96).unwrap();
    let output = executor.allocate(96).unwrap();
    let short = executor.allocate(80).unwrap();
    let region = simak::ev74::DeviceRegion::new(short.address() + 32, 64);
    let bound = casttess::bind(&device, &packet, input.region(), region).unwrap();
    assert_eq!(
        executor.submit(&bound, &input, &short).unwrap_err(),
        RuntimeError::Bind(casttess::BindError::Capacity {
            port: Port::Output,
            required: 64,
            found: 48
        })
    );
    assert_eq!(
        output.region_at(40, 64).unwrap_err(),
        RuntimeError::Range {
            offset: 40,
            len: 64,
            capacity: 96
        }
    );
    assert_eq!(executor.in_flight(), 0);
}
