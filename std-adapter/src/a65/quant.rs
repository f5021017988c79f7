//! A65 Quant: prepare a route once, execute over borrowed host buffers (SPEC §6, §10).
//!
//! `prepare` selects, once per plan, the numerical route (dtype × rounding × CPU features ×
//! coalesced span) and the traversal: one contiguous run, a carry walker over runs, or —
//! for short or strided inner runs of workloads of at least [`PANEL_MIN_ELEMENTS`] — bounded
//! on-stack panels that gather live input elements, run the vector kernel and scatter the
//! output bytes. The exact integer path of SPEC §3 is the reference and the tail of every
//! route; results are bit-identical whichever route runs.

use simak_core::arith::quant::{ElementFn, RunFn};
use simak_core::ops::quant::Plan;

use simak_core::ops::Quant as QuantOp;

use super::arch::{self, Route};
use super::walk::{Traversal, strided_needs, strided_parts};
use super::{ExecuteError, HostOp, Level, LevelError, PortNeed};

/// [`execute`] over raw pointers, for the C ABI: the generic
/// [`execute_raw`](super::execute_raw) (SPEC §6), the op inferred from the `Prepared`.
pub use super::raw::execute_raw;

/// Elements per on-stack panel.
const PANEL: usize = 256;

/// Workloads of at least this many elements whose inner runs are short or strided use
/// on-stack panels with the vector kernel (SPEC §10).
pub const PANEL_MIN_ELEMENTS: u64 = 128;

/// Strided inner runs at least this long (in elements) are panelled run by run; shorter ones
/// share panels across runs.
const PANEL_RUN_MIN: usize = 64;

/// Inner runs shorter than this (in elements) do not use a vector kernel directly.
const VECTOR_MIN_RUN: usize = 16;

/// How the traversal feeds the numerical kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Inner runs are contiguous on both ports and long enough: kernel per run.
    Runs,
    /// Short or strided inner runs gathered into on-stack panels.
    Panels,
    /// Element by element with the exact path (small workloads).
    Elements,
}

/// The prepared state of a Quant plan ([`HostOp::State`]): route and traversal selected
/// once (SPEC §10). Opaque; held by [`Prepared`].
#[derive(Debug, Clone, Copy)]
pub struct State {
    plan: Plan,
    route: Route,
    /// The route's FP control bits to check per call ([`Route::fp_reject`]).
    fp_reject: u64,
    run: RunFn,
    element: ElementFn,
    traversal: Traversal,
    shape: Shape,
}

/// A Quant plan prepared for the A65: route and traversal selected once (SPEC §10).
pub type Prepared = super::Prepared<QuantOp>;

/// One piece of a split Quant call ([`Prepared::split`](super::Prepared::split)): owns
/// disjoint parts of the call's buffers, so pieces can run concurrently on any threads
/// (they are `Send`). A piece may be run again (for example by a benchmark); each run
/// recomputes the same bytes.
pub type Piece<'a> = super::Piece<'a, QuantOp>;

one_call!(quant);

/// Prepares `plan` for A65 execution with the fastest route this CPU offers (the exact
/// path when built with the `scalar-only` feature, see
/// [`SCALAR_ONLY`](super::SCALAR_ONLY)). Reads no tensor data and allocates nothing.
pub fn prepare(plan: &Plan) -> Prepared {
    Prepared::new(plan)
}

/// The automatic selection of [`prepare`].
fn select(plan: &Plan) -> State {
    let traversal = Traversal::new(plan.input(), plan.output());
    let shape = shape_of(plan, &traversal);
    // (`EXACT_MAX_ELEMENTS` is 0 on AArch64.)
    #[allow(clippy::absurd_extreme_comparisons)]
    let route = if shape == Shape::Elements || plan.elements() <= EXACT_MAX_ELEMENTS {
        Route::Exact
    } else {
        Route::AUTO
            .iter()
            .copied()
            .find(|&r| {
                loop_admits(r, shape, &traversal)
                    && arch::run_fn_for(r, plan.input().dtype(), plan.multiplier(), plan.rounding())
                        .is_some()
            })
            .unwrap_or(Route::Exact)
    };
    build(plan, route, traversal, shape)
}

