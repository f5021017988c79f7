//! The host half of an operation, written once: the [`HostOp`] trait, implemented by each
//! operation marker of `simak_core::ops` ([`Quant`](simak_core::ops::Quant),
//! [`CastTess`](simak_core::ops::CastTess), [`QuantTess`](simak_core::ops::QuantTess)), and
//! the generic [`Prepared`], [`execute`], [`split`], [`Piece`] and [`execute_threaded`]
//! over it (SPEC §6, §10).
//!
//! The per-op modules (`a65::quant`, `a65::casttess`, `a65::quanttess`) keep their names as
//! thin aliases: `a65::quant::Prepared` is `Prepared<Quant>`, `a65::quant::execute` calls
//! [`execute`], `a65::quant::Piece<'a>` is `Piece<'a, Quant>`.
//!
//! A prepared state of one op cannot run a call of another op: the op is a type parameter.
//!
//! ```compile_fail
//! use simak::a65;
//! use simak::layout::{Channels, MlaTiled};
//! use simak::ops::casttess::{check_inference, Request, TiledTensorSpec};
//! use simak::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([2, 3], DType::F32),
//!     output: TiledTensorSpec::new(
//!         [2, 3],
//!         DType::BF16,
//!         MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 3], Channels::Compact),
//!     ),
//! })
//! .unwrap();
//! let prepared: a65::casttess::Prepared = a65::casttess::prepare(&plan);
//! let mut out = [0u8; 16];
//! // A CastTess preparation is not a Quant one.
//! a65::quant::execute(&prepared, &[0u8; 24], &mut out).unwrap();
//! ```
//!
//! ```compile_fail
//! use simak::a65::{self, HostOp};
//! use simak::layout::{Channels, MlaTiled};
//! use simak::ops::quant::Params;
//! use simak::ops::quanttess::{check_inference, Request, TiledTensorSpec};
//! use simak::ops::Quant;
//! use simak::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([2, 2], DType::F32),
//!     output: TiledTensorSpec::new(
//!         [2, 2],
//!         DType::I8,
//!         MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 2], Channels::PadTo16),
//!     ),
//!     params: Params::new(0.5),
//! })
//! .unwrap();
//! // A QuantTess plan is not a Quant plan.
//! let _ = a65::Prepared::<Quant>::new(&plan);
//! ```

use core::fmt;

use simak_core::ops::{Op, OpPlan};

use super::arch;
use super::{ExecuteError, Level, LevelError, PortNeed, check_ports_at};

/// The host (A65) half of an operation: what one op provides so that preparation, the
/// checked `execute`, the raw-pointer entry, the partition into pieces and the threaded
/// runner are written once for every op (SPEC §6, §10).
///
/// Implemented by the op's marker type of `simak_core::ops` (its [`Op`]); only this crate
/// can implement it (the markers are sealed). An implementer provides:
///
/// - [`State`](HostOp::State): what `prepare` selects once per plan (route, kernels,
///   traversal or tile geometry, per-plan tables). It need not be `Copy`; it is built
///   once and borrowed by every call, which allocates nothing.
/// - [`prepare`](HostOp::prepare) (automatic level) and [`prepare_at`](HostOp::prepare_at)
///   (a forced [`Level`]), and [`plan`](HostOp::plan) to get the checked plan back.
/// - [`implementation`](HostOp::implementation) and [`level`](HostOp::level): the
///   diagnostic name and the [`Level`] of what was selected.
/// - [`needs`](HostOp::needs): each port's accessed span and alignment ([`PortNeed`]),
///   checked before any write by [`execute`] and the raw entry.
/// - [`uses_fp`](HostOp::uses_fp): whether the selected route needs the default FP
///   environment (SPEC §10); then every call checks the thread's FP control register.
/// - [`run`](HostOp::run): the whole call over buffers already checked.
/// - [`Part`](HostOp::Part), [`partition`](HostOp::partition) and
///   [`run_part`](HostOp::run_part): disjoint parts of a call that run on any threads and
///   together write the bytes of one [`run`](HostOp::run).
pub trait HostOp: Op {
    /// The prepared state of a plan (`Prepared<Self>` wraps it).
    type State: Clone + fmt::Debug + Send + Sync;

    /// One part of a partitioned call: its share of the call's buffers (disjoint output
    /// bytes) and what it covers.
    type Part<'a>: fmt::Debug + Send;

