//! The exact integer formulation of Quant (SPEC §3).
//!
//! For each element: decode the input exactly; form the exact product of significands with
//! the multiplier decoded once per plan ([`Multiplier`]); round it once to binary32
//! (nearest-even, gradual underflow, quantum 2^-149); round that to an integer with the
//! selected [`Rounding`]; add the zero point in a wide integer; saturate to [-128, 127].
//!
//! The dtype × rounding choice is made once per call through [`Kernels::select`], which
//! hands out monomorphized functions (12 specializations); nothing branches on the dtype
//! or the mode per element.

use core::fmt;

use crate::dtype::DType;
use crate::error::AdmissionError;

/// Integer rounding mode applied to the binary32 product (SPEC §3). Wire codes are those of
/// SPEC §7.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(u32)]
pub enum Rounding {
    /// Truncation (wire code 0).
    TowardZero = 0,
    /// Round half to even (wire code 1); the default.
    #[default]
    NearestEven = 1,
    /// Ceiling (wire code 2).
    TowardPositive = 2,
    /// Floor (wire code 3).
    TowardNegative = 3,
}

impl Rounding {
    /// All four modes, in wire-code order.
    pub const ALL: [Rounding; 4] = [
        Rounding::TowardZero,
        Rounding::NearestEven,
        Rounding::TowardPositive,
        Rounding::TowardNegative,
    ];

    /// Wire code (SPEC §7).
    pub const fn code(self) -> u32 {
        self as u32
    }

    /// CLI name: `toward-zero`, `nearest-even`, `toward-positive`, `toward-negative`.
    pub const fn name(self) -> &'static str {
        match self {
            Rounding::TowardZero => "toward-zero",
            Rounding::NearestEven => "nearest-even",
            Rounding::TowardPositive => "toward-positive",
            Rounding::TowardNegative => "toward-negative",
        }
    }
}

impl TryFrom<u32> for Rounding {
    type Error = AdmissionError;

    /// Decodes a wire code.
    ///
    /// # Errors
    ///
    /// [`AdmissionError::RoundingCode`] for codes above 3.
    fn try_from(code: u32) -> Result<Self, Self::Error> {
        match code {
            0 => Ok(Rounding::TowardZero),
            1 => Ok(Rounding::NearestEven),
            2 => Ok(Rounding::TowardPositive),
            3 => Ok(Rounding::TowardNegative),
            _ => Err(AdmissionError::RoundingCode { code }),
        }
    }
}

impl fmt::Display for Rounding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A multiplier decoded once per plan: `m = significand · 2^exponent` with an odd
/// significand (≤ 24 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Multiplier {
    bits: u32,
    significand: u32,
    exponent: i32,
}

impl Multiplier {
    /// The multiplier 1.0.
    pub const ONE: Multiplier = Multiplier {
        bits: 0x3f80_0000,
        significand: 1,
        exponent: 0,
    };

    /// Decodes binary32 `bits` (SPEC §3: finite, > 0, subnormals allowed). Integer code only.
    ///
    /// # Errors
    ///
    /// [`AdmissionError::MultiplierNotFinite`] for NaN or ±∞;
    /// [`AdmissionError::MultiplierNotPositive`] for ±0 and negative values.
    pub const fn from_bits(bits: u32) -> Result<Multiplier, AdmissionError> {
        let exp_field = (bits >> 23) & 0xff;
        if exp_field == 0xff {
            return Err(AdmissionError::MultiplierNotFinite { bits });
        }
        if bits & 0x8000_0000 != 0 || bits == 0 {
            return Err(AdmissionError::MultiplierNotPositive { bits });
        }
        let mantissa = bits & 0x7f_ffff;
        let (mut significand, mut exponent) = if exp_field == 0 {
            (mantissa, -149)
        } else {
            (mantissa | 0x80_0000, exp_field as i32 - 150)
        };
        let tz = significand.trailing_zeros();
        significand >>= tz;
        exponent += tz as i32;
        Ok(Multiplier {
            bits,
            significand,
            exponent,
        })
    }

    /// The binary32 bits of the multiplier.
    pub const fn bits(&self) -> u32 {
        self.bits
    }

    /// The odd significand.
    pub const fn significand(&self) -> u32 {
        self.significand
    }

    /// The power-of-two exponent: `m = significand · 2^exponent`.
    pub const fn exponent(&self) -> i32 {
        self.exponent
    }

    /// `Some(k)` when the multiplier is exactly `2^k`.
    pub const fn power_of_two(&self) -> Option<i32> {
        if self.significand == 1 {
            Some(self.exponent)
        } else {
            None
        }
    }
}