/// Workloads of at most this many elements take the exact path in automatic selection:
/// on x86-64 one element costs less there than any vector step's fixed cost (measured
/// 2026-12-06 at AVX2: 14.5–17.6 ns against 20–22 ns per call); on AArch64 the A65
/// document's dispatch table keeps the route's own partial step (issue 23 scope 2).
const EXACT_MAX_ELEMENTS: u64 = if cfg!(target_arch = "x86_64") { 1 } else { 0 };

/// Prepares `plan` for the exact integer path of SPEC §3 on every element, whatever the
/// CPU offers: slower than the vector routes but independent of the FP environment, so it
/// also runs where the caller keeps flush-to-zero or a directed FP rounding mode. Results
/// are identical to [`prepare`]'s.
pub fn prepare_exact(plan: &Plan) -> Prepared {
    Prepared { state: exact(plan) }
}

/// The state of [`prepare_exact`].
fn exact(plan: &Plan) -> State {
    let traversal = Traversal::new(plan.input(), plan.output());
    let shape = match shape_of(plan, &traversal) {
        Shape::Panels => Shape::Elements,
        s => s,
    };
    build(plan, Route::Exact, traversal, shape)
}

/// Whether the loop `shape` over `traversal` admits `route` (the A65 document's dispatch
/// table, issue 23 scope 2): the half-precision routes need contiguous runs of at least
/// [`HALF_MIN_SPAN`] elements (`n ≥ 8`, `n` the coalesced span), and never run panels
/// (panels use the staged FP32 expression, whatever the scratch's contiguity).
fn loop_admits(route: Route, shape: Shape, traversal: &Traversal) -> bool {
    !route.uses_half() || (shape == Shape::Runs && traversal.inner_len >= HALF_MIN_SPAN)
}

/// The shortest coalesced span (elements) the half-precision routes take.
pub const HALF_MIN_SPAN: usize = 8;

/// The state of a forced `route`, or `None` when this CPU lacks it or the route does not
/// take the plan (dtype, multiplier, or the loop: [`loop_admits`]).
fn with_route(plan: &Plan, route: Route) -> Option<State> {
    arch::run_fn_for(
        route,
        plan.input().dtype(),
        plan.multiplier(),
        plan.rounding(),
    )?;
    let traversal = Traversal::new(plan.input(), plan.output());
    let shape = match (shape_of(plan, &traversal), route) {
        // The exact route never gathers: element by element it is the plain reference.
        (Shape::Panels, Route::Exact) => Shape::Elements,
        // A forced vector route runs even small workloads through panels.
        (Shape::Elements, r) if r != Route::Exact => Shape::Panels,
        (s, _) => s,
    };
    if !loop_admits(route, shape, &traversal) {
        return None;
    }
    Some(build(plan, route, traversal, shape))
}

/// Prepares `plan` at a forced [`Level`] (SPEC §10: the same results as [`prepare`], at
/// that level's speed), for benchmarks and comparisons. A vector level runs even small or
/// strided workloads through its kernel (on-stack panels); `scalar` is the exact integer
/// path of SPEC §3 ([`prepare_exact`]). Reads no tensor data and allocates nothing.
///
/// # Errors
///
/// [`LevelError::NotDetected`] when this CPU lacks the level's features;
/// [`LevelError::NoKernel`] when Quant has no kernel at the level for this plan:
/// `x86_64-avx512vbmi` (Quant's widest x86-64 level is `x86_64-avx512`), and
/// `aarch64-neon-fp16` unless the input is FP16 or BF16, the multiplier a power of two
/// in the route's range, and the inner runs contiguous with a coalesced span of at least
/// [`HALF_MIN_SPAN`] (8) elements (the half routes never run panels).
pub fn prepare_at(plan: &Plan, level: Level) -> Result<Prepared, LevelError> {
    Prepared::at(plan, level)
}

