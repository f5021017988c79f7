//! Portable scalar CastTess kernels: the exact conversions of `simak_core::arith::cast` and
//! a byte-by-byte plane split.

use simak_core::DType;
use simak_core::arith::cast;
use simak_core::arith::quant::{FormatLift, InputFormat, lift_format};

use super::ConvertFn;

fn convert_exact<I: InputFormat>(input: &[u8], output: &mut [u8]) {
    cast::run(I::DTYPE, input, output);
}

/// The scalar conversion of a float `dtype` (BF16 is a copy).
pub(crate) fn convert_fn(dtype: DType) -> Option<ConvertFn> {
    struct Select;
    impl FormatLift for Select {
        type Output = ConvertFn;
        fn lift<I: InputFormat>(self) -> ConvertFn {
            convert_exact::<I>
        }
    }
    lift_format(dtype, Select)
}

/// Scalar plane split; see [`super::SplitFn`].
pub(crate) fn split(bf: &[u8], tc: usize, sc: usize, out: &mut [u8]) {
    if sc == 0 {
        return;
    }
    for (p, pixel) in out.chunks_exact_mut(2 * sc).enumerate() {
        split_pixels(&bf[2 * p * tc..2 * (p + 1) * tc], tc, pixel);
    }
}

/// Splits one pixel's `tc` values into `pixel` (`2·sc` bytes), padding zero.
#[inline]
pub(crate) fn split_pixels(values: &[u8], tc: usize, pixel: &mut [u8]) {
    let sc = pixel.len() / 2;
    let (lo, hi) = pixel.split_at_mut(sc);
    for (c, v) in values.chunks_exact(2).take(tc).enumerate() {
        lo[c] = v[0];
        hi[c] = v[1];
    }
    lo[tc..].fill(0);
    hi[tc..].fill(0);
}
