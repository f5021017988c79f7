//! The Quant loop, written once over [`QuantLanes`].
//!
//! Per lane, on every level: `p = x · m` in binary32 (round-to-nearest, gradual underflow:
//! the environment is checked before execution); NaN lanes forced to 0; `p` converted to
//! INT32 with the plan's rounding mode (x86-64 clamps `p` at 1024 first, and large negative
//! values become `i32::MIN`; NEON's `FCVT*S` saturates); narrowed to INT16 with signed
//! saturation, the zero point added with INT16 saturation, narrowed to INT8 with
//! saturation. Every step preserves `saturate(round(p) + zp)` because |zp| ≤ 128 and the
//! clamps lie far outside [-384, 383].
//!
//! The loop takes four vectors per step. The remainder of a run is one more step: the last
//! whole step recomputed when the run holds one, else the run copied into a zero-padded
//! stack step and its bytes copied out (issue 24: no scalar tail, no small-tensor cliff).
//! For streamed runs the head up to the first 64-byte output boundary goes through the
//! exact path of `simak_core::arith::quant`. Every lane computes the exact path's result
//! (see above), so results are bit-identical to it.

use simak_core::DType;
use simak_core::arith::quant::{self as exact, InputFormat, Lift, Multiplier, RoundingMode, RunFn};
use simak_core::ops::quant::Rounding;

use super::isa::{Isa, Kernel};

/// The input decodings a vector loader has: one per Quant input dtype. Loaders match on
/// [`Load::of`] exhaustively, so a dtype added to `DType` cannot fall into another one's
/// decoding (issue 22 scope 8): `of` names every dtype, and one that is not a Quant input
/// is a compile-time error where a kernel is instantiated for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Load {
    /// IEEE binary32, loaded as is.
    F32,
    /// bfloat16: the high half of a binary32.
    Bf16,
    /// IEEE binary16, widened exactly.
    F16,
}

impl Load {
    /// The decoding of input format `I`; evaluate it in a `const` block, so that a
    /// non-input dtype fails to compile rather than decoding wrongly.
    pub(crate) const fn of<I: InputFormat>() -> Load {
        match I::DTYPE {
            DType::F32 => Load::F32,
            DType::BF16 => Load::Bf16,
            DType::F16 => Load::F16,
            DType::I8 | DType::I16 | DType::I32 => {
                panic!("an integer dtype is not a Quant input (SPEC §3)")
            }
        }
    }
}

/// One level's lanes for the Quant loop.
pub(crate) trait QuantLanes: Isa {
    /// `LANES` binary32 lanes.
    type F: Copy;
    /// `LANES` INT32 lanes.
    type I: Copy;
    /// The zero point, broadcast as the narrowing needs it.
    type Zp: Copy;
    /// The `4 · LANES` INT8 results of one step.
    type Bytes: Copy;

    /// Binary32 lanes per vector.
    const LANES: usize;
    /// Runs of at least this many elements use non-temporal stores (`usize::MAX`: never).
    const STREAM_MIN: usize = usize::MAX;
    /// Whether the level takes FP16 input (the SSE4.1 level does not: F16C needs VEX).
    const TAKES_F16: bool = true;

    /// The multiplier in every lane.
    fn splat(self, m: f32) -> Self::F;

    /// The zero point, as [`QuantLanes::narrow`] takes it.
    fn zero_point(self, zp: i16) -> Self::Zp;

    /// Loads `LANES` elements of format `I` at `ptr`, widened exactly to binary32.
    ///
    /// # Safety
    ///
    /// `ptr` is valid for reading `LANES · I::SIZE` bytes (no alignment needed).
    unsafe fn load<I: InputFormat>(self, ptr: *const u8) -> Self::F;

    /// Product, NaN → 0, and conversion to INT32 with mode `M`.
    fn convert<M: RoundingMode>(self, x: Self::F, m: Self::F) -> Self::I;

    /// Narrows four converted vectors (elements in order) to INT8 with the zero point added.
    fn narrow(self, v: [Self::I; 4], zp: Self::Zp) -> Self::Bytes;