/// Bound on the magnitude of a wide (pre-saturation) result: anything at or above it
/// saturates for every zero point in [-128, 127].
pub const WIDE_LIMIT: i32 = 1 << 20;

/// An input element decoded exactly: `±significand · 2^exponent`, or a special value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded {
    /// ±0 (and nothing else).
    Zero,
    /// Any NaN.
    Nan,
    /// An infinity (`true` when negative).
    Inf(bool),
    /// A nonzero finite value.
    Finite {
        /// Sign (`true` when negative).
        negative: bool,
        /// Integer significand (nonzero, ≤ 24 bits).
        significand: u32,
        /// Power-of-two exponent.
        exponent: i32,
    },
}

/// An input dtype's decoding, for monomorphized kernels.
pub trait InputFormat {
    /// The dtype.
    const DTYPE: DType;
    /// Element size in bytes.
    const SIZE: usize;
    /// Whether a nonzero value can be an FP32 subnormal once widened (false for FP16:
    /// every nonzero half is a normal binary32).
    const MAY_BE_SUBNORMAL: bool;
    /// Reads one element's raw bits from exactly `SIZE` little-endian bytes (zero-extended).
    fn load(bytes: &[u8]) -> u32;
    /// Decodes raw bits exactly.
    fn decode(bits: u32) -> Decoded;
    /// Widens raw bits to the binary32 bits of the same value, exactly (integer code only;
    /// NaN payloads kept in the high mantissa bits).
    fn to_f32_bits(bits: u32) -> u32;
}

/// FP32 input.
#[derive(Debug)]
pub enum F32 {}
/// BF16 input (`bits << 16` as FP32).
#[derive(Debug)]
pub enum Bf16 {}
/// IEEE FP16 input.
#[derive(Debug)]
pub enum F16 {}

#[inline(always)]
fn decode_f32(bits: u32) -> Decoded {
    let negative = bits >> 31 != 0;
    let exp_field = (bits >> 23) & 0xff;
    let mantissa = bits & 0x7f_ffff;
    match exp_field {
        0xff if mantissa != 0 => Decoded::Nan,
        0xff => Decoded::Inf(negative),
        0 if mantissa == 0 => Decoded::Zero,
        0 => Decoded::Finite {
            negative,
            significand: mantissa,
            exponent: -149,
        },
        _ => Decoded::Finite {
            negative,
            significand: mantissa | 0x80_0000,
            exponent: exp_field as i32 - 150,
        },
    }
}

impl InputFormat for F32 {
    const DTYPE: DType = DType::F32;
    const SIZE: usize = 4;
    const MAY_BE_SUBNORMAL: bool = true;
    #[inline(always)]
    fn to_f32_bits(bits: u32) -> u32 {
        bits
    }
    #[inline(always)]
    fn load(bytes: &[u8]) -> u32 {
        match bytes {
            [a, b, c, d] => u32::from_le_bytes([*a, *b, *c, *d]),
            _ => 0,
        }
    }
    #[inline(always)]
    fn decode(bits: u32) -> Decoded {
        decode_f32(bits)
    }
}

impl InputFormat for Bf16 {
    const DTYPE: DType = DType::BF16;
    const SIZE: usize = 2;
    const MAY_BE_SUBNORMAL: bool = true;
    #[inline(always)]
    fn to_f32_bits(bits: u32) -> u32 {
        bits << 16
    }
    #[inline(always)]
    fn load(bytes: &[u8]) -> u32 {
        match bytes {
            [a, b] => u16::from_le_bytes([*a, *b]) as u32,
            _ => 0,
        }
    }
    #[inline(always)]
    fn decode(bits: u32) -> Decoded {
        decode_f32(bits << 16)
    }
}

impl InputFormat for F16 {
    const DTYPE: DType = DType::F16;
    const SIZE: usize = 2;
    const MAY_BE_SUBNORMAL: bool = false;
    #[inline(always)]
    fn to_f32_bits(bits: u32) -> u32 {
        crate::arith::cast::f16_to_f32_bits(bits as u16)
    }
    #[inline(always)]
    fn load(bytes: &[u8]) -> u32 {
        match bytes {
            [a, b] => u16::from_le_bytes([*a, *b]) as u32,
            _ => 0,
        }
    }
    #[inline(always)]
    fn decode(bits: u32) -> Decoded {
        let negative = (bits >> 15) & 1 != 0;
        let exp_field = (bits >> 10) & 0x1f;
        let mantissa = bits & 0x3ff;
        match exp_field {
            0x1f if mantissa != 0 => Decoded::Nan,
            0x1f => Decoded::Inf(negative),
            0 if mantissa == 0 => Decoded::Zero,
            0 => Decoded::Finite {
                negative,
                significand: mantissa,
                exponent: -24,
            },
            _ => Decoded::Finite {
                negative,
                significand: mantissa | 0x400,
                exponent: exp_field as i32 - 25,
            },
        }
    }
}

