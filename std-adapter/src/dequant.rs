//! Dequantization: INT8 back to FP32 as `(q − zero_point) / multiplier`, the inverse
//! direction of Quant (SPEC §3) that tools use to read model outputs back.
//!
//! Per element, `q − zero_point` is an integer in [−255, 255], exact in binary32, and the
//! result is that integer divided by the multiplier and rounded **once** to binary32,
//! to nearest with ties to even, with gradual underflow (subnormal results are kept) and
//! overflow to ±∞. The division is done in integer arithmetic ([`dequant_value`]), so the
//! result does not depend on the caller's FP environment (flush-to-zero,
//! denormals-are-zero or another rounding mode give the same bytes). A zero numerator gives
//! +0.
//!
//! The parameters are Quant's: the multiplier must be finite and > 0 (subnormals allowed)
//! and the zero point in [−128, 127]; the codes are admission's (13, 14, 15 in
//! `docs/errors.md`).
//!
//! ```
//! use simak::dequant::Dequant;
//!
//! let d = Dequant::new(0.5f32.to_bits(), 3)?;
//! let q = [13i8 as u8, 3, (-1i8) as u8];
//! let mut out = [0u8; 12];
//! d.run(&q, &mut out)?;
//! let x: Vec<f32> = out
//!     .chunks_exact(4)
//!     .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
//!     .collect();
//! assert_eq!(x, [20.0, 0.0, -8.0]); // (13 − 3) / 0.5, (3 − 3) / 0.5, (−1 − 3) / 0.5
//! # Ok::<(), simak::Error>(())
//! ```

use simak_core::ops::quant::Params;
use simak_core::{AdmissionError, DType, Port, View};

use crate::a65::ExecuteError;

/// Checked dequantization parameters with the 256 results precomputed (one per INT8
/// value), so that a call is a table lookup per element.
#[derive(Debug, Clone, PartialEq)]
pub struct Dequant {
    multiplier_bits: u32,
    zero_point: i32,
    table: [f32; 256],
}

impl Dequant {
    /// Checks the parameters (the multiplier as binary32 bits) and precomputes the table.
    ///
    /// # Errors
    ///
    /// [`AdmissionError::MultiplierNotFinite`], [`AdmissionError::MultiplierNotPositive`],
    /// [`AdmissionError::ZeroPointOutOfRange`], as Quant admission reports them.
    pub fn new(multiplier_bits: u32, zero_point: i32) -> Result<Dequant, AdmissionError> {
        Params::from_bits(multiplier_bits)
            .with_zero_point(zero_point)
            .check()?;
        let m = f32::from_bits(multiplier_bits);
        let mut table = [0f32; 256];
        for (byte, slot) in (0u8..=255).zip(table.iter_mut()) {
            *slot = dequant_value(byte as i8, zero_point, m);
        }
        Ok(Dequant {
            multiplier_bits,
            zero_point,
            table,
        })
    }

    /// The multiplier's binary32 bits.
    pub const fn multiplier_bits(&self) -> u32 {
        self.multiplier_bits
    }

    /// The zero point.
    pub const fn zero_point(&self) -> i32 {
        self.zero_point
    }

    /// The FP32 value of `q`: `(q − zero_point) / multiplier`, rounded once.
    pub fn value(&self, q: i8) -> f32 {
        self.table[usize::from(q as u8)]
    }

    /// Dequantizes the contiguous INT8 bytes `q` into `out`, which receives the FP32 values
    /// little-endian, 4 bytes per element; `out` bytes past `4 · q.len()` are not touched.
    ///
    /// # Errors
    ///
    /// [`ExecuteError::Capacity`] on the output port when `out` is shorter than
    /// `4 · q.len()` bytes; nothing was written.
    pub fn run(&self, q: &[u8], out: &mut [u8]) -> Result<(), ExecuteError> {
        let required = (q.len() as u64).saturating_mul(4);
        if (out.len() as u64) < required {
            return Err(ExecuteError::Capacity {
                port: Port::Output,
                required,
                found: out.len() as u64,
            });
        }
        for (&b, x) in q.iter().zip(out.chunks_exact_mut(4)) {
            x.copy_from_slice(&self.table[usize::from(b)].to_le_bytes());
        }
        Ok(())
    }