    /// Prepares `plan` with the fastest level this CPU offers. Reads no tensor data.
    fn prepare(plan: &Self::Plan) -> Self::State;

    /// Prepares `plan` at a forced `level` (same bytes as [`prepare`](HostOp::prepare)).
    ///
    /// # Errors
    ///
    /// [`LevelError::NotDetected`] when this CPU lacks the level;
    /// [`LevelError::NoKernel`] when the op has no kernel at the level for this plan.
    fn prepare_at(plan: &Self::Plan, level: Level) -> Result<Self::State, LevelError>;

    /// The checked plan the state was prepared from.
    fn plan(state: &Self::State) -> &Self::Plan;

    /// Diagnostic name of the selected route or kernel level (not an API contract,
    /// SPEC §10).
    fn implementation(state: &Self::State) -> &'static str;

    /// The [`Level`] whose kernel the state runs (`scalar` for the exact and scalar
    /// paths, whatever the CPU offers).
    fn level(state: &Self::State) -> Level;

    /// What the plan's input and output ports need of their buffers (span and
    /// alignment, SPEC §6), in that order.
    fn needs(plan: &Self::Plan) -> (PortNeed, PortNeed);

    /// Whether the selected route uses FP arithmetic, so a call needs the default FP
    /// environment (SPEC §10).
    fn uses_fp(state: &Self::State) -> bool;

    /// The FP control register's bits the selected route cannot run with, cached with the
    /// route at `prepare` (SPEC §10; issue 23 scope 3): a call fails with
    /// [`ExecuteError::FpEnvironment`] when the calling thread's register differs from the
    /// default in one of them; 0 for a route without FP arithmetic. Default: every bit of
    /// the FP rule when [`uses_fp`](HostOp::uses_fp), none otherwise.
    #[inline]
    fn fp_reject(state: &Self::State) -> u64 {
        if Self::uses_fp(state) {
            arch::FP_REJECT_ALL
        } else {
            0
        }
    }

    /// Runs the whole call over buffers checked against [`needs`](HostOp::needs) (a
    /// nonempty plan).
    fn run(state: &Self::State, input: &[u8], output: &mut [u8]);

    /// Partitions the call over checked buffers into at most `parts` (0 counts as 1)
    /// disjoint parts, in output order (a nonempty plan).
    fn partition<'a>(
        state: &Self::State,
        parts: usize,
        input: &'a [u8],
        output: &'a mut [u8],
    ) -> Vec<Self::Part<'a>>;

    /// Runs one part of [`partition`](HostOp::partition).
    fn run_part(state: &Self::State, part: &mut Self::Part<'_>);
}

/// A plan of op `O` prepared for the A65: what `prepare` selected once (route or kernel
/// level, traversal or tile geometry). The per-op names are aliases:
/// `a65::quant::Prepared` is `Prepared<Quant>`.
pub struct Prepared<O: HostOp> {
    pub(crate) state: O::State,
}

impl<O: HostOp> Clone for Prepared<O> {
    fn clone(&self) -> Self {
        Prepared {
            state: self.state.clone(),
        }
    }
}

impl<O: HostOp> Copy for Prepared<O> where O::State: Copy {}

impl<O: HostOp> fmt::Debug for Prepared<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("op", &O::TITLE)
            .field("state", &self.state)
            .finish()
    }
}

impl<O: HostOp> Prepared<O> {
    /// Prepares `plan` with the fastest level this CPU offers ([`HostOp::prepare`]).
    /// Reads no tensor data.
    #[inline]
    pub fn new(plan: &O::Plan) -> Self {
        Prepared {
            state: O::prepare(plan),
        }
    }

    /// Prepares `plan` at a forced [`Level`] ([`HostOp::prepare_at`]).
    ///
    /// # Errors
    ///
    /// [`LevelError::NotDetected`] when this CPU lacks the level;
    /// [`LevelError::NoKernel`] when the op has no kernel at the level for this plan.
    pub fn at(plan: &O::Plan, level: Level) -> Result<Self, LevelError> {
        Ok(Prepared {
            state: O::prepare_at(plan, level)?,
        })
    }

    /// The checked plan this was prepared from.
    #[inline]
    pub fn plan(&self) -> &O::Plan {
        O::plan(&self.state)
    }