/// The state of [`prepare_at`].
fn at(plan: &Plan, level: Level) -> Result<State, LevelError> {
    level.check_detected()?;
    let dtype = plan.input().dtype();
    let no_kernel = LevelError::NoKernel {
        level,
        op: "quant",
        dtype,
    };
    match level.quant_route(dtype) {
        Some(Route::Exact) => Ok(exact(plan)),
        Some(route) => with_route(plan, route).ok_or(no_kernel),
        None => Err(no_kernel),
    }
}

fn shape_of(plan: &Plan, t: &Traversal) -> Shape {
    let elem = plan.input().dtype().size();
    let contiguous = t.inner_in_stride == elem && t.inner_out_stride == 1 || t.inner_len == 1;
    if contiguous && (t.inner_len >= VECTOR_MIN_RUN || plan.elements() < PANEL_MIN_ELEMENTS) {
        // Small workloads of short contiguous runs call the kernel per run: it handles any
        // run length with vector steps (issue 24), so there is no small-tensor cliff.
        Shape::Runs
    } else {
        // Short or strided runs: panels at every size (a small strided workload is one
        // panel), so a vector route never degrades to the element-by-element exact path.
        Shape::Panels
    }
}

fn build(plan: &Plan, route: Route, traversal: Traversal, shape: Shape) -> State {
    let kernels = plan.kernels();
    let run = arch::run_fn_for(
        route,
        plan.input().dtype(),
        plan.multiplier(),
        plan.rounding(),
    )
    .unwrap_or(kernels.run);
    let route = if shape == Shape::Elements {
        Route::Exact
    } else {
        route
    };
    State {
        plan: *plan,
        route,
        fp_reject: route.fp_reject(),
        run,
        element: kernels.element,
        traversal,
        shape,
    }
}

impl Prepared {
    /// Elements per vector step of the selected route: a run's length is processed in
    /// whole steps of this many elements (a remainder costs one more step), so the time of
    /// a call is flat between multiples of it (issue 24). 64 for `x86_64-avx512`, 32 for
    /// `x86_64-avx2`, 16 for `x86_64-sse4.1` and the AArch64 routes, 1 for the exact path.
    pub fn block_elements(&self) -> usize {
        self.state.route.block()
    }

    /// Elements per innermost run after coalescing (the whole tensor for packed,
    /// compatible layouts; 0 when empty).
    pub fn run_len(&self) -> usize {
        self.state.traversal.inner_len
    }
}

/// The part of a split Quant call ([`HostOp::Part`]): its traversal and its share of the
/// call's buffers (from its first input element and first output byte).
pub type Part<'a> = super::walk::StridedPart<'a>;

