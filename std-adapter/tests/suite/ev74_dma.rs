//! DMA accounting and the local-memory budget on the EV74 simulator (SPEC §8).
//!
//! For contiguous requests of ≥ 128 elements the firmware moves data only by DMA: the bytes
//! read from the input region equal the input span (read amplification 1.00) and every
//! output byte is written exactly once. Short rows grouped into 2D blocks read only live
//! bytes (never the gaps). A worker whose local memory is below the two-slot budget fails
//! before moving anything.

use simak::ev74::quant::{SimError, SimOptions, run_sim, run_sim_with};
use simak::ops::quant::{Params, Plan, Request, check_inference};
use simak::{DType, TensorSpec};
use simak_ev74_fw::work::{LOCAL_MEMORY_BYTES, block_elements, slot_bytes};
use simak_ev74_fw::{FwError, SpanKind};

fn contiguous(n: u64, dtype: DType) -> Plan {
    check_inference(&Request {
        input: TensorSpec::contiguous([n], dtype),
        output: TensorSpec::contiguous([n], DType::I8),
        params: Params::new(0.75).with_zero_point(-3),
    })
    .unwrap()
}

fn input_for(plan: &Plan) -> Vec<u8> {
    (0..plan.input().span())
        .map(|k| (k as u8).wrapping_mul(37) & 0x7e)
        .collect()
}

#[test]
fn contiguous_reads_each_input_byte_once_and_writes_each_output_byte_once() {
    let mut lines = Vec::new();
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let block = block_elements(dtype) as u64;
        for n in [
            128,
            1000,
            block - 1,
            block,
            block + 1,
            3 * block + 17,
            100_000,
        ] {
            for workers in 1..=4 {
                let plan = contiguous(n, dtype);
                let input = input_for(&plan);
                let mut output = vec![0x55u8; n as usize];
                let run = run_sim(&plan, &input, &mut output, workers).unwrap();
                let report = run.report.unwrap();
                assert_eq!(report.kind, SpanKind::Dma);
                let span = plan.input().span();
                assert_eq!(run.input_bytes_read, span, "{dtype} n {n} w {workers}");
                assert_eq!(run.output_bytes_written, n);
                assert!(run.output_write_counts.iter().all(|&c| c == 1));
                // Only DMA moved tensor data; the only direct read is the descriptor.
                assert_eq!(run.stats.dma_bytes_in, span);
                assert_eq!(run.stats.dma_bytes_out, n);
                assert_eq!(run.stats.direct_bytes_read, 224);
                assert_eq!(run.stats.direct_bytes_written, 0);
                // One input and one output command per block.
                let blocks = n.div_ceil(block);
                assert_eq!(run.stats.commands, 2 * blocks);
                assert_eq!(report.units, blocks);
                assert_eq!(run.stats.unfinished, 0);
                if workers == 4 && n == 100_000 {
                    lines.push(format!(
                        "{dtype} n {n}: read amplification {:.2}, write amplification {:.2}, {} commands",
                        run.input_bytes_read as f64 / span as f64,
                        run.output_bytes_written as f64 / n as f64,
                        run.stats.commands
                    ));
                }
            }
        }
    }
    for l in lines {
        eprintln!("{l}");
    }
}

#[test]
fn grouped_short_rows_read_only_live_bytes() {
    // 50 rows of 200 BF16 elements, each row padded by 56 elements: 2D transfers.
    let plan = check_inference(&Request {
        input: TensorSpec::strided([50, 200], [512, 2], DType::BF16),
        output: TensorSpec::strided([50, 200], [256, 1], DType::I8),
        params: Params::new(1.0),
    })
    .unwrap();
    let input = input_for(&plan);
    let mut output = vec![0xeeu8; plan.output().span() as usize];
    let run = run_sim(&plan, &input, &mut output, 3).unwrap();
    let report = run.report.unwrap();
    assert_eq!(report.kind, SpanKind::Dma);
    // 8192 / 200 = 40 rows per block: two blocks.
    assert_eq!(report.units, 2);
    assert_eq!(run.input_bytes_read, 50 * 200 * 2);
    assert_eq!(run.output_bytes_written, 50 * 200);
    for (k, &c) in run.output_write_counts.iter().enumerate() {
        assert_eq!(c, u16::from(k % 256 < 200), "byte {k}");
    }
    assert!(
        output
            .iter()
            .enumerate()
            .all(|(k, &b)| k % 256 < 200 || b == 0xee)
    );
    eprintln!(
        "2D rows: input span {} bytes, bytes read {} (live only), commands {}",
        plan.input().span(),
        run.input_bytes_read,
        run.stats.commands
    );
}

