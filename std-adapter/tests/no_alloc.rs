//! `execute` allocates nothing (SPEC §6): a counting global allocator observes every
//! allocation made on the calling thread while A65 Quant runs, on every route and traversal
//! shape (contiguous runs, carry walker, on-stack panels, element path), and while A65
//! CastTess and QuantTess run, on every level and on packed, padded, planar and
//! H-contiguous inputs, fused and general paths; and while Preproc runs, for every format
//! and output, at every level.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use simak::a65::quant::{execute, prepare, prepare_at};
use simak::a65::{self, Level};
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::{self, TiledTensorSpec};
use simak::ops::quant::{Params, Request, check_inference};
use simak::ops::quanttess;
use simak::{DType, TensorSpec};

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting allocations of the current thread while enabled.
struct Counting;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; counting
// only touches thread-local cells (no allocation).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's layout, which meets `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` (all allocations go through it) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: forwarded unchanged; `ptr` came from `System` with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn count() {
    // `try_with`: thread-locals may be gone while a thread exits.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        }
    });
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made on this thread by `f`.
fn allocations_during(f: impl FnOnce()) -> u64 {
    ALLOCATIONS.with(|n| n.set(0));
    COUNTING.with(|on| on.set(true));
    f();
    COUNTING.with(|on| on.set(false));
    ALLOCATIONS.with(|n| n.get())
}

#[test]
fn the_counter_sees_allocations() {
    assert!(allocations_during(|| drop(std::hint::black_box(vec![1u8; 64]))) >= 1);
}

#[test]
fn execute_allocates_nothing_on_any_route_or_traversal() {
    let cases: Vec<(&str, Request<2>)> = vec![
        (
            "contiguous",
            Request {
                input: TensorSpec::contiguous([64, 1000], DType::F32),
                output: TensorSpec::contiguous([64, 1000], DType::I8),
                params: Params::new(0.5).with_zero_point(3),
            },
        ),
        (
            "row-padded runs",
            Request {
                input: TensorSpec::strided([64, 1000], [2 * 1024, 2], DType::BF16),
                output: TensorSpec::contiguous([64, 1000], DType::I8),
                params: Params::new(0.5),
            },
        ),
        (
            "transposed panels",
            Request {
                input: TensorSpec::contiguous([64, 1000], DType::F16),
                output: TensorSpec::strided([64, 1000], [1, 64], DType::I8),
                params: Params::new(2.0),
            },
        ),
        (
            "small elements",
            Request {
                input: TensorSpec::strided([3, 5], [40, 8], DType::F32),
                output: TensorSpec::contiguous([3, 5], DType::I8),
                params: Params::new(2.0),
            },
        ),
    ];
    for (name, request) in cases {
        let plan = check_inference(&request).unwrap();
        let input = vec![0x3cu8; plan.input().span() as usize];
        let mut output = vec![0u8; plan.output().span() as usize];
        let mut prepared = vec![prepare(&plan)];
        prepared.extend(
            Level::ALL
                .iter()
                .rev()
                .filter_map(|&r| prepare_at(&plan, r).ok()),
        );
        for p in &prepared {
            let n = allocations_during(|| execute(p, &input, &mut output).unwrap());
            assert_eq!(n, 0, "{name} on {} allocated {n} times", p.implementation());
        }
    }
}

