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
    /// Reads one element's raw bits from exactly `SIZE` little-endian bytes (zero-extended).
    fn load(bytes: &[u8]) -> u32;
    /// Decodes raw bits exactly.
    fn decode(bits: u32) -> Decoded;
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
    fn increment(_: bool, _: bool, _: Fraction) -> bool {
        false
    }
}
impl RoundingMode for NearestEven {
    const MODE: Rounding = Rounding::NearestEven;
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
    fn increment(negative: bool, _: bool, fraction: Fraction) -> bool {
        !negative && fraction != Fraction::Zero
    }
}
impl RoundingMode for TowardNegative {
    const MODE: Rounding = Rounding::TowardNegative;
    #[inline(always)]
    fn increment(negative: bool, _: bool, fraction: Fraction) -> bool {
        negative && fraction != Fraction::Zero
    }
}

/// Splits `value >> shift` into the truncated quotient and the fraction class.
/// `shift` may be anything; at or above 64 the quotient is 0.
#[inline(always)]
fn split(value: u64, shift: u32) -> (u64, Fraction) {
    if shift == 0 {
        return (value, Fraction::Zero);
    }
    if shift > 64 {
        let f = if value == 0 {
            Fraction::Zero
        } else {
            Fraction::Below
        };
        return (0, f);
    }
    let (quotient, remainder) = if shift == 64 {
        (0, value)
    } else {
        (value >> shift, value & ((1u64 << shift) - 1))
    };
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
    // Exact product of significands: ≤ 24 × 24 = 48 bits.
    let product = sx as u64 * m.significand as u64;
    let exponent = ex + m.exponent;
    let width = 64 - product.leading_zeros() as i32;
    // Step 2: round once to binary32 (24-bit significand, quantum ≥ 2^-149), nearest-even.
    let quantum = (exponent + width - 24).max(-149);
    let (s, q) = if quantum <= exponent {
        (product, exponent)
    } else {
        let (t, f) = split(product, (quantum - exponent) as u32);
        (
            t + NearestEven::increment(false, t & 1 != 0, f) as u64,
            quantum,
        )
    };
    if s == 0 {
        return 0;
    }
    // Step 3: round s · 2^q to an integer with mode M.
    let magnitude = if q >= 0 {
        if q >= 20 {
            WIDE_LIMIT as u64
        } else {
            (s << q).min(WIDE_LIMIT as u64)
        }
    } else {
        let (t, f) = split(s, (-q) as u32);
        (t + M::increment(negative, t & 1 != 0, f) as u64).min(WIDE_LIMIT as u64)
    };
    let magnitude = magnitude as i32;
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

fn kernels_dtype<M: RoundingMode>(dtype: DType) -> Option<Kernels> {
    match dtype {
        DType::F32 => Some(kernels_for::<F32, M>()),
        DType::BF16 => Some(kernels_for::<Bf16, M>()),
        DType::F16 => Some(kernels_for::<F16, M>()),
        DType::I8 => None,
    }
}

impl Kernels {
    /// The exact specialization for `dtype` × `rounding`; `None` for `I8` input.
    pub fn select(dtype: DType, rounding: Rounding) -> Option<Kernels> {
        match rounding {
            Rounding::TowardZero => kernels_dtype::<TowardZero>(dtype),
            Rounding::NearestEven => kernels_dtype::<NearestEven>(dtype),
            Rounding::TowardPositive => kernels_dtype::<TowardPositive>(dtype),
            Rounding::TowardNegative => kernels_dtype::<TowardNegative>(dtype),
        }
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