/// Where the discarded fraction lies relative to one half.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fraction {
    /// Zero: the value was an integer.
    Zero,
    /// Nonzero, below one half.
    Below,
    /// Exactly one half.
    Half,
    /// Above one half.
    Above,
}

/// An integer rounding mode as a type, for monomorphized kernels.
pub trait RoundingMode {
    /// The mode.
    const MODE: Rounding;
    /// Whether the truncated magnitude must be incremented.
    fn increment(negative: bool, odd: bool, fraction: Fraction) -> bool;
    /// The magnitude `value · 2^-shift` rounded to an integer with this mode (the sign is
    /// `negative`), for `1 ≤ shift ≤ 63` and `value < 2^62`: the truncated quotient plus
    /// [`increment`](RoundingMode::increment). The modes override it with a branch-free
    /// bias added before the shift.
    #[inline(always)]
    fn round_shift(value: u64, shift: u32, negative: bool) -> u64 {
        let (t, f) = split(value, shift);
        t + Self::increment(negative, t & 1 != 0, f) as u64
    }
}

/// [`Rounding::TowardZero`] as a type.
#[derive(Debug)]
pub enum TowardZero {}
/// [`Rounding::NearestEven`] as a type.
#[derive(Debug)]
pub enum NearestEven {}
/// [`Rounding::TowardPositive`] as a type.
#[derive(Debug)]
pub enum TowardPositive {}
/// [`Rounding::TowardNegative`] as a type.
#[derive(Debug)]
pub enum TowardNegative {}

impl RoundingMode for TowardZero {
    const MODE: Rounding = Rounding::TowardZero;
    #[inline(always)]
    fn round_shift(value: u64, shift: u32, _: bool) -> u64 {
        value >> shift
    }
    #[inline(always)]
    fn increment(_: bool, _: bool, _: Fraction) -> bool {
        false
    }
}
impl RoundingMode for NearestEven {
    const MODE: Rounding = Rounding::NearestEven;
    #[inline(always)]
    fn round_shift(value: u64, shift: u32, _: bool) -> u64 {
        // With a bias of one half − 1 plus the quotient's parity, the quotient moves up only
        // for a fraction above one half, or exactly one half on an odd quotient.
        let half = 1u64 << (shift - 1);
        (value + (half - 1) + ((value >> shift) & 1)) >> shift
    }
    #[inline(always)]
    fn increment(_: bool, odd: bool, fraction: Fraction) -> bool {
        match fraction {
            Fraction::Above => true,
            Fraction::Half => odd,
            Fraction::Zero | Fraction::Below => false,
        }
    }
}
impl RoundingMode for TowardPositive {
    const MODE: Rounding = Rounding::TowardPositive;
    #[inline(always)]
    fn round_shift(value: u64, shift: u32, negative: bool) -> u64 {
        // Ceiling of the magnitude when positive, truncation when negative.
        let bias = ((1u64 << shift) - 1) & (negative as u64).wrapping_sub(1);
        (value + bias) >> shift
    }
    #[inline(always)]
    fn increment(negative: bool, _: bool, fraction: Fraction) -> bool {
        !negative && fraction != Fraction::Zero
    }
}
impl RoundingMode for TowardNegative {
    const MODE: Rounding = Rounding::TowardNegative;
    #[inline(always)]
    fn round_shift(value: u64, shift: u32, negative: bool) -> u64 {
        // Ceiling of the magnitude when negative, truncation when positive.
        let bias = ((1u64 << shift) - 1) & (negative as u64).wrapping_neg();
        (value + bias) >> shift
    }
    #[inline(always)]
    fn increment(negative: bool, _: bool, fraction: Fraction) -> bool {
        negative && fraction != Fraction::Zero
    }
}

/// Splits `value >> shift` into the truncated quotient and the fraction class, for
/// `1 ≤ shift ≤ 63`.
#[inline(always)]
fn split(value: u64, shift: u32) -> (u64, Fraction) {
    debug_assert!((1..=63).contains(&shift));
    let quotient = value >> shift;
    let remainder = value & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    let f = if remainder == 0 {
        Fraction::Zero
    } else if remainder < half {
        Fraction::Below
    } else if remainder == half {
        Fraction::Half
    } else {
        Fraction::Above
    };
    (quotient, f)
}