/// Tiled cases `(name, input, layout)`: packed HWC rows, padded rows and pixels, planar
/// CHW, H-contiguous, a 16-channel BF16 image (the pixel packers) and a small element-wise
/// case.
fn tiled_cases() -> Vec<(&'static str, TensorSpec<3>, MlaTiled)> {
    let (h, w, c) = (24u64, 70u64, 3u64);
    let hwc = [None, Some(0), Some(1), Some(2)];
    vec![
        (
            "packed rows",
            TensorSpec::contiguous([h, w, c], DType::F32),
            MlaTiled::new(hwc, [1, 8, 32, 3], Channels::Compact),
        ),
        (
            "padded rows",
            TensorSpec::strided([h, w, c], [2 * (w * 4 + 8), 2 * 4, 2], DType::F16),
            MlaTiled::new(hwc, [1, 4, 16, 3], Channels::PadTo16),
        ),
        (
            "planar",
            TensorSpec::strided([h, w, c], [w * 2, 2, h * w * 2], DType::BF16),
            MlaTiled::new(hwc, [1, 16, 64, 3], Channels::Compact),
        ),
        (
            "h-contiguous",
            TensorSpec::strided([h, w, c], [4, h * 4, h * w * 4], DType::F32),
            MlaTiled::new(hwc, [1, 24, 16, 3], Channels::Compact),
        ),
        (
            "bf16 pixels",
            TensorSpec::contiguous([8, 40, 16], DType::BF16),
            MlaTiled::new(hwc, [1, 4, 8, 16], Channels::PadTo16),
        ),
        (
            "small",
            TensorSpec::strided([2, 3, 5], [64, 16, 2], DType::F16),
            MlaTiled::new(hwc, [1, 1, 2, 5], Channels::Compact),
        ),
    ]
}

#[test]
fn casttess_execute_allocates_nothing_on_any_level_or_path() {
    let mut runs = 0;
    for (name, input, layout) in tiled_cases() {
        let plan = casttess::check_inference(&casttess::Request {
            input,
            output: TiledTensorSpec::new(*input.extents(), DType::BF16, layout),
        })
        .unwrap();
        let src = vec![0x3cu8; plan.input().span() as usize];
        let mut out = vec![0u8; plan.output().capacity() as usize];
        let mut prepared = vec![a65::casttess::prepare(&plan)];
        for level in Level::ALL.into_iter().rev() {
            if let Ok(p) = a65::casttess::prepare_at(&plan, level) {
                let general = p.has_fused_path().then(|| p.general_path());
                prepared.push(p);
                prepared.extend(general);
            }
        }
        for p in &prepared {
            let n = allocations_during(|| a65::casttess::execute(p, &src, &mut out).unwrap());
            assert_eq!(n, 0, "{name} on {} allocated {n} times", p.implementation());
            runs += 1;
        }
    }
    assert!(runs >= 2 * tiled_cases().len());
}

#[test]
fn quanttess_execute_allocates_nothing_on_any_level_or_path() {
    let mut runs = 0;
    for (name, input, layout) in tiled_cases() {
        let plan = quanttess::check_inference(&quanttess::Request {
            input,
            output: TiledTensorSpec::new(*input.extents(), DType::I8, layout),
            params: Params::new(0.5).with_zero_point(-3),
        })
        .unwrap();
        let src = vec![0x3cu8; plan.input().span() as usize];
        let mut out = vec![0u8; plan.output().capacity() as usize];
        let mut prepared = vec![
            a65::quanttess::prepare(&plan),
            a65::quanttess::prepare_exact(&plan),
        ];
        prepared.extend(
            Level::ALL
                .into_iter()
                .rev()
                .filter_map(|l| a65::quanttess::prepare_at(&plan, l).ok()),
        );
        for p in &prepared {
            let n = allocations_during(|| a65::quanttess::execute(p, &src, &mut out).unwrap());
            assert_eq!(n, 0, "{name} on {} allocated {n} times", p.implementation());
            runs += 1;
        }
    }
    assert!(runs >= 2 * tiled_cases().len());
}

