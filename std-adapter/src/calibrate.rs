//! Absmax calibration: a Quant multiplier chosen from the data (SPEC §3, "Calibration
//! (absmax)").
//!
//! `m = 127 / a`, one binary32 division rounded to nearest with ties to even, where `a` is
//! the largest magnitude `|x|` over the **finite** elements of an FP32, BF16 or FP16
//! tensor, as an `f32` (exact for all three dtypes). NaN and ±∞ are skipped; −0.0 and +0.0
//! count as zero; subnormals count with their exact value. A tensor with no finite nonzero
//! element (every element zero, NaN or infinite, or no element at all) gets
//! [`ZERO_RANGE_MULTIPLIER`] = 1.0, the rule ONNX Runtime applies to a zero range (its scale
//! becomes 1). When `127 / a` overflows binary32 (`a` below about 7.5e-37), there is no
//! multiplier: [`CalibrationError::NotFinite`]. The zero point is 0.
//!
//! Both steps are integer code: [`abs_max`] compares magnitudes as bit patterns (same
//! format, so the order of the bits is the order of the values) and the division is
//! [`crate::dequant::dequant_value`]'s exactly rounded integer quotient. The result does not
//! depend on the FP environment. The CLI's `--calibrate absmax` and the Python
//! `calibrate_absmax` call these functions.
//!
//! ```
//! use simak::calibrate::{abs_max, absmax_multiplier};
//! use simak::{DType, Port, TensorSpec};
//!
//! let data: Vec<u8> = [0.5f32, f32::NAN, -4.0, f32::INFINITY]
//!     .iter()
//!     .flat_map(|x| x.to_le_bytes())
//!     .collect();
//! let view = TensorSpec::contiguous([4], DType::F32).admit(Port::Input)?;
//! let a = abs_max(&view, &data)?;
//! assert_eq!(a, Some(4.0)); // NaN and +inf are skipped
//! assert_eq!(absmax_multiplier(a), Ok(31.75f32.to_bits())); // 127 / 4
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use simak_core::arith::cast::f16_to_f32_bits;
use simak_core::{AdmissionError, DType, Port, View};

use crate::a65::ExecuteError;
use crate::dequant::dequant_value;

/// The multiplier absmax calibration gives a tensor with no finite nonzero element (every
/// element zero, NaN or infinite, or no element at all): 1.0, the rule ONNX Runtime applies
/// to a zero range (its scale becomes 1).
pub const ZERO_RANGE_MULTIPLIER: f32 = 1.0;

/// Why absmax calibration found no multiplier.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CalibrationError {
    /// `127 / a` is not a finite binary32: the largest finite magnitude `a` is too small
    /// (below about 7.5e-37).
    NotFinite {
        /// The largest finite magnitude found.
        abs_max: f32,
    },
}

impl fmt::Display for CalibrationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CalibrationError::NotFinite { abs_max } => write!(
                f,
                "127 / max|x| with max|x| = {abs_max:e} is not a finite binary32"
            ),
        }
    }
}

impl std::error::Error for CalibrationError {}

/// The largest magnitude over the finite elements of the FP32, BF16 or FP16 tensor `view`
/// (an admitted port, strides in bytes) stored in `data` (starting at its first element,
/// little-endian), as an `f32` (exact for the three dtypes); `None` when no element is
/// finite and nonzero (NaN, ±∞ and ±0 are skipped). Visits every element once in logical
/// row-major order ([`View::offsets`]); allocates nothing.
///
/// # Errors
///
/// [`AdmissionError::DType`] (input) when the view's dtype is `I8`;
/// [`ExecuteError::Capacity`] on the input port when `data` is shorter than the view's span
/// in bytes.
pub fn abs_max(view: &View, data: &[u8]) -> Result<Option<f32>, crate::Error> {
    let dtype = view.dtype();
    // Per dtype: the magnitude mask and the first non-finite magnitude (the infinity).
    let (mask, infinity) = match dtype {
        DType::F32 => (0x7fff_ffffu32, 0x7f80_0000u32),
        DType::BF16 => (0x7fff, 0x7f80),
        DType::F16 => (0x7fff, 0x7c00),
        DType::I8 | DType::I16 | DType::I32 => {
            return Err(AdmissionError::DType {
                port: Port::Input,
                found: dtype,
            }
            .into());
        }
    };
    if (data.len() as u64) < view.span() {
        return Err(ExecuteError::Capacity {
            port: Port::Input,
            required: view.span(),
            found: data.len() as u64,
        }
        .into());
    }
    let elem = dtype.size();
    let mut best = 0u32;
    for offset in view.offsets() {
        let at = offset as usize;
        let bits = match data.get(at..at + elem) {
            Some(&[a, b, c, d]) => u32::from_le_bytes([a, b, c, d]),
            Some(&[a, b]) => u32::from(u16::from_le_bytes([a, b])),
            // Unreachable: every offset is below the span, checked above.
            _ => 0,
        };
        let magnitude = bits & mask;
        if magnitude < infinity && magnitude > best {
            best = magnitude;
        }
    }
    if best == 0 {
        return Ok(None);
    }
    Ok(Some(f32::from_bits(match dtype {
        DType::BF16 => best << 16,
        DType::F16 => f16_to_f32_bits(best as u16),
        _ => best,
    })))
}