    /// Diagnostic name of the selected route or kernel level, e.g. `x86_64-avx512` (not
    /// an API contract, SPEC §10).
    pub fn implementation(&self) -> &'static str {
        O::implementation(&self.state)
    }

    /// The [`Level`] whose kernel runs the call: the automatic choice of `prepare`, or the
    /// level given to `prepare_at`; `scalar` for the exact and scalar paths (SPEC §10).
    pub fn level(&self) -> Level {
        O::level(&self.state)
    }

    /// Splits the call into at most `parts` pieces that callers may run on their own
    /// threads; see [`split`].
    ///
    /// # Errors
    ///
    /// As [`execute`]: nothing is returned (and nothing written) unless every check passed.
    pub fn split<'a>(
        &'a self,
        parts: usize,
        input: &'a [u8],
        output: &'a mut [u8],
    ) -> Result<Vec<Piece<'a, O>>, ExecuteError> {
        split(self, parts, input, output)
    }
}

/// Checks both ports of a nonempty plan against `O::needs` (capacity, alignment, address
/// overflow, input then output; overlap), then, for an FP route only, the FP control word
/// `control` gives (the register is not read for the other routes).
#[inline]
fn check<O: HostOp>(
    state: &O::State,
    input: &[u8],
    output: &[u8],
    control: impl FnOnce() -> Option<u64>,
) -> Result<(), ExecuteError> {
    let (need_in, need_out) = O::needs(O::plan(state));
    check_ports_at(
        (input.as_ptr() as usize, input.len()),
        (output.as_ptr() as usize, output.len()),
        need_in,
        need_out,
    )?;
    let reject = O::fp_reject(state);
    if reject != 0 {
        check_fp_control(control(), reject)?;
    }
    Ok(())
}

/// The FP-environment rule: FP routes need round-to-nearest, no flush-to-zero, no
/// denormals-are-zero and masked traps (SPEC §10), in the bits `reject` of the route.
/// `control` is the register value (MXCSR on x86-64, FPCR on AArch64); `None` where there
/// is none.
#[inline]
fn check_fp_control(control: Option<u64>, reject: u64) -> Result<(), ExecuteError> {
    match control {
        Some(c) if !arch::fp_control_ok(c, reject) => {
            Err(ExecuteError::FpEnvironment { control: c })
        }
        _ => Ok(()),
    }
}

/// Runs the call `prepared` describes over borrowed buffers (SPEC §6, §10): `input` holds
/// the input port's storage from its first element, `output` the output port's storage;
/// each at least the span [`HostOp::needs`] gives, aligned as it says. The per-op
/// `execute` functions (`a65::quant::execute` …) are this function; their docs say which
/// output bytes each op writes. An empty plan needs no storage, no FP mode, and writes
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
pub fn execute<O: HostOp>(
    prepared: &Prepared<O>,
    input: &[u8],
    output: &mut [u8],
) -> Result<(), ExecuteError> {
    execute_checked(prepared, input, output, arch::read_fp_control)
}

/// [`execute`] with the FP control word supplied by the caller instead of read from the
/// register: the test seam of SPEC §10 (tests never change MXCSR, which would be undefined
/// behaviour under Rust code). Not public API.
#[doc(hidden)]
#[inline]
pub fn execute_with_fp_control<O: HostOp>(
    prepared: &Prepared<O>,
    input: &[u8],
    output: &mut [u8],
    control: Option<u64>,
) -> Result<(), ExecuteError> {
    execute_checked(prepared, input, output, || control)
}

/// [`execute`] with the FP control word from `control`, called only for an FP route.
#[inline]
fn execute_checked<O: HostOp>(
    prepared: &Prepared<O>,
    input: &[u8],
    output: &mut [u8],
    control: impl FnOnce() -> Option<u64>,
) -> Result<(), ExecuteError> {
    let state = &prepared.state;
    if O::plan(state).is_empty() {
        return Ok(());
    }
    check::<O>(state, input, output, control)?;
    O::run(state, input, output);
    Ok(())
}