#[test]
fn direct_and_scatter_spans_move_each_live_byte_once() {
    // Rows of 100 packed elements with gaps: direct loads and stores.
    let plan = check_inference(&Request {
        input: TensorSpec::strided([7, 100], [404, 4], DType::F32),
        output: TensorSpec::strided([7, 100], [128, 1], DType::I8),
        params: Params::new(1.0),
    })
    .unwrap();
    let input = input_for(&plan);
    let mut output = vec![0u8; plan.output().span() as usize];
    let run = run_sim(&plan, &input, &mut output, 4).unwrap();
    assert_eq!(run.report.unwrap().kind, SpanKind::Direct);
    assert_eq!(run.stats.commands, 0);
    assert_eq!(run.input_bytes_read, 7 * 100 * 4);
    assert_eq!(run.output_bytes_written, 700);
    // Transposed: one transpose panel (a 2D DMA in, a 2D DMA out).
    let plan = check_inference(&Request {
        input: TensorSpec::strided([30, 40], [4, 120], DType::F32),
        output: TensorSpec::contiguous([30, 40], DType::I8),
        params: Params::new(1.0),
    })
    .unwrap();
    let input = input_for(&plan);
    let mut output = vec![0u8; 1200];
    let run = run_sim(&plan, &input, &mut output, 2).unwrap();
    assert_eq!(run.report.unwrap().kind, SpanKind::Transpose);
    assert_eq!(run.stats.commands, 2);
    assert_eq!(run.input_bytes_read, 4800);
    assert!(run.output_write_counts.iter().all(|&c| c == 1));
    // No input-contiguous axis (inner stride two elements): scatter with the carry walker.
    let plan = check_inference(&Request {
        input: TensorSpec::strided([30, 40], [320, 8], DType::F32),
        output: TensorSpec::contiguous([30, 40], DType::I8),
        params: Params::new(1.0),
    })
    .unwrap();
    let input = input_for(&plan);
    let mut output = vec![0u8; 1200];
    let run = run_sim(&plan, &input, &mut output, 2).unwrap();
    assert_eq!(run.report.unwrap().kind, SpanKind::Scatter);
    assert_eq!(run.input_bytes_read, 4800);
    assert!(run.output_write_counts.iter().all(|&c| c == 1));
}

#[test]
fn the_slots_fit_the_local_budget_and_a_smaller_memory_is_refused() {
    assert_eq!(LOCAL_MEMORY_BYTES, 48 * 1024);
    assert_eq!(2 * slot_bytes(DType::F32), 40 * 1024);
    assert_eq!(2 * slot_bytes(DType::BF16), 48 * 1024);
    assert_eq!(2 * slot_bytes(DType::F16), 48 * 1024);
    let plan = contiguous(10_000, DType::BF16);
    let input = input_for(&plan);
    let mut output = vec![0x11u8; 10_000];
    let mut options = SimOptions::new(2);
    options.local_bytes = 48 * 1024 - 1;
    let err = run_sim_with(&plan, &input, &mut output, &options).unwrap_err();
    assert_eq!(
        err,
        SimError::Firmware(FwError::LocalMemory {
            required: 48 * 1024,
            available: 48 * 1024 - 1
        })
    );
    assert!(output.iter().all(|&b| b == 0x11));
    // FP32 needs only 40 KiB.
    options.local_bytes = 40 * 1024;
    let plan = contiguous(10_000, DType::F32);
    let input = input_for(&plan);
    assert!(run_sim_with(&plan, &input, &mut output, &options).is_ok());
}

#[test]
fn one_unit_runs_on_worker_zero_alone() {
    let plan = contiguous(300, DType::F32);
    let input = input_for(&plan);
    let mut output = vec![0u8; 300];
    let run = run_sim(&plan, &input, &mut output, 4).unwrap();
    let report = run.report.unwrap();
    assert_eq!((report.units, report.launched), (1, 1));
    let plan = contiguous(5000, DType::F32);
    let input = input_for(&plan);
    let mut output = vec![0u8; 5000];
    let report = run_sim(&plan, &input, &mut output, 3)
        .unwrap()
        .report
        .unwrap();
    assert_eq!((report.units, report.launched), (2, 3));
}
