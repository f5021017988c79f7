//! Shared fixtures for simak's integration tests.
//!
//! [`oracle`] is the independent reference of SPEC §3: it shares no code with the library's
//! arithmetic. It forms the exact product in `f64` (every binary32 × binary32 product is
//! exact there), rounds it once with `as f32` (round-to-nearest-even, subnormals kept,
//! overflow to ±∞), then applies the integer mode with `f64` rounding functions.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod oracle {
    //! The independent f64 Quant oracle.

    use simak_core::DType;
    use simak_core::arith::quant::Rounding;

    /// Exact value of one input element given its raw bits, as `f64`.
    ///
    /// # Panics
    ///
    /// For `DType::I8`, which is not a Quant input.
    pub fn decode(dtype: DType, bits: u32) -> f64 {
        match dtype {
            DType::F32 => f32::from_bits(bits) as f64,
            DType::BF16 => f32::from_bits(bits << 16) as f64,
            DType::F16 => half::f16::from_bits(bits as u16).to_f64(),
            DType::I8 => panic!("i8 is not a quant input"),
        }
    }

    /// The binary32 product `x · m` (step 2 of SPEC §3), via an exact f64 product.
    pub fn product(x: f64, multiplier_bits: u32) -> f32 {
        (x * f32::from_bits(multiplier_bits) as f64) as f32
    }

    /// `r + zero_point` before saturation, as `f64` (NaN gives the zero point, ±∞ stays).
    pub fn unsaturated(x: f64, multiplier_bits: u32, zero_point: i32, rounding: Rounding) -> f64 {
        if x.is_nan() {
            return zero_point as f64;
        }
        let p = product(x, multiplier_bits) as f64;
        let r = match rounding {
            Rounding::NearestEven => p.round_ties_even(),
            Rounding::TowardZero => p.trunc(),
            Rounding::TowardPositive => p.ceil(),
            Rounding::TowardNegative => p.floor(),
        };
        r + zero_point as f64
    }

    /// The INT8 result of SPEC §3 for one element's raw bits.
    pub fn quant(
        dtype: DType,
        bits: u32,
        multiplier_bits: u32,
        zero_point: i32,
        rounding: Rounding,
    ) -> i8 {
        unsaturated(decode(dtype, bits), multiplier_bits, zero_point, rounding).clamp(-128.0, 127.0)
            as i8
    }

    /// Whether `r + zero_point` falls outside [-128, 127] (the CLI's saturation count).
    pub fn saturates(
        dtype: DType,
        bits: u32,
        multiplier_bits: u32,
        zero_point: i32,
        rounding: Rounding,
    ) -> bool {
        let v = unsaturated(decode(dtype, bits), multiplier_bits, zero_point, rounding);
        !(-128.0..=127.0).contains(&v)
    }

    #[cfg(test)]
    mod test {
        use super::*;

        #[test]
        fn worked_examples_of_spec_section_3() {
            let ne = Rounding::NearestEven;
            assert_eq!(quant(DType::F32, 15f32.to_bits(), 0x3e99_999a, 0, ne), 4);
            assert_eq!(
                quant(DType::F32, 200f32.to_bits(), 0x3f80_0000, -100, ne),
                100
            );
            assert_eq!(
                quant(DType::F32, 1.25f32.to_bits(), 0x4000_0000, -3, ne),
                -1
            );
            assert_eq!(quant(DType::F32, 0x7f80_0000, 0x3f80_0000, 0, ne), 127);
            assert_eq!(quant(DType::F32, 0xff80_0000, 0x3f80_0000, 0, ne), -128);
            assert_eq!(quant(DType::F32, 0x7fc0_0000, 0x3f80_0000, 5, ne), 5);
        }
    }
}