/// Quant on the A65: strided FP32 / BF16 / FP16 in, strided INT8 out (SPEC §3, §6, §10).
/// Pieces are split along the axis with the largest output stride, so fewer than `parts`
/// come back when that axis is short; their output byte ranges are disjoint.
///
/// ```
/// use simak::ops::quant::{check_inference, Params, Request};
/// use simak::{a65, DType, TensorSpec};
///
/// let plan = check_inference(&Request {
///     input: TensorSpec::contiguous([4, 1024], DType::F32),
///     output: TensorSpec::contiguous([4, 1024], DType::I8),
///     params: Params::new(0.5),
/// })?;
/// let prepared = a65::quant::prepare(&plan);
/// let input: Vec<u8> = (0..4096).flat_map(|i| (i as f32).to_le_bytes()).collect();
/// let mut output = vec![0u8; 4096];
/// let pieces = prepared.split(2, &input, &mut output)?;
/// std::thread::scope(|s| {
///     let runs: Vec<_> = pieces.into_iter().map(|mut p| s.spawn(move || p.run())).collect();
///     runs.into_iter().try_for_each(|r| r.join().expect("no panic"))
/// })?;
/// assert_eq!(output[4095] as i8, 127); // 4095 × 0.5 saturates
/// assert_eq!(output[7] as i8, 4); // 3.5 rounds to even
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl HostOp for QuantOp {
    type State = State;
    type Part<'a> = Part<'a>;

    fn prepare(plan: &Plan) -> State {
        select(plan)
    }

    fn prepare_at(plan: &Plan, level: Level) -> Result<State, LevelError> {
        at(plan, level)
    }

    #[inline]
    fn plan(state: &State) -> &Plan {
        &state.plan
    }

    fn implementation(state: &State) -> &'static str {
        match (state.route, state.shape) {
            (Route::Exact, _) => "exact-scalar",
            (Route::Sse41, Shape::Panels) => "x86_64-sse4.1+panels",
            (Route::Avx2, Shape::Panels) => "x86_64-avx2+panels",
            (Route::Avx512, Shape::Panels) => "x86_64-avx512+panels",
            (Route::Neon, Shape::Panels) => "aarch64-neon+panels",
            (r, _) => r.name(),
        }
    }

    fn level(state: &State) -> Level {
        state.route.level()
    }

    /// The accessed spans, the input aligned to its element size, the output unaligned.
    #[inline]
    fn needs(plan: &Plan) -> (PortNeed, PortNeed) {
        strided_needs(plan.input(), plan.output())
    }

    #[inline]
    fn uses_fp(state: &State) -> bool {
        state.route.uses_fp()
    }

    #[inline]
    fn fp_reject(state: &State) -> u64 {
        state.fp_reject
    }

    #[inline]
    fn run(state: &State, input: &[u8], output: &mut [u8]) {
        run_checked(state, input, output);
    }

    fn partition<'a>(
        state: &State,
        parts: usize,
        input: &'a [u8],
        output: &'a mut [u8],
    ) -> Vec<Part<'a>> {
        strided_parts(&state.traversal, parts, input, output)
    }

    fn run_part(state: &State, part: &mut Part<'_>) {
        let state = State {
            traversal: part.traversal,
            ..*state
        };
        run_checked(&state, part.input, part.output);
    }
}

/// Quantizes `input` into `output` as `prepared` describes (the generic
/// [`a65::execute`](super::execute) for Quant).
///
/// `input` holds the input port's storage starting at its first element (little-endian,
/// at least `plan.input().span()` bytes, aligned to the element size); `output` holds the
/// output port's storage (at least `plan.output().span()` bytes). Output bytes no element
/// maps to are never written. An empty plan needs no storage, no FP mode, and writes
/// nothing. Allocates nothing.
///
/// # Errors
///
/// Checked before any write, in this order: [`ExecuteError::Capacity`],
/// [`ExecuteError::Misaligned`], [`ExecuteError::AddressOverflow`] (input, then output),
/// [`ExecuteError::Overlap`], then, for FP routes, [`ExecuteError::FpEnvironment`] when the
/// calling thread's FP control register is not the default. On error nothing was written;
/// the caller's FP mode is never changed.
#[inline]
pub fn execute(prepared: &Prepared, input: &[u8], output: &mut [u8]) -> Result<(), ExecuteError> {
    super::execute(prepared, input, output)
}