    /// Dequantizes the INT8 tensor `view` (an admitted port of dtype `I8`, strides in
    /// bytes) stored in `q` (starting at its first element) into `out`, row-major FP32
    /// little-endian, 4 bytes per element. An empty view writes nothing.
    ///
    /// # Errors
    ///
    /// [`AdmissionError::DType`] (input) when the view's dtype is not `I8`;
    /// [`ExecuteError::Capacity`] on the input port when `q` is shorter than the view's span
    /// and on the output port when `out` is shorter than `4 · elements` bytes. Nothing was
    /// written on error.
    pub fn run_view(&self, view: &View, q: &[u8], out: &mut [u8]) -> Result<(), crate::Error> {
        if view.dtype() != DType::I8 {
            return Err(AdmissionError::DType {
                port: Port::Input,
                found: view.dtype(),
            }
            .into());
        }
        if view.is_empty() {
            return Ok(());
        }
        if (q.len() as u64) < view.span() {
            return Err(ExecuteError::Capacity {
                port: Port::Input,
                required: view.span(),
                found: q.len() as u64,
            }
            .into());
        }
        let required = view.elements().saturating_mul(4);
        if (out.len() as u64) < required {
            return Err(ExecuteError::Capacity {
                port: Port::Output,
                required,
                found: out.len() as u64,
            }
            .into());
        }
        // Row-major over the logical axes (the library's strided walk, `View::offsets`).
        // Admission bounds every offset by the span, checked above.
        for (offset, x) in view
            .offsets()
            .zip(out[..required as usize].chunks_exact_mut(4))
        {
            let b = q[offset as usize];
            x.copy_from_slice(&self.table[usize::from(b)].to_le_bytes());
        }
        Ok(())
    }
}

/// `(q − zero_point) / multiplier` rounded once to binary32, nearest-even, computed in
/// integer arithmetic (independent of the FP environment): SPEC §12.2's
/// [`simak_core::arith::dequant::dequantize`] for INT8 codes and FP32 output. `zero_point` is any value in
/// [−128, 127] and `multiplier` any finite value > 0 (subnormals allowed); outside those
/// domains the result is the IEEE quotient's sign and class only by accident, so check with
/// [`Dequant::new`] first.
pub fn dequant_value(q: i8, zero_point: i32, multiplier: f32) -> f32 {
    let bits = multiplier.to_bits();
    if bits == 0 || bits >= 0x7f80_0000 {
        // Outside the domain (zero, negative, infinite or NaN multiplier): the IEEE quotient.
        return (i32::from(q) - zero_point) as f32 / multiplier;
    }
    // SPEC §12.2, the one implementation (`simak_core::arith::dequant`).
    f32::from_bits(simak_core::arith::dequant::dequantize(
        i64::from(q),
        i64::from(zero_point),
        bits,
        DType::F32,
    ))
}

#[cfg(test)]
mod test {
    use super::*;
    use simak_core::DynSpec;

    /// The oracle: the quotient in binary64 rounded to binary32. For division, double
    /// rounding through binary64 (53 ≥ 2 · 24 + 2 bits) gives the correctly rounded binary32
    /// result, and binary64's range holds every binary32 quotient's exponent.
    fn oracle(q: i8, zero_point: i32, m: f32) -> f32 {
        ((i32::from(q) - zero_point) as f64 / f64::from(m)) as f32
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits()
    }

