//! The simulated EV74's cost model (`docs/cost-model.md`): workers run concurrently in
//! simulated time, the exact fallback costs what the model says, and the DMA commands and
//! bytes of `SimRun::cost` are those the work partition issues.
//!
//! Every expectation is computed here from the `CostModel` constants and the documented
//! formulas (or from the partition rule of `docs/contract.md` §8), not by the cost code.

use simak::ev74::cost::{CostModel, EntryCost};
use simak::ev74::quant::{SimOptions, SimRun, run_sim, run_sim_with};
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess;
use simak::ops::quant::{Params, Plan, Request, check_inference};
use simak::{DType, TensorSpec};
use simak_ev74_fw::SpanKind;

/// Quant descriptor bytes (the dispatch's direct load).
const DESCRIPTOR: u64 = 224;
/// Elements of a Quant fast-path block.
const BLOCK: u64 = 16;

fn contiguous(n: u64, dtype: DType) -> Plan {
    check_inference(&Request {
        input: TensorSpec::contiguous([n], dtype),
        output: TensorSpec::contiguous([n], DType::I8),
        params: Params::new(0.75).with_zero_point(-3),
    })
    .unwrap()
}

/// FP32 little-endian bytes of `values`.
fn f32_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
    values.into_iter().flat_map(f32::to_le_bytes).collect()
}

/// `n` normal FP32 values (none subnormal, no product near the underflow range).
fn normal(n: u64) -> Vec<f32> {
    (0..n).map(|k| 1.0 + (k % 97) as f32 * 0.25).collect()
}

fn run(plan: &Plan, input: &[u8], options: &SimOptions) -> SimRun {
    let mut output = vec![0u8; plan.output().span() as usize];
    run_sim_with(plan, input, &mut output, options).unwrap()
}

/// `⌈bytes / rate⌉`.
fn per(bytes: u64, rate: u64) -> u64 {
    bytes.div_ceil(rate)
}

/// The dispatch of a Quant call: the dispatch constant plus the descriptor's direct load.
fn dispatch(m: &CostModel) -> u64 {
    m.dispatch_cycles + m.direct_access_cycles + per(DESCRIPTOR, m.load_bytes_per_cycle)
}

#[test]
fn four_workers_take_about_a_quarter_of_one_worker_plus_dispatch() {
    let m = CostModel::DEFAULT;
    let n = 1u64 << 20; // 256 DMA blocks of 4096 FP32 elements
    let plan = contiguous(n, DType::F32);
    let input = f32_bytes(normal(n));
    let one = run(&plan, &input, &SimOptions::new(1)).cost;
    let four = run(&plan, &input, &SimOptions::new(4)).cost;
    assert_eq!(one.workers.len(), 1);
    assert_eq!(four.workers.len(), 4);
    assert_eq!(one.dispatch_cycles, dispatch(&m));
    assert_eq!(four.dispatch_cycles, dispatch(&m));
    // A call is its dispatch plus its slowest worker.
    let slowest = four
        .workers
        .iter()
        .map(|w| w.simulated_cycles)
        .max()
        .unwrap();
    assert_eq!(four.simulated_cycles, four.dispatch_cycles + slowest);
    assert_eq!(
        one.simulated_cycles,
        one.dispatch_cycles + one.workers[0].simulated_cycles
    );
    let work1 = (one.simulated_cycles - one.dispatch_cycles) as f64;
    let work4 = (four.simulated_cycles - four.dispatch_cycles) as f64;
    let ratio = work4 / (work1 / 4.0);
    eprintln!(
        "1 worker {} cycles, 4 workers {} cycles (worker time ratio to a quarter {ratio:.4})",
        one.simulated_cycles, four.simulated_cycles
    );
    assert!((0.99..1.01).contains(&ratio), "ratio {ratio}");
    // The partition is balanced: 64 blocks each, equal work per worker.
    for w in &four.workers {
        assert_eq!(w.simulated_cycles, four.workers[0].simulated_cycles);
        assert_eq!(w.fast_elements, n / 4);
        assert_eq!(w.dma_commands, 2 * 64);
    }
    // The same bytes move however many workers share them.
    for cost in [&one, &four] {
        assert_eq!(cost.bytes_read, DESCRIPTOR + 4 * n);
        assert_eq!(cost.bytes_written, n);
        assert_eq!(cost.dma_commands, 2 * 256);
    }
}

