//! The YUV step of Preproc (SPEC §13, OpenCV's BT.601 integer formula,
//! `simak_core::arith::preproc::yuv_to_rgb`) on 16 pixels at a time, in 32-bit integer lanes:
//! `y = max(0, Y − 16)·1220542 + 2^19`, each channel `(y + chroma term) >> 20` saturated to
//! [0, 255] by the signed then unsigned saturating packs (the sums lie well inside i16 after
//! the shift), then interleaved into R, G, B bytes per pixel. The same bits as the scalar
//! formula for every (Y, U, V).

use super::isa::Isa;

/// One level's YUV blocks.
pub(crate) trait YuvLanes: Isa {
    /// 16 pixels: luma `y[k]` with the chroma pair `(u[k / 2], v[k / 2])`, into `out`
    /// as R, G, B bytes per pixel (48 bytes).
    fn yuv16(self, y: &[u8; 16], u: &[u8; 8], v: &[u8; 8], out: &mut [u8; 48]);

    /// [`yuv16`](YuvLanes::yuv16) with the chroma of an NV12 row: `uv` holds the 8
    /// interleaved (U, V) pairs.
    fn yuv16_nv12(self, y: &[u8; 16], uv: &[u8; 16], out: &mut [u8; 48]) {
        let (mut u, mut v) = ([0u8; 8], [0u8; 8]);
        for (j, p) in uv.chunks_exact(2).enumerate() {
            (u[j], v[j]) = (p[0], p[1]);
        }
        self.yuv16(y, &u, &v, out);
    }

    /// [`yuv16_nv12`](YuvLanes::yuv16_nv12) on consecutive blocks: block `b` of luma
    /// `y[16b..]` and pairs `uv[16b..]` into `out[48b..]`, for every block all three hold;
    /// returns the number of blocks. One call per row piece, so a level's body keeps its
    /// constants in registers.
    fn yuv_nv12_blocks(self, y: &[u8], uv: &[u8], out: &mut [u8]) -> usize {
        nv12_blocks(y, uv, out)
            .map(|(y, uv, o)| self.yuv16_nv12(y, uv, o))
            .count()
    }

    /// [`yuv_nv12_blocks`](YuvLanes::yuv_nv12_blocks) on two luma rows that share the
    /// chroma row `uv` (frame rows `2r` and `2r + 1`): block `b` of `y0` into `out0[48b..]`
    /// and of `y1` into `out1[48b..]`, for every block all five hold; returns the number
    /// of blocks. A level may compute each chroma block once for both rows.
    fn yuv_nv12_pair_blocks(
        self,
        y0: &[u8],
        y1: &[u8],
        uv: &[u8],
        out0: &mut [u8],
        out1: &mut [u8],
    ) -> usize {
        let blocks = (y0.len().min(y1.len()).min(uv.len()) / 16)
            .min(out0.len() / 48)
            .min(out1.len() / 48);
        let (y0, y1, uv) = (&y0[..16 * blocks], &y1[..16 * blocks], &uv[..16 * blocks]);
        self.yuv_nv12_blocks(y0, uv, &mut out0[..48 * blocks]);
        self.yuv_nv12_blocks(y1, uv, &mut out1[..48 * blocks])
    }
}

/// The 16-pixel NV12 blocks that `y`, `uv` and `out` all hold, in order: (luma, pairs,
/// pixels).
pub(crate) fn nv12_blocks<'a>(
    y: &'a [u8],
    uv: &'a [u8],
    out: &'a mut [u8],
) -> impl Iterator<Item = (&'a [u8; 16], &'a [u8; 16], &'a mut [u8; 48])> {
    let luma = y.as_chunks::<16>().0.iter();
    let pixels = out.as_chunks_mut::<48>().0.iter_mut();
    luma.zip(uv.as_chunks::<16>().0)
        .zip(pixels)
        .map(|((y, uv), o)| (y, uv, o))
}

/// The 16-pixel blocks that `y` and `out` both hold, in order: (luma, pixels).
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    allow(dead_code)
)]
pub(crate) fn pixel_blocks<'a>(
    y: &'a [u8],
    out: &'a mut [u8],
) -> impl Iterator<Item = (&'a [u8; 16], &'a mut [u8; 48])> {
    y.as_chunks::<16>()
        .0
        .iter()
        .zip(out.as_chunks_mut::<48>().0)
}

/// The byte shuffles that interleave three 16-byte planes (R, G, B) into 48 bytes:
/// `[output chunk][source plane]`, entry `i` the plane byte of output byte `16·chunk + i`,
/// or −128 (a zero byte) when that output byte comes from another plane.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) const INTERLEAVE3: [[[i8; 16]; 3]; 3] = {
    let mut m = [[[-128i8; 16]; 3]; 3];
    let mut chunk = 0;
    while chunk < 3 {
        let mut i = 0;
        while i < 16 {
            let at = 16 * chunk + i;
            m[chunk][at % 3][i] = (at / 3) as i8;
            i += 1;
        }
        chunk += 1;
    }
    m
};