    /// Loads one step: `4 · LANES` elements of format `I` at `ptr`, widened exactly, as four
    /// vectors in the order [`QuantLanes::narrow_step`] undoes. Default: four
    /// [`QuantLanes::load`]s, elements in order.
    ///
    /// # Safety
    ///
    /// `ptr` is valid for reading `4 · LANES · I::SIZE` bytes (no alignment needed).
    #[inline(always)]
    unsafe fn load_step<I: InputFormat>(self, ptr: *const u8) -> [Self::F; 4] {
        // SAFETY: the caller's contract is `load_four`'s.
        unsafe { load_four::<Self, I>(self, ptr) }
    }

    /// Narrows one step's four converted vectors, in [`QuantLanes::load_step`]'s order, to
    /// its INT8 results in element order with the zero point added. Default:
    /// [`QuantLanes::narrow`].
    #[inline(always)]
    fn narrow_step<I: InputFormat>(self, v: [Self::I; 4], zp: Self::Zp) -> Self::Bytes {
        self.narrow(v, zp)
    }

    /// Stores one step's bytes, non-temporally when `stream`.
    ///
    /// # Safety
    ///
    /// `ptr` is valid for writing `4 · LANES` bytes, and 64-byte aligned when `stream`.
    unsafe fn store(self, ptr: *mut u8, bytes: Self::Bytes, stream: bool);

    /// Orders earlier non-temporal stores before later stores.
    fn fence(self) {}

    /// Loads one step as [`QuantLanes::load_step`] does, reading only the first `n`
    /// elements at `ptr` (`n < 4 · LANES`); the other lanes hold zeros. Default: through a
    /// zeroed stack copy of the `n` elements. A level may arrange the lanes otherwise (the
    /// AVX2 level loads overlapping whole vectors when `n ≥ 8`) when its
    /// [`QuantLanes::store_partial`] undoes that arrangement: the pair is only used together.
    ///
    /// # Safety
    ///
    /// `ptr` is valid for reading `n · I::SIZE` bytes; `4 · LANES · I::SIZE ≤ 256`.
    #[inline(always)]
    unsafe fn load_step_partial<I: InputFormat>(self, ptr: *const u8, n: usize) -> [Self::F; 4] {
        let mut buf = [0u8; STEP_IN_MAX];
        // SAFETY: `n · I::SIZE` bytes are readable at `ptr` (caller) and fit `buf` (the step
        // fits it, n is below a step); the buffers are distinct.
        unsafe { copy_small(ptr, buf.as_mut_ptr(), n * I::SIZE) };
        // SAFETY: `buf` holds a whole step.
        unsafe { self.load_step::<I>(buf.as_ptr()) }
    }

    /// Stores the first `n` bytes of one step's results (`n < 4 · LANES`) at `ptr`,
    /// ordinary stores, writing no other byte; the results are in the arrangement of the
    /// level's [`QuantLanes::load_step_partial`]. Default: through a stack copy.
    ///
    /// # Safety
    ///
    /// `ptr` is valid for writing `n` bytes; `4 · LANES ≤ 64`.
    #[inline(always)]
    unsafe fn store_partial(self, ptr: *mut u8, bytes: Self::Bytes, n: usize) {
        let mut buf = [0u8; STEP_OUT_MAX];
        // SAFETY: `buf` holds a whole step's bytes.
        unsafe { self.store(buf.as_mut_ptr(), bytes, false) };
        // SAFETY: n < 64 bytes from `buf`; `n` writable at `ptr` (caller); distinct buffers.
        unsafe { copy_small(buf.as_ptr(), ptr, n) };
    }
}

/// Bytes of one step's input on the widest level (16 lanes × 4 steps × 4-byte FP32): the
/// stack buffer of a run shorter than one step.
const STEP_IN_MAX: usize = 256;
/// Bytes of one step's output on the widest level.
const STEP_OUT_MAX: usize = 64;