/// The absmax multiplier's binary32 bits: `127 / abs_max` rounded once to nearest-even
/// (computed in integer arithmetic, independent of the FP environment), where `abs_max` is
/// [`abs_max`]'s result. `None`, zero, a negative value or a non-finite value (no finite
/// nonzero element) gives [`ZERO_RANGE_MULTIPLIER`].
///
/// # Errors
///
/// [`CalibrationError::NotFinite`] when the quotient overflows binary32 (the multiplier
/// would be +∞).
pub fn absmax_multiplier(abs_max: Option<f32>) -> Result<u32, CalibrationError> {
    let abs_max = match abs_max {
        Some(a) if a > 0.0 && a.is_finite() => a,
        _ => return Ok(ZERO_RANGE_MULTIPLIER.to_bits()),
    };
    let m = dequant_value(127, 0, abs_max);
    if !m.is_finite() || m <= 0.0 {
        return Err(CalibrationError::NotFinite { abs_max });
    }
    Ok(m.to_bits())
}

/// [`abs_max`] then [`absmax_multiplier`]: the multiplier's binary32 bits for the tensor
/// `view` stored in `data`, with the largest finite magnitude it came from.
///
/// # Errors
///
/// As [`abs_max`]; [`CalibrationError::NotFinite`] (wrapped in [`CalibrateError`]) when
/// `127 / a` overflows.
pub fn calibrate_absmax(view: &View, data: &[u8]) -> Result<(u32, Option<f32>), CalibrateError> {
    let a = abs_max(view, data).map_err(CalibrateError::Input)?;
    let m = absmax_multiplier(a).map_err(CalibrateError::Calibration)?;
    Ok((m, a))
}

/// Why [`calibrate_absmax`] gave no multiplier.
#[derive(Debug, Clone, PartialEq)]
pub enum CalibrateError {
    /// The view or the data was refused (its code is that of the wrapped [`crate::Error`]).
    Input(crate::Error),
    /// No finite multiplier.
    Calibration(CalibrationError),
}