/// The wide (pre-zero-point, pre-saturation) result of one element: the binary32 product
/// rounded to an integer with mode `M`, bounded to ±[`WIDE_LIMIT`]. NaN gives 0 (so the
/// output is the zero point), ±∞ gives ±`WIDE_LIMIT`.
///
/// The exact product `|x·m| = p · 2^e` (p ≤ 48 bits) is classified by `top = ⌊log2 |x·m|⌋`
/// before any rounding, which is exact because rounding to binary32 is monotone and the
/// bounds 2^20 and 0.5 are binary32 values:
///
/// - `top ≥ 20`: the binary32 product is at least 2^20, so the result is ±`WIDE_LIMIT`;
/// - `-1 ≤ top ≤ 19`: the binary32 product is normal with quantum `2^(top-23)`: step 2
///   rounds p to a 24-bit significand s (nearest-even; a carry gives 2^24), and step 3
///   rounds `s · 2^(top-23)` to an integer, a right shift by `23 - top` ∈ [4, 24];
/// - `top ≤ -2`: the binary32 product is at most 0.5, and 0 exactly when `|x·m| ≤ 2^-150`
///   (the tie at 2^-150 goes to even); the integer is 0 plus the mode's increment for a
///   nonzero fraction below or at one half (the same for every mode, as the quotient 0 is
///   even).
#[inline(always)]
pub fn wide<M: RoundingMode>(m: &Multiplier, x: Decoded) -> i32 {
    let (negative, sx, ex) = match x {
        Decoded::Zero | Decoded::Nan => return 0,
        Decoded::Inf(neg) => return if neg { -WIDE_LIMIT } else { WIDE_LIMIT },
        Decoded::Finite {
            negative,
            significand,
            exponent,
        } => (negative, significand, exponent),
    };
    // Exact product of significands: nonzero, ≤ 24 × 24 = 48 bits.
    let product = sx as u64 * m.significand as u64;
    let width = 64 - product.leading_zeros() as i32;
    let top = ex + m.exponent + width - 1;
    let magnitude = if top >= 20 {
        WIDE_LIMIT
    } else if top >= -1 {
        // Step 2: the 24-bit significand (≤ 2^24 after a carry) of quantum 2^(top-23).
        let s = if width > 24 {
            NearestEven::round_shift(product, (width - 24) as u32, false)
        } else {
            product << (24 - width)
        };
        // Step 3: round s · 2^(top-23) to an integer with mode M.
        M::round_shift(s, (23 - top) as u32, negative).min(WIDE_LIMIT as u64) as i32
    } else {
        let nonzero = top > -150 || (top == -150 && !product.is_power_of_two());
        if nonzero {
            M::increment(negative, false, Fraction::Below) as i32
        } else {
            0
        }
    };
    if negative { -magnitude } else { magnitude }
}

/// [`wide`] for the multiplier 1 on binary32 `bits`: step 3 alone (a binary32 value needs no
/// step 2), rounding the value to an integer with mode `M`, bounded to ±[`WIDE_LIMIT`]; NaN
/// gives 0. Equal to `wide::<M>(&Multiplier::ONE, F32::decode(bits))`, without the product.
#[inline(always)]
pub fn wide_binary32<M: RoundingMode>(bits: u32) -> i32 {
    let negative = bits >> 31 != 0;
    let exp_field = ((bits >> 23) & 0xff) as i32;
    let mantissa = bits & 0x7f_ffff;
    let magnitude = if exp_field >= 127 + 20 {
        // At least 2^20, an infinity or a NaN.
        if exp_field == 0xff && mantissa != 0 {
            return 0;
        }
        WIDE_LIMIT
    } else if exp_field >= 126 {
        // [0.5, 2^20): significand · 2^(exp_field - 150), a right shift by 4..=24.
        let s = (mantissa | 0x80_0000) as u64;
        M::round_shift(s, (150 - exp_field) as u32, negative).min(WIDE_LIMIT as u64) as i32
    } else if bits & 0x7fff_ffff == 0 {
        0
    } else {
        // Nonzero and below one half: the quotient is 0 (even).
        M::increment(negative, false, Fraction::Below) as i32
    };
    if negative { -magnitude } else { magnitude }
}

/// Steps 4–5: adds the zero point to a wide result and saturates to [-128, 127].
#[inline(always)]
pub fn saturate(wide: i32, zero_point: i32) -> i8 {
    (wide + zero_point).clamp(-128, 127) as i8
}

/// Quantizes one element's raw bits with input format `I` and mode `M`.
#[inline(always)]
pub fn element<I: InputFormat, M: RoundingMode>(m: &Multiplier, zero_point: i32, bits: u32) -> i8 {
    saturate(wide::<M>(m, I::decode(bits)), zero_point)
}