    /// Multipliers covering every exponent (subnormal to the largest finite) with several
    /// significands, plus a deterministic pseudo-random sample of all finite positive bits.
    fn multipliers() -> Vec<u32> {
        let mut out = Vec::new();
        for field in 0u32..255 {
            for mantissa in [0u32, 1, 2, 3, 0x40_0000, 0x55_5555, 0x7f_fffe, 0x7f_ffff] {
                let bits = field << 23 | mantissa;
                if bits != 0 {
                    out.push(bits);
                }
            }
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..3000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let bits = (state >> 33) as u32 & 0x7fff_ffff;
            if bits != 0 && bits < 0x7f80_0000 {
                out.push(bits);
            }
        }
        out
    }

    #[test]
    fn integer_division_agrees_with_binary64_and_the_hardware() {
        let mut checked = 0u64;
        for bits in multipliers() {
            let m = f32::from_bits(bits);
            for n in -255i32..=255 {
                // q − zp = n with q and zp in range.
                let (q, zp) = if n >= 0 {
                    ((n - 128) as i8, -128)
                } else {
                    ((n + 127) as i8, 127)
                };
                assert_eq!(i32::from(q) - zp, n);
                let got = dequant_value(q, zp, m);
                let want = oracle(q, zp, m);
                assert!(
                    same(got, want),
                    "n {n} m 0x{bits:08x}: got 0x{:08x} want 0x{:08x}",
                    got.to_bits(),
                    want.to_bits()
                );
                // The CPU's own division, in the default FP environment of the tests.
                assert!(same(got, n as f32 / m), "hardware n {n} m 0x{bits:08x}");
                checked += 1;
            }
        }
        assert!(checked > 1_000_000);
    }

    #[test]
    fn worked_values() {
        assert_eq!(dequant_value(10, 3, 0.5), 14.0);
        assert_eq!(dequant_value(-128, 127, 1.0), -255.0);
        assert_eq!(dequant_value(1, 0, 3.0), 1f32 / 3f32);
        assert_eq!(dequant_value(1, 0, 3.0).to_bits(), 0x3eaa_aaab);
        // Zero numerator: +0 whatever the sign of the zero point.
        assert_eq!(dequant_value(-5, -5, 2.0).to_bits(), 0);
        // The smallest subnormal multiplier overflows to ±∞; the largest underflows.
        assert_eq!(dequant_value(1, 0, f32::from_bits(1)), f32::INFINITY);
        assert_eq!(dequant_value(-1, 0, f32::from_bits(1)), f32::NEG_INFINITY);
        assert_eq!(dequant_value(1, 0, f32::MAX).to_bits(), 0x0020_0000); // 2^-128
        // 255 / 2^127 ≈ 2^-119 is normal; 1 / f32::MAX rounds to a subnormal.
        assert_eq!(
            dequant_value(127, -128, 2f32.powi(127)),
            255.0 * 2f32.powi(-127)
        );
    }

    #[test]
    fn parameters_are_checked_with_quant_codes() {
        let code = |bits: u32, zp: i32| {
            Dequant::new(bits, zp)
                .map(|_| 0)
                .unwrap_or_else(|e| e.code())
        };
        assert_eq!(code(f32::NAN.to_bits(), 0), 13);
        assert_eq!(code(f32::INFINITY.to_bits(), 0), 13);
        assert_eq!(code(0, 0), 14);
        assert_eq!(code((-1.0f32).to_bits(), 0), 14);
        assert_eq!(code((-0.0f32).to_bits(), 0), 14);
        assert_eq!(code(1.0f32.to_bits(), 128), 15);
        assert_eq!(code(1.0f32.to_bits(), -129), 15);
        assert_eq!(code(1, 127), 0);
    }

