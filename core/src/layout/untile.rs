//! Reading a tiled buffer back into a logical row-major buffer (SPEC §5), without allocation.
//!
//! The walk follows the storage order (outer indices, then C, D, H, W tiles, then pixels)
//! and adds each tile's padded size to a running offset; division appears only when tiles
//! are set up, never per element.
#![allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use core::fmt;

use super::{TileAxis, TiledView};
use crate::tensor::MAX_RANK;

/// Why [`TiledView::untile`] refused its buffers. Nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum UntileError {
    /// The tiled buffer is shorter than the layout's capacity.
    Tiled {
        /// Capacity in bytes.
        required: u64,
        /// Buffer length in bytes.
        found: u64,
    },
    /// The logical buffer is shorter than `elements · E` bytes.
    Logical {
        /// Required length in bytes.
        required: u64,
        /// Buffer length in bytes.
        found: u64,
    },
}

impl fmt::Display for UntileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            UntileError::Tiled { required, found } => write!(
                f,
                "tiled buffer holds {found} bytes but the capacity is {required} bytes"
            ),
            UntileError::Logical { required, found } => write!(
                f,
                "logical buffer holds {found} bytes but {required} bytes are needed"
            ),
        }
    }
}

impl UntileError {
    /// The stable numeric code (`docs/errors.md`, 0x410..=0x41f).
    pub const fn code(&self) -> u32 {
        match self {
            UntileError::Tiled { .. } => 0x411,
            UntileError::Logical { .. } => 0x412,
        }
    }
}

impl core::error::Error for UntileError {}