#[test]
fn a_single_block_costs_what_the_model_says() {
    for m in [
        CostModel::DEFAULT,
        CostModel {
            dispatch_cycles: 7,
            dma_command_cycles: 333,
            dma_bytes_per_cycle: 3,
            direct_access_cycles: 11,
            load_bytes_per_cycle: 5,
            store_bytes_per_cycle: 2,
            quant: EntryCost {
                fast_cycles_per_element: 3,
                fallback_cycles_per_element: 1000,
                transpose_cycles_per_element: 5,
            },
            casttess: EntryCost::default(),
            detess: EntryCost::default(),
            preproc: EntryCost::default(),
        },
    ] {
        let options = SimOptions {
            cost: m,
            ..SimOptions::new(4)
        };
        // Direct row of 16 FP32: one load of 64 bytes, one block, one store of 16 bytes.
        let plan = contiguous(16, DType::F32);
        let cost = run(&plan, &f32_bytes(normal(16)), &options).cost;
        let load = m.direct_access_cycles + per(64, m.load_bytes_per_cycle);
        let store = m.direct_access_cycles + per(16, m.store_bytes_per_cycle);
        let compute = 16 * m.quant.fast_cycles_per_element;
        assert_eq!(cost.workers[0].simulated_cycles, load + compute + store);
        assert_eq!(cost.simulated_cycles, dispatch(&m) + load + compute + store);
        // One unit runs on worker 0 alone.
        assert!(cost.workers[1..].iter().all(|w| w.simulated_cycles == 0));
        // One DMA block of 4096 FP32: in, wait, compute, out, wait.
        let plan = contiguous(4096, DType::F32);
        let cost = run(&plan, &f32_bytes(normal(4096)), &options).cost;
        let dma_in = m.dma_command_cycles + per(4 * 4096, m.dma_bytes_per_cycle);
        let dma_out = m.dma_command_cycles + per(4096, m.dma_bytes_per_cycle);
        let compute = 4096 * m.quant.fast_cycles_per_element;
        assert_eq!(
            cost.simulated_cycles,
            dispatch(&m) + dma_in + compute + dma_out
        );
        if m == CostModel::DEFAULT {
            // The worked example of docs/cost-model.md.
            assert_eq!(cost.simulated_cycles, 7654);
        }
    }
}

#[test]
fn one_subnormal_input_costs_the_documented_fallback_amount() {
    let models = [
        CostModel::DEFAULT,
        CostModel {
            quant: EntryCost {
                fast_cycles_per_element: 2,
                fallback_cycles_per_element: 77,
                ..EntryCost::default()
            },
            ..CostModel::DEFAULT
        },
    ];
    let subnormal = f32::from_bits(0x0000_0003);
    assert!(subnormal.is_subnormal());
    for m in models {
        // The documented fallback amount: the block's 16 elements recomputed on the exact
        // path (its products were already computed to decide).
        let fallback = BLOCK * m.quant.fallback_cycles_per_element;
        for (n, kind) in [
            (16u64, SpanKind::Direct),
            (64, SpanKind::Direct),
            (4096, SpanKind::Dma),
        ] {
            for workers in [1, 4] {
                let options = SimOptions {
                    cost: m,
                    ..SimOptions::new(workers)
                };
                let plan = contiguous(n, DType::F32);
                let clean = normal(n);
                let mut one = clean.clone();
                one[5] = subnormal;
                let mut all_block = clean.clone();
                all_block[..16].fill(subnormal);
                let base = run(&plan, &f32_bytes(clean), &options);
                assert_eq!(base.report.unwrap().kind, kind);
                let with_one = run(&plan, &f32_bytes(one), &options);
                let with_block = run(&plan, &f32_bytes(all_block), &options);
                assert_eq!(with_one.report.unwrap().stats.exact, 1);
                assert_eq!(
                    with_one.cost.simulated_cycles,
                    base.cost.simulated_cycles + fallback,
                    "n {n}, {workers} workers"
                );
                // A block of subnormals costs the same one fallback, more than a normal
                // block.
                assert_eq!(
                    with_block.cost.simulated_cycles,
                    with_one.cost.simulated_cycles
                );
                assert!(with_block.cost.simulated_cycles > base.cost.simulated_cycles);
                let w = &with_one.cost.workers[0];
                assert_eq!(w.fast_elements, n);
                assert_eq!(w.fallback_elements, BLOCK);
                assert_eq!(base.cost.workers[0].fallback_elements, 0);
            }
        }
    }
}