/// Quantizes a contiguous run: `input` holds `output.len()` little-endian elements of `I`.
/// Extra input bytes are ignored; a short input leaves the rest of `output` untouched.
#[inline(always)]
pub fn run<I: InputFormat, M: RoundingMode>(
    m: &Multiplier,
    zero_point: i32,
    input: &[u8],
    output: &mut [u8],
) {
    for (chunk, out) in input.chunks_exact(I::SIZE).zip(output.iter_mut()) {
        *out = element::<I, M>(m, zero_point, I::load(chunk)) as u8;
    }
}

/// Quantizes one element given its raw bits (zero-extended); see [`element`].
pub type ElementFn = fn(&Multiplier, i32, u32) -> i8;
/// Quantizes a contiguous run of little-endian input bytes into INT8 bytes; see [`run`].
pub type RunFn = fn(&Multiplier, i32, &[u8], &mut [u8]);
/// Wide result of one element's raw bits; see [`wide`].
pub type WideFn = fn(&Multiplier, u32) -> i32;

/// The exact functions for one dtype × rounding pair, chosen once per plan.
#[derive(Clone, Copy)]
pub struct Kernels {
    /// Input dtype.
    pub dtype: DType,
    /// Rounding mode.
    pub rounding: Rounding,
    /// Per-element function.
    pub element: ElementFn,
    /// Contiguous-run function.
    pub run: RunFn,
    /// Wide (pre-saturation) result, for statistics such as saturation counts.
    pub wide: WideFn,
}

impl fmt::Debug for Kernels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernels")
            .field("dtype", &self.dtype)
            .field("rounding", &self.rounding)
            .finish_non_exhaustive()
    }
}

fn wide_of<I: InputFormat, M: RoundingMode>(m: &Multiplier, bits: u32) -> i32 {
    wide::<M>(m, I::decode(bits))
}

fn kernels_for<I: InputFormat, M: RoundingMode>() -> Kernels {
    Kernels {
        dtype: I::DTYPE,
        rounding: M::MODE,
        element: element::<I, M>,
        run: run::<I, M>,
        wide: wide_of::<I, M>,
    }
}

/// A computation generic over an input format, lifted from a run-time [`DType`] by
/// [`lift_format`].
pub trait FormatLift {
    /// What the computation gives.
    type Output;
    /// The computation for input format `I`.
    fn lift<I: InputFormat>(self) -> Self::Output;
}

/// A computation generic over an input format and a rounding mode, lifted from a run-time
/// ([`DType`], [`Rounding`]) pair by [`lift`].
pub trait Lift {
    /// What the computation gives.
    type Output;
    /// The computation for input format `I` and rounding mode `M`.
    fn lift<I: InputFormat, M: RoundingMode>(self) -> Self::Output;
}

/// Runs `f` for the input format of `dtype`: the one place a run-time dtype becomes a type
/// ([`F32`], [`Bf16`], [`F16`]); `None` for `I8`, which is no input format.
#[inline]
pub fn lift_format<L: FormatLift>(dtype: DType, f: L) -> Option<L::Output> {
    match dtype {
        DType::F32 => Some(f.lift::<F32>()),
        DType::BF16 => Some(f.lift::<Bf16>()),
        DType::F16 => Some(f.lift::<F16>()),
        DType::I8 | DType::I16 | DType::I32 => None,
    }
}

/// Runs `f` for the input format of `dtype` and the mode type of `rounding`: the one place a
/// run-time (dtype, rounding) pair becomes types, used by the exact path ([`Kernels::select`]),
/// the A65 kernels and the EV74 firmware's entries. `None` for `I8` input.
#[inline]
pub fn lift<L: Lift>(dtype: DType, rounding: Rounding, f: L) -> Option<L::Output> {
    struct WithMode<L>(L, Rounding);
    impl<L: Lift> FormatLift for WithMode<L> {
        type Output = L::Output;
        #[inline(always)]
        fn lift<I: InputFormat>(self) -> L::Output {
            let WithMode(f, rounding) = self;
            match rounding {
                Rounding::TowardZero => f.lift::<I, TowardZero>(),
                Rounding::NearestEven => f.lift::<I, NearestEven>(),
                Rounding::TowardPositive => f.lift::<I, TowardPositive>(),
                Rounding::TowardNegative => f.lift::<I, TowardNegative>(),
            }
        }
    }
    lift_format(dtype, WithMode(f, rounding))
}