impl TiledView {
    /// Reads `tiled` (this layout's physical buffer, at least [`TiledView::capacity`] bytes)
    /// back into `logical`: the row-major contiguous tensor of the same logical shape, `E`
    /// bytes per element (little-endian: INT8 for `E` = 1, BF16 or INT16 for 2, INT32 for 4). Writes the
    /// first `elements · E` bytes of `logical` and nothing else; padding bytes of `tiled`
    /// are not read. Allocates nothing.
    ///
    /// # Errors
    ///
    /// [`UntileError::Tiled`] or [`UntileError::Logical`] when a buffer is too short
    /// (checked before any write).
    ///
    /// # Examples
    ///
    /// ```
    /// use simak_core::layout::{Channels, MlaTiled};
    ///
    /// let tiled = MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 3], Channels::Compact)
    ///     .admit(&[2, 3], 2)?;
    /// // Pixel p: [c0.lo c1.lo c2.lo c0.hi c1.hi c2.hi], then 4 zero bytes.
    /// let physical = [0, 1, 2, 10, 11, 12, 3, 4, 5, 13, 14, 15, 0, 0, 0, 0];
    /// let mut logical = [0u8; 12];
    /// tiled.untile(&physical, &mut logical)?;
    /// assert_eq!(logical, [0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15]);
    /// # Ok::<(), Box<dyn core::error::Error>>(())
    /// ```
    pub fn untile(&self, tiled: &[u8], logical: &mut [u8]) -> Result<(), UntileError> {
        let capacity = self.capacity();
        if (tiled.len() as u64) < capacity {
            return Err(UntileError::Tiled {
                required: capacity,
                found: tiled.len() as u64,
            });
        }
        let planes = self.planes();
        let required = self.elements().saturating_mul(planes as u64);
        if (logical.len() as u64) < required {
            return Err(UntileError::Logical {
                required,
                found: logical.len() as u64,
            });
        }
        if self.is_empty() {
            return Ok(());
        }
        // Both buffers are at least as long as what is walked, so every offset below fits
        // in usize.
        let rank = self.rank();
        let mut lstride = [0usize; MAX_RANK];
        let mut s = 1usize;
        for axis in (0..rank).rev() {
            lstride[axis] = s;
            s *= self.extents()[axis] as usize;
        }
        let mut role_stride = [0usize; 4];
        for (slot, axis) in self.layout().axes.iter().enumerate() {
            if let Some(a) = axis {
                role_stride[slot] = lstride[*a as usize];
            }
        }
        let tile = self.tile().map(|t| t as usize);
        let counts = self.tile_counts().map(|c| c as usize);
        let outer = self.outer_axes();
        let mut outer_index = [0usize; MAX_RANK];
        let mut outer_base = 0usize;
        let mut pos = 0usize;
        for _ in 0..self.outer_count() {
            for ic in 0..counts[3] {
                let tc = self.tile_extent(TileAxis::C, ic as u64).unwrap_or(0) as usize;
                let sc = self.stored_channels(tc as u64).unwrap_or(0) as usize;
                for id in 0..counts[0] {
                    let td = self.tile_extent(TileAxis::D, id as u64).unwrap_or(0) as usize;
                    for ih in 0..counts[1] {
                        let th = self.tile_extent(TileAxis::H, ih as u64).unwrap_or(0) as usize;
                        for iw in 0..counts[2] {
                            let tw = self.tile_extent(TileAxis::W, iw as u64).unwrap_or(0) as usize;
                            let base = outer_base
                                + id * tile[0] * role_stride[0]
                                + ih * tile[1] * role_stride[1]
                                + iw * tile[2] * role_stride[2]
                                + ic * tile[3] * role_stride[3];
                            let cblock = self.channels() == super::Channels::CBlock16;
                            let npix = td * th * tw;
                            let mut k = 0usize;
                            let mut pixel = pos;
                            for d in 0..td {
                                for h in 0..th {
                                    for w in 0..tw {
                                        let l = base
                                            + d * role_stride[0]
                                            + h * role_stride[1]
                                            + w * role_stride[2];
                                        for c in 0..tc {
                                            let at = (l + c * role_stride[3]) * planes;
                                            for p in 0..planes {
                                                // SPEC §5 and §12.1's byte formulas.
                                                let from = if cblock {
                                                    pos + (c / 16) * npix * 16 * planes
                                                        + k * 16 * planes
                                                        + p * 16
                                                        + c % 16
                                                } else {
                                                    pixel + p * sc + c
                                                };
                                                logical[at + p] = tiled[from];
                                            }
                                        }
                                        pixel += sc * planes;
                                        k += 1;
                                    }
                                }
                            }
                            let bytes = self
                                .tile_bytes([td as u64, th as u64, tw as u64, tc as u64])
                                .unwrap_or(0);
                            pos += bytes as usize;
                        }
                    }
                }
            }
            // Carry over the outer axes (fastest last).
            for k in (0..outer.len()).rev() {
                let a = outer[k] as usize;
                outer_index[k] += 1;
                outer_base += lstride[a];
                if outer_index[k] < self.extents()[a] as usize {
                    break;
                }
                outer_base -= lstride[a] * outer_index[k];
                outer_index[k] = 0;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use crate::layout::{Channels, MlaTiled, UntileError};

    #[test]
    fn untile_inverts_offset_of() {
        // [N=2, C=5, H=3, W=4] (channels before space), tiles (1, 2, 3, 4), PadTo16, BF16.
        let v = MlaTiled::new(
            [None, Some(2), Some(3), Some(1)],
            [1, 2, 3, 4],
            Channels::PadTo16,
        )
        .admit(&[2, 5, 3, 4], 2)
        .unwrap();
        let mut tiled = [0u8; 4096];
        assert!(v.capacity() as usize <= tiled.len());
        let mut want = [0u8; 2 * 5 * 3 * 4 * 2];
        let mut k = 0usize;
        for n in 0..2u64 {
            for c in 0..5u64 {
                for h in 0..3u64 {
                    for w in 0..4u64 {
                        for p in 0..2 {
                            let value = (k * 7 + 3) as u8;
                            want[k] = value;
                            let o = v.offset_of(&[n, c, h, w, 0, 0], p).unwrap();
                            tiled[o as usize] = value;
                            k += 1;
                        }
                    }
                }
            }
        }
        let mut got = [0u8; 240];
        v.untile(&tiled[..v.capacity() as usize], &mut got).unwrap();
        assert_eq!(got, want);
        assert_eq!(
            v.untile(&tiled[..3], &mut got),
            Err(UntileError::Tiled {
                required: v.capacity(),
                found: 3
            })
        );
        assert_eq!(
            v.untile(&tiled, &mut got[..5]),
            Err(UntileError::Logical {
                required: 240,
                found: 5
            })
        );
    }
}