#[test]
fn exact_tails_and_scattered_elements_cost_the_fallback_per_element() {
    let m = CostModel::DEFAULT;
    // A direct row of 20: one fast block plus 4 exact tail elements.
    let plan = contiguous(20, DType::F32);
    let cost = run(&plan, &f32_bytes(normal(20)), &SimOptions::new(1)).cost;
    let load = m.direct_access_cycles + per(80, m.load_bytes_per_cycle);
    let store = m.direct_access_cycles + per(20, m.store_bytes_per_cycle);
    let compute = 16 * m.quant.fast_cycles_per_element + 4 * m.quant.fallback_cycles_per_element;
    assert_eq!(cost.simulated_cycles, dispatch(&m) + load + compute + store);
    // 8 elements (a short row): scatter, one load, one exact element and one store each.
    let plan = contiguous(8, DType::F32);
    let cost = run(&plan, &f32_bytes(normal(8)), &SimOptions::new(1)).cost;
    let each = m.direct_access_cycles
        + per(4, m.load_bytes_per_cycle)
        + m.quant.fallback_cycles_per_element
        + m.direct_access_cycles
        + per(1, m.store_bytes_per_cycle);
    assert_eq!(cost.simulated_cycles, dispatch(&m) + 8 * each);
    assert_eq!(cost.workers[0].direct_accesses, 16);
    assert_eq!(cost.dma_commands, 0);
}

/// The units of worker `id` under the partition rule of `docs/contract.md` §8
/// (`⌈units·id/n⌉ .. ⌈units·(id+1)/n⌉`).
fn units_of(units: u64, id: u64, launched: u64) -> u64 {
    (units * (id + 1)).div_ceil(launched) - (units * id).div_ceil(launched)
}

#[test]
fn dma_commands_equal_what_the_work_partition_issues() {
    for dtype in [DType::F32, DType::BF16] {
        let block = if dtype == DType::F32 { 4096 } else { 8192 };
        for n in [128u64, 4095, 4096, 4097, 3 * 8192 + 5, 100_000] {
            let plan = contiguous(n, dtype);
            let input: Vec<u8> = (0..plan.input().span()).map(|k| (k % 61) as u8).collect();
            for workers in 1..=4u64 {
                let r = run(&plan, &input, &SimOptions::new(workers as usize));
                let units = n.div_ceil(block);
                let launched = if units <= 1 { 1 } else { workers };
                // Each unit: one input and one output transfer.
                for id in 0..workers {
                    let expected = if id < launched {
                        2 * units_of(units, id, launched)
                    } else {
                        0
                    };
                    assert_eq!(
                        r.cost.workers[id as usize].dma_commands, expected,
                        "{dtype} n {n} worker {id}/{workers}"
                    );
                }
                assert_eq!(r.cost.dma_commands, 2 * units);
                assert_eq!(r.cost.dma_commands, r.stats.commands);
                assert_eq!(r.cost.dma_commands, r.report.unwrap().transfers);
                assert_eq!(r.cost.bytes_read, r.stats.bytes_read());
                assert_eq!(r.cost.bytes_written, r.stats.bytes_written());
            }
        }
    }
}