    #[test]
    fn run_writes_little_endian_and_checks_the_output_length() {
        let d = Dequant::new(0.25f32.to_bits(), -2).expect("valid");
        let q: Vec<u8> = (0u8..=255).collect();
        let mut out = vec![0xaau8; 256 * 4 + 3];
        d.run(&q, &mut out).expect("fits");
        for (k, x) in out.chunks_exact(4).take(256).enumerate() {
            let v = f32::from_le_bytes([x[0], x[1], x[2], x[3]]);
            assert!(same(v, oracle(k as u8 as i8, -2, 0.25)));
        }
        assert_eq!(&out[1024..], &[0xaa; 3]);
        let mut short = vec![0x55u8; 1023];
        let e = d.run(&q, &mut short).expect_err("short");
        assert_eq!(e.code(), 0x402);
        assert!(short.iter().all(|&b| b == 0x55));
    }

    #[test]
    fn run_view_reads_strided_inputs_in_logical_order() {
        let d = Dequant::new(2.0f32.to_bits(), 1).expect("valid");
        // A [2, 3] INT8 tensor stored transposed (column-major): strides (1, 2) bytes.
        let storage: Vec<u8> = [10i8, 40, 20, 50, 30, 60]
            .iter()
            .map(|&v| v as u8)
            .collect();
        let view = DynSpec::strided(&[2, 3], &[1, 2], DType::I8)
            .admit(Port::Input)
            .expect("admissible");
        let mut out = vec![0u8; 24];
        d.run_view(&view, &storage, &mut out).expect("fits");
        let x: Vec<f32> = out
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(x, [4.5, 9.5, 14.5, 19.5, 24.5, 29.5]);
        // Rank 0 and an empty tensor.
        let scalar = DynSpec::contiguous(&[], DType::I8)
            .admit(Port::Input)
            .expect("ok");
        let mut one = [0u8; 4];
        d.run_view(&scalar, &[5], &mut one).expect("fits");
        assert_eq!(f32::from_le_bytes(one), 2.0);
        let empty = DynSpec::contiguous(&[3, 0], DType::I8)
            .admit(Port::Input)
            .expect("ok");
        d.run_view(&empty, &[], &mut []).expect("nothing to do");
        // Errors: dtype, short input, short output; nothing written.
        let f32_view = DynSpec::contiguous(&[2], DType::F32)
            .admit(Port::Input)
            .expect("ok");
        let mut out = vec![0x77u8; 24];
        assert_eq!(
            d.run_view(&f32_view, &[0; 8], &mut out)
                .map_err(|e| e.code()),
            Err(5)
        );
        assert_eq!(
            d.run_view(&view, &storage[..5], &mut out)
                .map_err(|e| e.code()),
            Err(0x401)
        );
        assert_eq!(
            d.run_view(&view, &storage, &mut out[..23])
                .map_err(|e| e.code()),
            Err(0x402)
        );
        assert!(out.iter().all(|&b| b == 0x77));
    }

    #[test]
    fn run_view_rank_6_with_gaps_matches_the_oracle() {
        let d = Dequant::new(0x3e99_999a, -7).expect("valid");
        let extents = [2u64, 1, 3, 2, 1, 5];
        // Padded strides in bytes (gaps between rows), slowest first.
        let strides = [200u64, 77, 60, 24, 3, 2];
        let view = DynSpec::strided(&extents, &strides, DType::I8)
            .admit(Port::Input)
            .expect("admissible");
        let storage: Vec<u8> = (0..view.span()).map(|k| (k * 37 % 256) as u8).collect();
        let mut out = vec![0u8; 60 * 4];
        d.run_view(&view, &storage, &mut out).expect("fits");
        let mut k = 0;
        for i0 in 0..2u64 {
            for i2 in 0..3u64 {
                for i3 in 0..2u64 {
                    for i5 in 0..5u64 {
                        let at = (i0 * 200 + i2 * 60 + i3 * 24 + i5 * 2) as usize;
                        let want = oracle(storage[at] as i8, -7, f32::from_bits(0x3e99_999a));
                        let got = &out[k * 4..k * 4 + 4];
                        assert_eq!(got, want.to_le_bytes(), "element {k}");
                        k += 1;
                    }
                }
            }
        }
        assert_eq!(k, 60);
    }
}
