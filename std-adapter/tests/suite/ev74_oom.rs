//! The simulator's host allocations are fallible (an impossible size is
//! [`MemoryError::HostAllocation`], not an abort), and the lean paths the CLI uses —
//! `run_sim_to_vec` (the device's output region becomes the result) and
//! `SimOptions::track_writes` off — give the same bytes as `run_sim`.

use simak::ev74::quant::{SimError, SimOptions, run_sim_to_vec, run_sim_with};
use simak::ev74::runtime::TransportError;
use simak::ev74::sim::{MemoryError, SimMemory, try_copy, try_zeroed};
use simak::ops::quant::{Params, Plan, Request, check_inference};
use simak::{DType, TensorSpec};

#[test]
fn impossible_host_allocations_are_errors() {
    let huge = usize::MAX / 2;
    assert_eq!(
        try_zeroed::<u8>(huge).unwrap_err(),
        MemoryError::HostAllocation { bytes: huge as u64 }
    );
    // Two bytes per count: the request is reported in bytes (saturated), not elements.
    assert_eq!(
        try_zeroed::<u16>(huge).unwrap_err(),
        MemoryError::HostAllocation {
            bytes: u64::MAX - 1
        }
    );
    let e = MemoryError::HostAllocation { bytes: 1 << 40 };
    assert_eq!(
        e.to_string(),
        "cannot allocate 1099511627776 bytes of host memory"
    );
    assert_eq!(
        SimError::from(e).to_string(),
        TransportError::from(e).to_string()
    );
    assert_eq!(try_zeroed::<u16>(3).unwrap(), [0, 0, 0]);
    assert_eq!(try_copy(&[1u8, 2, 3]).unwrap(), [1, 2, 3]);
}

#[test]
fn regions_and_counts_move_to_the_host() {
    let mut mem = SimMemory::new();
    let a = mem.allocate(10).unwrap();
    mem.host_write(a, &[7; 10]).unwrap();
    assert_eq!(mem.take_write_counts(a), None);
    mem.track_writes(a, true).unwrap();
    assert_eq!(mem.take_write_counts(a), Some(vec![0; 10]));
    assert_eq!(
        mem.take_write_counts(a),
        None,
        "taking the counts stops tracking"
    );
    assert_eq!(mem.take(a).unwrap(), [7; 10]);
    assert_eq!(mem.regions(), 0);
    assert_eq!(
        mem.take(a).unwrap_err(),
        MemoryError::NotMapped { address: a }
    );
}

fn plan(n: u64) -> Plan {
    check_inference(&Request {
        input: TensorSpec::contiguous([n], DType::F32),
        output: TensorSpec::contiguous([n], DType::I8),
        params: Params::new(0.75).with_zero_point(-5),
    })
    .unwrap()
}

#[test]
fn lean_runs_give_the_same_bytes() {
    for n in [0u64, 1, 17, 4099] {
        let input: Vec<u8> = (0..n)
            .flat_map(|i| ((i % 301) as f32 * 1.37 - 200.0).to_le_bytes())
            .collect();
        for phase in [0u32, 64, 80] {
            let mut options = SimOptions::new(3);
            options.output_phase = phase;
            let mut full = vec![0u8; n as usize];
            let reference = run_sim_with(&plan(n), &input, &mut full, &options).unwrap();
            assert_eq!(reference.output_write_counts.len(), n as usize);
            if n > 0 {
                assert!(reference.output_write_counts.iter().all(|&c| c == 1));
            }

            let (run, output) = run_sim_to_vec(&plan(n), &input, n as usize, &options).unwrap();
            assert_eq!(output, full, "n {n} phase {phase}");
            assert_eq!(run, reference);

            options.track_writes = false;
            let (run, output) = run_sim_to_vec(&plan(n), &input, n as usize, &options).unwrap();
            assert_eq!(output, full);
            assert!(run.output_write_counts.is_empty());
            assert_eq!(run.output_bytes_written, reference.output_bytes_written);
            assert_eq!(run.input_bytes_read, reference.input_bytes_read);

            let mut lean = vec![0u8; n as usize];
            let run = run_sim_with(&plan(n), &input, &mut lean, &options).unwrap();
            assert_eq!(lean, full);
            assert!(run.output_write_counts.is_empty());
        }
    }
}