/// Splits the call into at most `parts` pieces that callers may run on their own threads
/// (simak has no thread pool; [`execute_threaded`] runs them on scoped threads). The
/// pieces own disjoint parts of the output, in output order; running every piece, in any
/// order or concurrently, writes the bytes of one [`execute`]. `parts` 0 counts as 1;
/// fewer pieces come back when the call cannot be cut finer (a tiled op never cuts a
/// tile); an empty plan gives no pieces.
///
/// `input` and `output` are the whole call's buffers, as for [`execute`]; they are checked
/// here once, before anything is written, and so is the calling thread's FP environment
/// for an FP route (each [`Piece::run`] checks its own thread's again).
///
/// # Errors
///
/// As [`execute`]: nothing is returned (and nothing written) unless every check passed.
pub fn split<'a, O: HostOp>(
    prepared: &'a Prepared<O>,
    parts: usize,
    input: &'a [u8],
    output: &'a mut [u8],
) -> Result<Vec<Piece<'a, O>>, ExecuteError> {
    let state = &prepared.state;
    if O::plan(state).is_empty() {
        return Ok(Vec::new());
    }
    check::<O>(state, input, output, arch::read_fp_control)?;
    Ok(O::partition(state, parts, input, output)
        .into_iter()
        .map(|part| Piece { state, part })
        .collect())
}

/// One piece of a split call ([`split`]): owns a disjoint part of the call's output, so
/// pieces can run concurrently on any threads (they are `Send`). A piece may be run again
/// (for example by a benchmark); each run recomputes the same bytes.
pub struct Piece<'a, O: HostOp> {
    state: &'a O::State,
    part: O::Part<'a>,
}

impl<O: HostOp> fmt::Debug for Piece<'_, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Piece")
            .field("op", &O::TITLE)
            .field("part", &self.part)
            .finish()
    }
}

impl<'a, O: HostOp> Piece<'a, O> {
    /// Runs this piece. The buffers were checked by [`split`]; for an FP route the FP
    /// environment is checked here, on the calling thread, since it is per thread.
    ///
    /// # Errors
    ///
    /// [`ExecuteError::FpEnvironment`] for an FP route when the calling thread's FP control
    /// register is not the default; nothing was written.
    pub fn run(&mut self) -> Result<(), ExecuteError> {
        let reject = O::fp_reject(self.state);
        if reject != 0 {
            check_fp_control(arch::read_fp_control(), reject)?;
        }
        O::run_part(self.state, &mut self.part);
        Ok(())
    }

    /// This piece's part ([`HostOp::Part`]).
    pub(crate) fn part(&self) -> &O::Part<'a> {
        &self.part
    }
}

/// Runs the call over `threads` scoped threads (SPEC §6): [`split`] into at most `threads`
/// pieces, the first run on the calling thread and each other on a thread of its own
/// spawned for this call (`std::thread::scope`: no pool, no global state), all joined
/// before returning. `threads` 0 or 1 is one [`execute`] on the calling thread. The bytes
/// written are those of one [`execute`] whatever the count.
///
/// ```
/// use simak::a65;
/// use simak::ops::quant::{check_inference, Params, Request};
/// use simak::{DType, TensorSpec};
///
/// let plan = check_inference(&Request {
///     input: TensorSpec::contiguous([4096], DType::F32),
///     output: TensorSpec::contiguous([4096], DType::I8),
///     params: Params::new(0.5),
/// })?;
/// let prepared = a65::quant::prepare(&plan);
/// let input: Vec<u8> = (0..4096).flat_map(|i| (i as f32).to_le_bytes()).collect();
/// let mut output = vec![0u8; 4096];
/// a65::execute_threaded(&prepared, 3, &input, &mut output)?;
/// assert_eq!(output[4095] as i8, 127); // 4095 × 0.5 saturates
/// assert_eq!(output[7] as i8, 4); // 3.5 rounds to even
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// # Errors
///
/// As [`execute`], checked before any write; then the first error of a piece in piece
/// order ([`ExecuteError::FpEnvironment`] on a thread whose FP environment is not the
/// default).
pub fn execute_threaded<O: HostOp>(
    prepared: &Prepared<O>,
    threads: usize,
    input: &[u8],
    output: &mut [u8],
) -> Result<(), ExecuteError> {
    if threads <= 1 {
        return execute(prepared, input, output);
    }
    let mut pieces = split(prepared, threads, input, output)?.into_iter();
    let Some(mut first) = pieces.next() else {
        return Ok(());
    };
    std::thread::scope(|s| {
        let others: Vec<_> = pieces.map(|mut p| s.spawn(move || p.run())).collect();
        let mine = first.run();
        others
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .fold(mine, Result::and)
    })
}
