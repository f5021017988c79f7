//! Benchmark of the CastTess partition API (`Prepared::split`, issue 14 scope 4)
//! on the camera frame: HWC 1080 × 1920 × 3 FP32 → tile (1, 16, 64, 3) Compact, at the
//! AVX2 level (forced) and the fastest level, on 1 thread (`execute`) and 2 threads (the
//! two pieces of `split(2)`), beside a `memcpy` of the same output bytes (12.4 MB) on 1
//! and 2 threads (each thread copying one half), all in the same run.
//!
//! Paired and interleaved rather than criterion's one-after-the-other groups, since the
//! machine is shared and noisy: after a warm-up, each of `ROUNDS` rounds times every
//! variant once, in the same order; the report gives each variant's median and minimum
//! (ms, Gelem/s), the median over rounds of the per-round ratios (2 threads ÷ 1 thread,
//! kernel ÷ memcpy of the output on as many threads), and the same ratios of the best
//! rounds (min ÷ min: what the code does when both threads get a core). `cargo bench -p simak
//! --bench tess_threads`; `SIMAK_BENCH_ROUNDS` overrides the 41 rounds.
//!
//! The second thread is spawned before each timed 2-thread call and is spinning on a
//! counter (yielding after a while) when the clock starts, so its start-up is not timed. Inputs:
//! N(0, 1) samples from a fixed seed.
#![allow(missing_docs)]

use simak::ops::casttess::TiledTensorSpec;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use simak::a65;
use simak::a65::Level;
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::{Request, check_inference};
use simak::{DType, TensorSpec};
use simak_tests::bytes::Aligned;
use simak_tests::rng::normal_f32;

/// Times `iters` calls, each running `mine` on this thread and `theirs` on a second one;
/// a call ends when both are done. The second thread is spawned and running (spinning on
/// a counter) before the clock starts, so its start-up is not timed.
fn two_threads(iters: u64, mut mine: impl FnMut(), mut theirs: impl FnMut() + Send) -> Duration {
    let released = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let ready = AtomicUsize::new(0);
    std::thread::scope(|s| {
        let (released, done, ready) = (&released, &done, &ready);
        s.spawn(move || {
            ready.store(1, Ordering::Release);
            for call in 1..=iters as usize {
                let mut spins = 0;
                while released.load(Ordering::Acquire) < call {
                    wait_a_little(&mut spins);
                }
                theirs();
                done.store(call, Ordering::Release);
            }
        });
        let mut spins = 0;
        while ready.load(Ordering::Acquire) == 0 {
            wait_a_little(&mut spins);
        }
        let start = Instant::now();
        for call in 1..=iters as usize {
            released.store(call, Ordering::Release);
            mine();
            let mut spins = 0;
            while done.load(Ordering::Acquire) < call {
                wait_a_little(&mut spins);
            }
        }
        start.elapsed()
    })
}

