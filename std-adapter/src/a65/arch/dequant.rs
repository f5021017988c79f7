//! INT8 / INT16 → FP32 dequantization blocks of the output side (SPEC §12.2), one
//! implementation per level: 16 codes widened to INT32 and converted to binary32 (exact),
//! the zero point subtracted (exact: |q − zp| < 2^17), then the plan's [`Scale`]: the
//! binary32 product by the reciprocal where `Dequant::new` found it equal to the table for
//! every code, else the binary32 division, which IEEE 754 rounds correctly. Used only in
//! the default FP environment (`Lanes::fp_division`), so every lane gives the table's bits.
//!
//! Written with intrinsics: the portable fixed-size loop was vectorized by the compiler only
//! sometimes (across blocks, with byte gathers, when blocks followed each other in a loop).

use super::super::untess::Scale;
use super::isa::Isa;

/// One level's 16-code dequantization blocks (little-endian FP32 output, 64 bytes).
pub(crate) trait DequantLanes: Isa {
    /// 16 INT8 codes `src` into 16 FP32 values: `(q − zp)` then `scale`.
    fn i8x16(self, src: &[u8; 16], out: &mut [u8; 64], zp: f32, scale: Scale);

    /// 16 INT16 codes stored as a plane of low bytes `lo` and one of high bytes `hi`
    /// (PadTo16, CBlock16: SPEC §12.1) into 16 FP32 values: `(q − zp)` then `scale`.
    fn i16x16(self, lo: &[u8; 16], hi: &[u8; 16], out: &mut [u8; 64], zp: f32, scale: Scale);
}