/// Runs the traversal over buffers already checked against the plan.
fn run_checked(prepared: &State, input: &[u8], output: &mut [u8]) {
    let m = prepared.plan.multiplier();
    let zp = prepared.plan.zero_point();
    let t = &prepared.traversal;
    let elem = prepared.plan.input().dtype().size();
    let len = t.inner_len;
    let (si, so) = (t.inner_in_stride, t.inner_out_stride);
    match prepared.shape {
        Shape::Runs => {
            let run = prepared.run;
            t.for_each_run(|i, o| run(m, zp, &input[i..i + len * elem], &mut output[o..o + len]));
        }
        Shape::Elements => {
            let element = prepared.element;
            t.for_each_run(|i, o| {
                for j in 0..len {
                    let at = i + j * si;
                    output[o + j * so] = element(m, zp, load(&input[at..at + elem])) as u8;
                }
            });
        }
        Shape::Panels if len >= PANEL_RUN_MIN => {
            // Long strided runs: panels inside each run, no per-element offsets. A side
            // that is contiguous along the run is read or written in place.
            let run = prepared.run;
            let mut panel_in = [0u8; PANEL * 4];
            let mut panel_out = [0u8; PANEL];
            t.for_each_run(|i, o| {
                let mut j = 0;
                while j < len {
                    let k = PANEL.min(len - j);
                    let src: &[u8] = if si == elem {
                        &input[i + j * elem..i + (j + k) * elem]
                    } else {
                        gather(input, i + j * si, si, elem, &mut panel_in[..k * elem]);
                        &panel_in[..k * elem]
                    };
                    if so == 1 {
                        run(m, zp, src, &mut output[o + j..o + j + k]);
                    } else {
                        run(m, zp, src, &mut panel_out[..k]);
                        for (q, &b) in panel_out[..k].iter().enumerate() {
                            output[o + (j + q) * so] = b;
                        }
                    }
                    j += k;
                }
            });
        }
        Shape::Panels => {
            // Short runs: elements of consecutive runs share a panel, each with its output
            // offset.
            let run = prepared.run;
            let mut panel_in = [0u8; PANEL * 4];
            let mut panel_out = [0u8; PANEL];
            let mut offsets = [0usize; PANEL];
            let mut filled = 0usize;
            let flush = |filled: usize,
                         offsets: &[usize; PANEL],
                         panel_in: &[u8],
                         panel_out: &mut [u8; PANEL],
                         output: &mut [u8]| {
                run(m, zp, &panel_in[..filled * elem], &mut panel_out[..filled]);
                for (k, &o) in offsets[..filled].iter().enumerate() {
                    output[o] = panel_out[k];
                }
            };
            t.for_each_run(|i, o| {
                for j in 0..len {
                    let at = i + j * si;
                    panel_in[filled * elem..(filled + 1) * elem]
                        .copy_from_slice(&input[at..at + elem]);
                    offsets[filled] = o + j * so;
                    filled += 1;
                    if filled == PANEL {
                        flush(filled, &offsets, &panel_in, &mut panel_out, output);
                        filled = 0;
                    }
                }
            });
            if filled > 0 {
                flush(filled, &offsets, &panel_in, &mut panel_out, output);
            }
        }
    }
}

/// Copies `panel.len() / elem` elements of `elem` bytes from `input`, starting at byte
/// `start` and `stride` bytes apart, into `panel`.
#[inline(always)]
fn gather(input: &[u8], start: usize, stride: usize, elem: usize, panel: &mut [u8]) {
    match elem {
        4 => gather_n::<4>(input, start, stride, panel),
        _ => gather_n::<2>(input, start, stride, panel),
    }
}

#[inline(always)]
fn gather_n<const E: usize>(input: &[u8], start: usize, stride: usize, panel: &mut [u8]) {
    let mut at = start;
    for dst in panel.chunks_exact_mut(E) {
        let src: &[u8; E] = input[at..at + E].try_into().unwrap_or(&[0; E]);
        dst.copy_from_slice(src);
        at += stride;
    }
}

#[inline(always)]
fn load(bytes: &[u8]) -> u32 {
    match *bytes {
        [a, b, c, d] => u32::from_le_bytes([a, b, c, d]),
        [a, b] => u16::from_le_bytes([a, b]) as u32,
        _ => 0,
    }
}