impl Kernels {
    /// The exact specialization for `dtype` × `rounding`; `None` for `I8` input.
    pub fn select(dtype: DType, rounding: Rounding) -> Option<Kernels> {
        struct Select;
        impl Lift for Select {
            type Output = Kernels;
            fn lift<I: InputFormat, M: RoundingMode>(self) -> Kernels {
                kernels_for::<I, M>()
            }
        }
        lift(dtype, rounding, Select)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn q(dtype: DType, rounding: Rounding, m: u32, zp: i32, bits: u32) -> i8 {
        let m = Multiplier::from_bits(m).unwrap();
        (Kernels::select(dtype, rounding).unwrap().element)(&m, zp, bits)
    }

    #[test]
    fn spec_worked_examples() {
        // 15 × 0x3e99999a → binary32 4.5 → nearest-even 4.
        assert_eq!(
            q(
                DType::F32,
                Rounding::NearestEven,
                0x3e99_999a,
                0,
                15f32.to_bits()
            ),
            4
        );
        // Product 200 with zero point −100 → 100.
        assert_eq!(
            q(
                DType::F32,
                Rounding::NearestEven,
                0x3f80_0000,
                -100,
                200f32.to_bits()
            ),
            100
        );
        // 1.25 × 2 with zero point −3 → −1.
        assert_eq!(
            q(
                DType::F32,
                Rounding::NearestEven,
                0x4000_0000,
                -3,
                1.25f32.to_bits()
            ),
            -1
        );
    }

    /// The step-by-step formulation of SPEC §3 (round the product to binary32 by its
    /// quantum, then to an integer), kept as a reference for the classified [`wide`].
    fn wide_reference<M: RoundingMode>(m: &Multiplier, x: Decoded) -> i32 {
        fn split_any(value: u64, shift: u32) -> (u64, Fraction) {
            if shift == 0 {
                return (value, Fraction::Zero);
            }
            if shift >= 64 {
                let below = shift > 64 || value < 1 << 63;
                let f = match (value, below) {
                    (0, _) => Fraction::Zero,
                    (_, true) => Fraction::Below,
                    (v, false) if v == 1 << 63 => Fraction::Half,
                    _ => Fraction::Above,
                };
                return (0, f);
            }
            split(value, shift)
        }
        let (negative, sx, ex) = match x {
            Decoded::Zero | Decoded::Nan => return 0,
            Decoded::Inf(neg) => return if neg { -WIDE_LIMIT } else { WIDE_LIMIT },
            Decoded::Finite {
                negative,
                significand,
                exponent,
            } => (negative, significand, exponent),
        };
        let product = sx as u64 * m.significand as u64;
        let exponent = ex + m.exponent;
        let width = 64 - product.leading_zeros() as i32;
        let quantum = (exponent + width - 24).max(-149);
        let (s, q) = if quantum <= exponent {
            (product, exponent)
        } else {
            let (t, f) = split_any(product, (quantum - exponent) as u32);
            (
                t + NearestEven::increment(false, t & 1 != 0, f) as u64,
                quantum,
            )
        };
        if s == 0 {
            return 0;
        }
        let magnitude = if q >= 0 {
            if q >= 20 {
                WIDE_LIMIT as u64
            } else {
                (s << q).min(WIDE_LIMIT as u64)
            }
        } else {
            let (t, f) = split_any(s, (-q) as u32);
            (t + M::increment(negative, t & 1 != 0, f) as u64).min(WIDE_LIMIT as u64)
        };
        let magnitude = magnitude as i32;
        if negative { -magnitude } else { magnitude }
    }

    fn agrees_with_reference<M: RoundingMode>(m: &Multiplier) {
        // Every 1021st FP32 pattern plus every pattern near the class boundaries.
        let near = |e: u32| (0..1 << 12).map(move |k| (e << 23) | (k * 2047 % 0x80_0000));
        let patterns = (0..=u32::MAX / 1021)
            .map(|k| k * 1021)
            .chain((0..256).flat_map(near))
            .chain((0..256).flat_map(near).map(|b| b | 0x8000_0000))
            .chain([1, 2, 3, 0x7f_ffff, 0x80_0000]);
        for bits in patterns {
            let x = F32::decode(bits);
            assert_eq!(
                wide::<M>(m, x),
                wide_reference::<M>(m, x),
                "{bits:#010x} x {:#010x}, {}",
                m.bits(),
                M::MODE
            );
        }
    }

    #[test]
    fn classified_wide_agrees_with_the_stepwise_formulation() {
        for bits in [
            0x3f00_0000,
            0x3e99_999a,
            0x0000_0001,
            0x0000_0003,
            0x0040_0001,
            0x007f_ffff,
            0x0080_0000,
            0x3f80_0000,
            0x3f7f_ffff,
            0x4b7f_ffff,
            0x7f00_0000,
            0x7f7f_ffff,
        ] {
            let m = Multiplier::from_bits(bits).unwrap();
            agrees_with_reference::<TowardZero>(&m);
            agrees_with_reference::<NearestEven>(&m);
            agrees_with_reference::<TowardPositive>(&m);
            agrees_with_reference::<TowardNegative>(&m);
        }
    }

    #[test]
    fn wide_binary32_is_wide_by_one() {
        let near = |e: u32| (0..1 << 12).map(move |k| (e << 23) | (k * 2047 % 0x80_0000));
        let patterns = (0..=u32::MAX / 1021)
            .map(|k| k * 1021)
            .chain((0..256).flat_map(near))
            .chain((0..256).flat_map(near).map(|b| b | 0x8000_0000))
            .chain([
                0x7f80_0000,
                0xff80_0000,
                0x7fc0_0000,
                0x7f80_0001,
                0xffff_ffff,
            ]);
        for bits in patterns {
            let x = F32::decode(bits);
            let one = &Multiplier::ONE;
            assert_eq!(
                wide_binary32::<TowardZero>(bits),
                wide::<TowardZero>(one, x)
            );
            assert_eq!(
                wide_binary32::<NearestEven>(bits),
                wide::<NearestEven>(one, x)
            );
            assert_eq!(
                wide_binary32::<TowardPositive>(bits),
                wide::<TowardPositive>(one, x)
            );
            assert_eq!(
                wide_binary32::<TowardNegative>(bits),
                wide::<TowardNegative>(one, x)
            );
        }
    }

    /// The multiplier in its original binary32 representation: the full significand (the
    /// implicit bit included; a subnormal's mantissa) and exponent, without the reduction to
    /// an odd significand that [`Multiplier::from_bits`] applies.
    fn unreduced(bits: u32) -> Multiplier {
        let exp_field = (bits >> 23) & 0xff;
        let mantissa = bits & 0x7f_ffff;
        let (significand, exponent) = if exp_field == 0 {
            (mantissa, -149)
        } else {
            (mantissa | 0x80_0000, exp_field as i32 - 150)
        };
        Multiplier {
            bits,
            significand,
            exponent,
        }
    }

    /// SPEC §3 step by step in binary64 (the product of two ≤ 24-bit significands is exact
    /// there and far from its underflow; `as f32` rounds once, nearest-even, with gradual
    /// underflow), then the integer mode, the zero point and saturation. Independent of the
    /// integer code under test; FP16 decoded by the `half` crate.
    fn oracle(dtype: DType, rounding: Rounding, m: u32, zp: i32, bits: u32) -> i8 {
        extern crate std;
        let x = match dtype {
            DType::F32 => f64::from(f32::from_bits(bits)),
            DType::BF16 => f64::from(f32::from_bits(bits << 16)),
            DType::F16 => half::f16::from_bits(bits as u16).to_f64(),
            DType::I8 | DType::I16 | DType::I32 => {
                unreachable!("integer dtype {dtype:?} is not a Quant input")
            }
        };
        let p = (x * f64::from(f32::from_bits(m))) as f32;
        if p.is_nan() {
            return zp as i8;
        }
        let r = match rounding {
            Rounding::TowardZero => p.trunc(),
            Rounding::NearestEven => p.round_ties_even(),
            Rounding::TowardPositive => p.ceil(),
            Rounding::TowardNegative => p.floor(),
        };
        (f64::from(r) + f64::from(zp)).clamp(-128.0, 127.0) as i8
    }

    /// Multipliers at the representation's edges: powers of two (significand 1 reduced,
    /// 2^23 unreduced), even significands, subnormals, the extremes and ordinary values.
    const MULTIPLIERS: [u32; 16] = [
        0x3f80_0000, // 1
        0x3f00_0000, // 0.5
        0x4000_0000, // 2
        0x3e99_999a, // 0.3 (even significand: one trailing zero)
        0x3fc0_0000, // 1.5 (significand 3)
        0x3c00_0000, // 2^-7
        0x4b00_0000, // 2^23
        0x3f7f_ffff, // just below 1 (odd)
        0x0000_0001, // smallest subnormal
        0x0000_0100, // subnormal power of two
        0x0040_0000, // subnormal 2^-127
        0x007f_ffff, // largest subnormal
        0x0080_0000, // smallest normal
        0x7f00_0000, // 2^127
        0x7f7f_ffff, // largest finite
        0x3a83_126f, // 0.001
    ];

    /// Runs `dtype × rounding` on `inputs` with both representations of every multiplier,
    /// element by element and as one run, against [`oracle`].
    fn both_representations_agree(dtype: DType, inputs: &[u32]) -> usize {
        let size = dtype.size();
        let bytes: std::vec::Vec<u8> = inputs
            .iter()
            .flat_map(|&b| b.to_le_bytes().into_iter().take(size))
            .collect();
        let mut checked = 0;
        for rounding in Rounding::ALL {
            let k = Kernels::select(dtype, rounding).unwrap();
            for m in MULTIPLIERS {
                let reduced = Multiplier::from_bits(m).unwrap();
                let original = unreduced(m);
                for zp in [0, -3, 127] {
                    let want: std::vec::Vec<u8> = inputs
                        .iter()
                        .map(|&b| oracle(dtype, rounding, m, zp, b) as u8)
                        .collect();
                    for rep in [&reduced, &original] {
                        let mut out = std::vec![0x55u8; inputs.len()];
                        (k.run)(rep, zp, &bytes, &mut out);
                        for ((&b, &w), &o) in inputs.iter().zip(&want).zip(&out) {
                            assert_eq!(
                                (k.element)(rep, zp, b) as u8,
                                w,
                                "{dtype} {rounding} m {m:#010x} ({} × 2^{}) zp {zp} x {b:#x}",
                                rep.significand,
                                rep.exponent
                            );
                            assert_eq!(o, w, "run: {dtype} {rounding} m {m:#010x} x {b:#x}");
                        }
                        checked += inputs.len();
                    }
                }
            }
        }
        checked
    }

    extern crate std;

    #[test]
    fn both_multiplier_representations_agree_with_the_oracle_on_every_16_bit_pattern() {
        // The two representations differ wherever the significand has trailing zeros (all
        // but the five odd ones).
        let differ = MULTIPLIERS
            .iter()
            .filter(|&&m| unreduced(m) != Multiplier::from_bits(m).unwrap())
            .count();
        assert_eq!(differ, 11);
        assert_eq!(unreduced(0x3f80_0000).significand, 0x80_0000);
        let all: std::vec::Vec<u32> = (0..=u32::from(u16::MAX)).collect();
        for dtype in [DType::BF16, DType::F16] {
            let n = both_representations_agree(dtype, &all);
            assert_eq!(n, 4 * 16 * 3 * 2 * 65536);
        }
    }

    #[test]
    fn both_multiplier_representations_agree_with_the_oracle_on_fp32_boundary_classes() {
        // Every exponent field and sign with mantissas at the class edges (zero, smallest
        // and largest subnormal/normal significands, halves), NaN and ∞ patterns included...
        let mantissas = [
            0, 1, 2, 3, 0x3f_ffff, 0x40_0000, 0x40_0001, 0x7f_fffe, 0x7f_ffff,
        ];
        let mut inputs: std::vec::Vec<u32> = (0..2u32)
            .flat_map(|s| (0..256u32).map(move |e| (s << 31) | (e << 23)))
            .flat_map(|b| mantissas.map(|m| b | m))
            .collect();
        // ... and, for each multiplier, the inputs whose products land within a few ulps of
        // the boundaries: 2^-150 (the tie to zero), 2^-149, one half, the integer ties 1.5
        // and 2.5, 2^20 (the wide bound), 2^24 and the binary32 overflow.
        for m in MULTIPLIERS {
            let m = f64::from(f32::from_bits(m));
            for t in [
                2f64.powi(-150),
                2f64.powi(-149),
                0.5,
                1.5,
                2.5,
                127.5,
                2f64.powi(20),
                2f64.powi(24),
                f64::from(f32::MAX),
            ] {
                let x = (t / m) as f32;
                if x.is_finite() && x != 0.0 {
                    for d in -3i32..=3 {
                        let b = x.to_bits().wrapping_add_signed(d);
                        inputs.extend([b, b | 0x8000_0000]);
                    }
                }
            }
        }
        let n = both_representations_agree(DType::F32, &inputs);
        assert!(n > 4 * 16 * 3 * 2 * 4608);
    }

    #[test]
    fn multiplier_decoding() {
        assert_eq!(Multiplier::from_bits(0x3f80_0000), Ok(Multiplier::ONE));
        assert_eq!(
            Multiplier::from_bits(0x3f80_0000).unwrap().power_of_two(),
            Some(0)
        );
        assert_eq!(Multiplier::from_bits(1).unwrap().power_of_two(), Some(-149));
        assert_eq!(
            Multiplier::from_bits(0x7f80_0000),
            Err(AdmissionError::MultiplierNotFinite { bits: 0x7f80_0000 })
        );
        assert_eq!(
            Multiplier::from_bits(0x8000_0000),
            Err(AdmissionError::MultiplierNotPositive { bits: 0x8000_0000 })
        );
    }
}