#[test]
fn detess_ops_allocate_nothing_during_execute() {
    use simak::a65;
    use simak::layout::{Channels, MlaTiled, TileAlign};
    use simak::ops::dequant::{self as dq, Params as DqParams};
    use simak::ops::{detess, detesscast, detessdequant};

    let ofm = vec![3u8; 1 << 16];
    // 16-byte aligned view of the OFM.
    let at = (16 - ofm.as_ptr() as usize % 16) % 16;
    let ofm = &ofm[at..at + 40_000];
    let mut out = vec![0u8; 1 << 18];
    for (ch, align) in [
        (Channels::Compact, TileAlign::Bytes1),
        (Channels::PadTo16, TileAlign::Bytes16),
        (Channels::CBlock16, TileAlign::Bytes16),
    ] {
        let layout = MlaTiled::new([None, Some(0), Some(1), Some(2)], [1, 5, 7, 32], ch)
            .with_tile_align(align);
        // NCHW output of NHWC logical data: strides (4 · 9, 4, 4 · 9 · 13) bytes for f32.
        for level in Level::detected() {
            let plan = detess::check_inference(&detess::Request {
                dtype: DType::I8,
                layout,
                output: TensorSpec::strided([9, 13, 40], [13, 1, 9 * 13], DType::I8),
            })
            .expect("admits");
            let Ok(p) = a65::detess::prepare_at(&plan, level) else {
                continue;
            };
            assert_eq!(
                allocations_during(|| a65::detess::execute(&p, ofm, &mut out).expect("runs")),
                0
            );
            let plan = detesscast::check_inference(&detess::Request {
                dtype: DType::BF16,
                layout,
                output: TensorSpec::contiguous([9, 13, 40], DType::F32),
            })
            .expect("admits");
            let p = a65::detesscast::prepare_at(&plan, level).expect("same levels");
            assert_eq!(
                allocations_during(|| a65::detesscast::execute(&p, ofm, &mut out).expect("runs")),
                0
            );
            for dtype in [DType::I8, DType::I16, DType::I32] {
                for o in [DType::F32, DType::F16, DType::BF16] {
                    let plan = detessdequant::check_inference(&detessdequant::Request {
                        dtype,
                        layout,
                        output: TensorSpec::strided(
                            [9, 13, 40],
                            [
                                13 * o.size() as u64,
                                o.size() as u64,
                                9 * 13 * o.size() as u64,
                            ],
                            o,
                        ),
                        params: DqParams::new(0.3).with_zero_point(-5),
                    })
                    .expect("admits");
                    let p = a65::detessdequant::prepare_at(&plan, level).expect("same levels");
                    assert_eq!(
                        allocations_during(
                            || a65::detessdequant::execute(&p, ofm, &mut out).expect("runs")
                        ),
                        0
                    );
                    let plan = dq::check_inference(&dq::Request {
                        input: TensorSpec::contiguous([9, 13, 40], dtype),
                        output: TensorSpec::contiguous([9, 13, 40], o),
                        params: DqParams::new(0.3).with_zero_point(-5),
                    })
                    .expect("admits");
                    let p = a65::dequant::prepare_at(&plan, level).expect("same levels");
                    assert_eq!(
                        allocations_during(
                            || a65::dequant::execute(&p, ofm, &mut out).expect("runs")
                        ),
                        0
                    );
                }
            }
        }
    }
}

#[test]
fn preproc_allocates_nothing_during_execute() {
    use simak::ops::preproc::{self, Border, Format, Frame, Normalize, Output, Request};

    let mut runs = 0;
    for format in Format::ALL {
        let c = format.channels() as u32;
        let tiled = Output::default_layout(false, [1, 3, 5, c], Channels::PadTo16);
        for output in [
            Output::F32 { strides: None },
            Output::I8 {
                strides: None,
                params: Params::new(40.0),
            },
            Output::QuantTess {
                layout: tiled,
                params: Params::new(40.0),
            },
            Output::CastTess { layout: tiled },
        ] {
            let plan = preproc::check_inference(&Request {
                frame: Frame::packed(format, 6, 10),
                normalize: Normalize::DEFAULT,
                bgr: true,
                border: Border {
                    top: 1,
                    bottom: 1,
                    left: 2,
                    right: 0,
                },
                pad_value: &[114],
                output,
            })
            .expect("admits");
            let frame = vec![0x3cu8; plan.input_span() as usize];
            let mut out = vec![0u8; plan.output_span() as usize + 16];
            let at = (16 - out.as_ptr() as usize % 16) % 16;
            let span = plan.output_span() as usize;
            for level in Level::detected() {
                let p = a65::preproc::prepare_at(&plan, level).expect("every level");
                let n = allocations_during(|| {
                    a65::preproc::execute(&p, &frame, &mut out[at..at + span]).unwrap()
                });
                assert_eq!(n, 0, "{format} at {level} allocated {n} times");
                runs += 1;
            }
        }
    }
    assert!(runs >= 28);
}