/// One step of a busy wait: spin first, then yield the core, so that a loaded machine
/// (more runnable threads than cores) still makes progress.
fn wait_a_little(spins: &mut u32) {
    if *spins < 1 << 14 {
        *spins += 1;
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

/// One timed variant: a name and a call that returns its wall time.
type Variant<'a> = (String, Box<dyn FnMut() -> Duration + 'a>);

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("SIMAK_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(41);
    let (h, w) = (1080u64, 1920u64);
    let n = (h * w * 3) as usize;
    let input: Vec<u8> = normal_f32(n, 1.0)
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([h, w, 3], DType::F32),
        output: TiledTensorSpec::new(
            [h, w, 3],
            DType::BF16,
            MlaTiled::new(
                [None, Some(0), Some(1), Some(2)],
                [1, 16, 64, 3],
                Channels::Compact,
            ),
        ),
    })
    .unwrap();
    let capacity = plan.output().capacity() as usize;
    let source = vec![0x5au8; capacity];
    let mut copy = Aligned::new(capacity, 0);
    let mut out = Aligned::new(capacity, 0);
    let (copy, out) = (copy.as_mut_slice(), out.as_mut_slice());

    let fastest = a65::casttess::prepare(&plan).level();
    let mut levels = vec![Level::Avx2];
    if fastest != Level::Avx2 {
        levels.push(fastest);
    }
    let prepared: Vec<_> = levels
        .iter()
        .filter_map(|&l| a65::casttess::prepare_at(&plan, l).ok())
        .collect();

    // Every variant writes its own buffer in turn: the memcpy `copy`, the kernels `out`
    // (one kernel at a time, so one shared buffer behind a RefCell).
    let out = std::cell::RefCell::new(out);
    let copy = std::cell::RefCell::new(copy);
    let mut variants: Vec<Variant<'_>> = Vec::new();
    variants.push((
        "memcpy-output/1".into(),
        Box::new(|| {
            let mut c = copy.borrow_mut();
            let start = Instant::now();
            c.copy_from_slice(&source);
            start.elapsed()
        }),
    ));
    variants.push((
        "memcpy-output/2".into(),
        Box::new(|| {
            let mut c = copy.borrow_mut();
            let (lo, hi) = c.split_at_mut(capacity / 2);
            let (src_lo, src_hi) = source.split_at(capacity / 2);
            two_threads(
                1,
                || lo.copy_from_slice(src_lo),
                || hi.copy_from_slice(src_hi),
            )
        }),
    ));
    for p in &prepared {
        let name = p.implementation();
        let (out, input) = (&out, &input);
        variants.push((
            format!("{name}/1"),
            Box::new(move || {
                let mut o = out.borrow_mut();
                let start = Instant::now();
                a65::casttess::execute(p, input, &mut o).unwrap();
                start.elapsed()
            }),
        ));
        variants.push((
            format!("{name}/2"),
            Box::new(move || {
                let mut o = out.borrow_mut();
                let pieces = p.split(2, input, &mut o).unwrap();
                let [mut a, mut b]: [_; 2] = pieces.try_into().expect("two pieces");
                two_threads(1, || a.run().unwrap(), || b.run().unwrap())
            }),
        ));
    }
    for (_, v) in variants.iter_mut() {
        for _ in 0..3 {
            v();
        }
    }
    let mut times = vec![Vec::with_capacity(rounds); variants.len()];
    for _ in 0..rounds {
        for (k, (_, v)) in variants.iter_mut().enumerate() {
            times[k].push(v().as_secs_f64());
        }
    }
    println!(
        "casttess 1080x1920x3 f32, tile (1,16,64,3) compact, {capacity} output bytes, {rounds} rounds"
    );
    println!(
        "{:<28} {:>10} {:>10} {:>10}",
        "variant", "median ms", "min ms", "Gelem/s"
    );
    for ((name, _), t) in variants.iter().zip(&times) {
        let min = t.iter().copied().fold(f64::INFINITY, f64::min);
        let med = median(&mut t.clone());
        println!(
            "{name:<28} {:>10.3} {:>10.3} {:>10.2}",
            med * 1e3,
            min * 1e3,
            n as f64 / med / 1e9
        );
    }
    // Paired ratios: per round, then the median over rounds.
    let ratio = |a: usize, b: usize| {
        let mut r: Vec<f64> = times[a].iter().zip(&times[b]).map(|(x, y)| y / x).collect();
        median(&mut r)
    };
    let min = |k: usize| times[k].iter().copied().fold(f64::INFINITY, f64::min);
    for (k, p) in prepared.iter().enumerate() {
        let (one, two) = (2 + 2 * k, 3 + 2 * k);
        println!(
            "{} best rounds (min ÷ min): 2 threads / 1 thread {:.2}x; 2 threads at {:.2}x memcpy/2",
            p.implementation(),
            min(one) / min(two),
            min(1) / min(two),
        );
        println!(
            "{}: 2 threads / 1 thread speed-up {:.2}x; 1 thread at {:.2}x memcpy/1, 2 threads at {:.2}x memcpy/2",
            p.implementation(),
            ratio(two, one),
            ratio(one, 0),
            ratio(two, 1),
        );
    }
}