/// Copies `len < 512` bytes from `src` to `dst` in power-of-two chunks (no call into
/// `memcpy`, whose call and dispatch cost more than the copy at these sizes).
///
/// # Safety
///
/// `src` readable and `dst` writable for `len` bytes; the ranges do not overlap.
#[inline(always)]
pub(crate) unsafe fn copy_small(src: *const u8, dst: *mut u8, len: usize) {
    debug_assert!(len < 512);
    let mut at = 0;
    macro_rules! chunk {
        ($t:ty) => {
            if len & core::mem::size_of::<$t>() != 0 {
                // SAFETY: at + size ≤ len: the chunks of the set bits of len, largest first.
                unsafe {
                    let v = core::ptr::read_unaligned(src.wrapping_add(at).cast::<$t>());
                    core::ptr::write_unaligned(dst.wrapping_add(at).cast::<$t>(), v);
                }
                at += core::mem::size_of::<$t>();
            }
        };
    }
    chunk!([u64; 32]);
    chunk!([u64; 16]);
    chunk!([u64; 8]);
    chunk!([u64; 4]);
    chunk!([u64; 2]);
    chunk!(u64);
    chunk!(u32);
    chunk!(u16);
    if len & 1 != 0 {
        // SAFETY: the last byte, at = len − 1.
        let b = unsafe { *src.wrapping_add(at) };
        // SAFETY: as above, the last byte of `dst`.
        unsafe { *dst.wrapping_add(at) = b };
    }
}

/// The loop over `n` elements (any count): whole steps, then the remainder as one more
/// step — overlapping the last whole step when `n` is at least one step (the same bytes
/// are recomputed from the unchanged input), or through a zero-padded stack copy of the
/// run when it is shorter than one step. Only `input[..n · I::SIZE]` is read and only
/// `output[..n]` written.
struct Body<'a, I, M, const STREAM: bool> {
    m: f32,
    zero_point: i16,
    input: &'a [u8],
    output: &'a mut [u8],
    n: usize,
    formats: core::marker::PhantomData<(I, M)>,
}

/// Four [`QuantLanes::load`]s of one step, elements in order: the default
/// [`QuantLanes::load_step`], and the fallback of a level that overrides it for some
/// formats only.
///
/// # Safety
///
/// `ptr` is valid for reading `4 · LANES · I::SIZE` bytes (no alignment needed).
#[inline(always)]
pub(crate) unsafe fn load_four<L: QuantLanes, I: InputFormat>(l: L, ptr: *const u8) -> [L::F; 4] {
    let size = L::LANES * I::SIZE;
    // SAFETY: (all four loads) vector k's `LANES · I::SIZE` bytes from k · size lie in the
    // caller's step.
    let a = unsafe { l.load::<I>(ptr) };
    // SAFETY: as above.
    let b = unsafe { l.load::<I>(ptr.wrapping_add(size)) };
    // SAFETY: as above.
    let c = unsafe { l.load::<I>(ptr.wrapping_add(2 * size)) };
    // SAFETY: as above.
    let d = unsafe { l.load::<I>(ptr.wrapping_add(3 * size)) };
    [a, b, c, d]
}

/// One step: `4 · LANES` elements of `I` at `src` into `4 · LANES` bytes at `dst`.
///
/// # Safety
///
/// `src` is valid for reading `4 · LANES · I::SIZE` bytes and `dst` for writing
/// `4 · LANES` bytes; `dst` is 64-byte aligned when `stream`.
#[inline(always)]
unsafe fn step<L: QuantLanes, I: InputFormat, M: RoundingMode>(
    l: L,
    m: L::F,
    zp: L::Zp,
    src: *const u8,
    dst: *mut u8,
    stream: bool,
) {
    // SAFETY: the caller's contract covers the step's input.
    let [a, b, c, d] = unsafe { l.load_step::<I>(src) };
    let v = [
        l.convert::<M>(a, m),
        l.convert::<M>(b, m),
        l.convert::<M>(c, m),
        l.convert::<M>(d, m),
    ];
    let bytes = l.narrow_step::<I>(v, zp);
    // SAFETY: the caller's contract covers the step's output.
    unsafe { l.store(dst, bytes, stream) };
}