impl fmt::Display for CalibrateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CalibrateError::Input(e) => e.fmt(f),
            CalibrateError::Calibration(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for CalibrateError {}

#[cfg(test)]
mod test {
    use super::*;
    use simak_core::TensorSpec;

    fn view(n: u64, dtype: DType) -> View {
        TensorSpec::contiguous([n], dtype)
            .admit(Port::Input)
            .unwrap()
    }

    fn bytes(bits: &[u32], dtype: DType) -> Vec<u8> {
        bits.iter()
            .flat_map(|&b| match dtype {
                DType::F32 => b.to_le_bytes().to_vec(),
                _ => (b as u16).to_le_bytes().to_vec(),
            })
            .collect()
    }

    fn run(bits: &[u32], dtype: DType) -> Option<f32> {
        abs_max(&view(bits.len() as u64, dtype), &bytes(bits, dtype)).unwrap()
    }

    /// Hand-computed maxima: NaN, ±∞, −0.0 and subnormals in each dtype.
    #[test]
    fn abs_max_skips_nan_and_infinities() {
        let f = |x: f32| x.to_bits();
        let nan = f32::NAN.to_bits();
        let f32_cases: [(&[u32], Option<f32>); 6] = [
            (
                &[f(1.5), f(-3.25), nan, f(f32::INFINITY), f(-0.0)],
                Some(3.25),
            ),
            (&[f(-0.0), f(0.0), nan, f(f32::NEG_INFINITY)], None),
            (&[], None),
            (&[1, 0x8000_0003, 2], Some(f32::from_bits(3))), // subnormals 2^-149 · k
            (&[f(-f32::MAX), nan | 0x8000_0000], Some(f32::MAX)),
            (&[0x7fc0_0001, f(-1e-30), f(1e-30)], Some(1e-30)),
        ];
        for (bits, expected) in f32_cases {
            assert_eq!(run(bits, DType::F32), expected, "{bits:x?}");
        }
        // BF16: 0x7f80 = +inf, 0xff81 = NaN, 0x8001 = −2^-133 (subnormal), 0x4040 = 3.
        assert_eq!(
            run(&[0x7f80, 0xff81, 0x8001, 0x3f80], DType::BF16),
            Some(1.0)
        );
        assert_eq!(
            run(&[0x8001, 0x0000, 0x8000], DType::BF16),
            Some(f32::from_bits(0x0001_0000))
        );
        assert_eq!(run(&[0x4040, 0xc040, 0x7fc0], DType::BF16), Some(3.0));
        // FP16: 0x7c00 = +inf, 0xfe00 = NaN, 0x8001 = −2^-24 (subnormal), 0x7bff = 65504.
        assert_eq!(
            run(&[0x7c00, 0xfe00, 0x8001], DType::F16),
            Some(2f32.powi(-24))
        );
        assert_eq!(run(&[0x7bff, 0xfbff, 0x3c00], DType::F16), Some(65504.0));
        assert_eq!(
            run(&[0x03ff, 0x0001], DType::F16),
            Some(1023.0 * 2f32.powi(-24))
        );
        assert_eq!(run(&[0xfc00, 0x8000], DType::F16), None);
    }

    #[test]
    fn abs_max_walks_strided_views_and_checks_its_input() {
        // [2, 3] stored column-major with a gap: element (i, j) at 4 i + 12 j bytes; the
        // gap holds 100.0, which is not an element.
        let values = [1.0f32, -7.0, 100.0, 2.0, 3.0, 100.0, -4.0, 5.0];
        let data: Vec<u8> = values.iter().flat_map(|x| x.to_le_bytes()).collect();
        let v = TensorSpec::strided([2, 3], [4, 12], DType::F32)
            .admit(Port::Input)
            .unwrap();
        assert_eq!(abs_max(&v, &data).unwrap(), Some(7.0));
        assert_eq!(
            abs_max(&v, &data[..v.span() as usize - 1])
                .unwrap_err()
                .code(),
            0x401
        );
        let i8_view = view(2, DType::I8);
        assert_eq!(
            abs_max(&i8_view, &[0, 0]).unwrap_err().source_error(),
            &crate::error::ErrorSource::Admission(AdmissionError::DType {
                port: Port::Input,
                found: DType::I8
            })
        );
    }

    #[test]
    fn multiplier_is_one_binary32_division() {
        assert_eq!(absmax_multiplier(Some(127.0)), Ok(0x3f80_0000));
        assert_eq!(absmax_multiplier(Some(0.5)), Ok(254f32.to_bits()));
        assert_eq!(absmax_multiplier(None), Ok(0x3f80_0000));
        assert_eq!(absmax_multiplier(Some(0.0)), Ok(0x3f80_0000));
        assert_eq!(
            absmax_multiplier(Some(f32::from_bits(1))),
            Err(CalibrationError::NotFinite {
                abs_max: f32::from_bits(1)
            })
        );
        // The hardware division (default FP environment) as the oracle, over a sweep of
        // magnitudes from subnormals to the largest finite value.
        let mut bits = 1u32;
        while bits < 0x7f80_0000 {
            let a = f32::from_bits(bits);
            let q = 127f32 / a;
            let got = absmax_multiplier(Some(a));
            if q.is_finite() {
                assert_eq!(got, Ok(q.to_bits()), "a = {a:e}");
            } else {
                assert_eq!(got, Err(CalibrationError::NotFinite { abs_max: a }));
            }
            bits += 0x1235;
        }
    }

    #[test]
    fn calibrate_absmax_combines_both_steps() {
        let data = bytes(&[0x4040, 0xc0c0], DType::BF16); // 3, −6
        assert_eq!(
            calibrate_absmax(&view(2, DType::BF16), &data),
            Ok(((127f32 / 6.0).to_bits(), Some(6.0)))
        );
        let tiny = bytes(&[1], DType::F32);
        assert_eq!(
            calibrate_absmax(&view(1, DType::F32), &tiny),
            Err(CalibrateError::Calibration(CalibrationError::NotFinite {
                abs_max: f32::from_bits(1)
            }))
        );
    }
}
