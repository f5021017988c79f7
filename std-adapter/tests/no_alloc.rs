//! `execute` allocates nothing (SPEC §6): a counting global allocator observes every
//! allocation made on the calling thread while A65 Quant runs, on every route and traversal
//! shape (contiguous runs, carry walker, on-stack panels, element path).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use simak::a65::Level;
use simak::a65::quant::{execute, prepare, prepare_at};
use simak::ops::quant::{Params, Request, check_inference};
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