#[test]
fn casttess_dma_commands_and_bytes_match_the_recorded_transfers() {
    // A 3-channel image tiled 4 x 8 pixels (bands), and a 4100-channel row whose stored
    // channels take the physical-block fallback.
    let cases = [
        (
            vec![20u64, 30, 3],
            MlaTiled::new(
                [None, Some(0), Some(1), Some(2)],
                [1, 4, 8, 3],
                Channels::Compact,
            ),
        ),
        (
            vec![2u64, 4100],
            MlaTiled::new(
                [None, None, Some(0), Some(1)],
                [1, 1, 2, 4100],
                Channels::Compact,
            ),
        ),
    ];
    for (shape, layout) in cases {
        let plan = casttess::check_inference_dyn(&casttess::DynRequest {
            input: simak::DynSpec::contiguous(&shape, DType::F32),
            output: casttess::TiledSpec {
                extents: &shape,
                dtype: DType::BF16,
                layout,
            },
        })
        .unwrap();
        let elements: u64 = shape.iter().product();
        let input = f32_bytes(normal(elements));
        for workers in 1..=4 {
            let mut out = vec![0u8; plan.output().capacity() as usize];
            let r = simak::ev74::casttess::run_sim(&plan, &input, &mut out, workers).unwrap();
            let report = r.report.unwrap();
            let t = report.tess;
            // The 4100-channel row cannot form bands or panels.
            assert_eq!(t.block_tasks > 0, shape[1] == 4100, "{shape:?}");
            assert_eq!(r.cost.dma_commands, t.source_dma + t.output_dma);
            assert_eq!(r.cost.dma_commands, r.stats.commands);
            let per_worker: u64 = r.cost.workers.iter().map(|w| w.dma_commands).sum();
            assert_eq!(per_worker, r.cost.dma_commands);
            assert_eq!(r.cost.bytes_read, r.stats.bytes_read());
            assert_eq!(r.cost.bytes_written, r.stats.bytes_written());
            assert_eq!(r.cost.bytes_written, plan.output().capacity());
            let fast: u64 = r.cost.workers.iter().map(|w| w.fast_elements).sum();
            let fallback: u64 = r.cost.workers.iter().map(|w| w.fallback_elements).sum();
            if t.block_tasks == 0 {
                // Every element converted once by a band or panel.
                assert_eq!((fast, fallback), (elements, 0), "{shape:?}");
            } else {
                // Physical blocks convert an element once per byte plane.
                assert_eq!(t.band_tasks + t.panel_tasks, 0, "{shape:?}");
                assert_eq!((fast, fallback), (0, 2 * elements), "{shape:?}");
            }
        }
    }
}

#[test]
fn an_empty_plan_costs_nothing_and_the_default_is_documented() {
    let plan = contiguous(0, DType::F32);
    let mut output = [];
    let r = run_sim(&plan, &[], &mut output, 2).unwrap();
    assert_eq!(r.cost, simak::ev74::Cost::default());
    assert_eq!(CostModel::default(), CostModel::DEFAULT);
    // The documented table (docs/cost-model.md) names these values.
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/cost-model.md"
    ))
    .unwrap();
    let m = CostModel::DEFAULT;
    for (name, value) in [
        ("dispatch_cycles", m.dispatch_cycles),
        ("dma_command_cycles", m.dma_command_cycles),
        ("dma_bytes_per_cycle", m.dma_bytes_per_cycle),
        ("direct_access_cycles", m.direct_access_cycles),
        ("load_bytes_per_cycle", m.load_bytes_per_cycle),
        ("store_bytes_per_cycle", m.store_bytes_per_cycle),
        (
            "quant.fast_cycles_per_element",
            m.quant.fast_cycles_per_element,
        ),
        (
            "quant.fallback_cycles_per_element",
            m.quant.fallback_cycles_per_element,
        ),
        (
            "casttess.fast_cycles_per_element",
            m.casttess.fast_cycles_per_element,
        ),
        (
            "casttess.fallback_cycles_per_element",
            m.casttess.fallback_cycles_per_element,
        ),
    ] {
        let row = format!("| `{name}` | {value} |");
        assert!(doc.contains(&row), "docs/cost-model.md lacks the row {row}");
    }
}