impl<L: QuantLanes, I: InputFormat, M: RoundingMode, const STREAM: bool> Kernel<L>
    for Body<'_, I, M, STREAM>
{
    type Output = ();

    #[inline(always)]
    fn run(self, l: L) {
        let step_n = 4 * L::LANES;
        let n = self.n;
        assert!(
            self.input.len() >= n * I::SIZE
                && self.output.len() >= n
                && step_n * I::SIZE <= STEP_IN_MAX
                && step_n <= STEP_OUT_MAX
        );
        let m = l.splat(self.m);
        let zp = l.zero_point(self.zero_point);
        let (src, dst) = (self.input.as_ptr(), self.output.as_mut_ptr());
        let blocks = n / step_n * step_n;
        let mut i = 0;
        while i < blocks {
            // (No closures here: a closure would be compiled without the entry's features.)
            // SAFETY: i + step ≤ blocks ≤ n, asserted above to fit `input` and `output`;
            // with STREAM the wrapper aligned the output start to 64 bytes and the step is
            // a multiple of 64 bytes.
            unsafe {
                step::<L, I, M>(
                    l,
                    m,
                    zp,
                    src.wrapping_add(i * I::SIZE),
                    dst.wrapping_add(i),
                    STREAM,
                )
            };
            i += step_n;
        }
        if STREAM {
            l.fence();
        }
        if blocks == n {
            return;
        }
        if n >= step_n {
            // The last whole step ending at n: its first elements are recomputed, giving
            // the bytes already stored (the input does not change and cannot alias the
            // output).
            let at = n - step_n;
            // SAFETY: at + step = n fits both slices (asserted above); ordinary stores.
            unsafe {
                step::<L, I, M>(
                    l,
                    m,
                    zp,
                    src.wrapping_add(at * I::SIZE),
                    dst.wrapping_add(at),
                    false,
                )
            };
        } else {
            // Shorter than one step: the level's partial load and store (masked, or through
            // the stack); nothing outside the run is read or written.
            // SAFETY: n · I::SIZE bytes are readable at `src` (asserted above).
            let [a, b, c, d] = unsafe { l.load_step_partial::<I>(src, n) };
            let v = [
                l.convert::<M>(a, m),
                l.convert::<M>(b, m),
                l.convert::<M>(c, m),
                l.convert::<M>(d, m),
            ];
            let bytes = l.narrow_step::<I>(v, zp);
            // SAFETY: n bytes are writable at `dst` (asserted above).
            unsafe { l.store_partial(dst, bytes, n) };
        }
    }
}

/// The run function of level `L` for format `I` and mode `M`: every element through the
/// loop (non-temporal stores for runs of at least `L::STREAM_MIN`; see [`Body`] for the
/// remainder of a step).
fn run<L: QuantLanes, I: InputFormat, M: RoundingMode>(
    m: &Multiplier,
    zero_point: i32,
    input: &[u8],
    output: &mut [u8],
) {
    let n = output.len().min(input.len() / I::SIZE);
    let Some(lanes) = L::detect() else {
        // Not reached: the route table hands this function out only after detection.
        return exact::run::<I, M>(m, zero_point, input, output);
    };
    let (mf, zp) = (f32::from_bits(m.bits()), zero_point as i16);
    // Long runs stream their output: first bring the output to a 64-byte boundary with the
    // exact path, so that every vector store can be non-temporal.
    let stream = n >= L::STREAM_MIN;
    let head = if stream {
        ((64 - output.as_ptr() as usize % 64) % 64).min(n)
    } else {
        0
    };
    exact::run::<I, M>(m, zero_point, &input[..head * I::SIZE], &mut output[..head]);
    let (input, output) = (&input[head * I::SIZE..], &mut output[head..]);
    let n = n - head;
    macro_rules! body {
        ($stream:literal) => {
            lanes.vectorize(Body::<I, M, $stream> {
                m: mf,
                zero_point: zp,
                input,
                output,
                n,
                formats: core::marker::PhantomData,
            })
        };
    }
    if stream { body!(true) } else { body!(false) }
}

/// The run function of level `L` for `dtype` × `rounding`, or `None` when this CPU lacks the
/// level or the level does not take `dtype`.
pub(crate) fn run_fn<L: QuantLanes>(dtype: DType, rounding: Rounding) -> Option<RunFn> {
    struct Select<L>(core::marker::PhantomData<L>);
    impl<L: QuantLanes> Lift for Select<L> {
        type Output = RunFn;
        fn lift<I: InputFormat, M: RoundingMode>(self) -> RunFn {
            run::<L, I, M>
        }
    }
    L::detect()?;
    if dtype == DType::F16 && !L::TAKES_F16 {
        return None;
    }
    exact::lift(dtype, rounding, Select::<L>(core::marker::PhantomData))
}
