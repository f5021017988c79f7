//! Detess: an MLA output layout (SPEC §12.1), INT8 / INT16 / INT32 / BF16 → the same
//! dtype, strided (SPEC §12), and the admission shared by the three Detess ops.
//!
//! One head is one plan: its layout over the head's own bytes. A multi-head OFM buffer is
//! one plan per head, each given the head's bytes (`&ofm[offset..offset + span]`);
//! [`place_heads`] checks the heads' offsets and spans against the buffer.
//!
//! ```
//! use simak_core::layout::{Channels, MlaTiled, TileAlign};
//! use simak_core::ops::detess::{check_inference, Request};
//! use simak_core::{DType, TensorSpec};
//!
//! // SiMa's fixture: a BF16 [2, 3, 33] frame in one Compact tile, tile alignment 1.
//! let layout = MlaTiled::new([None, Some(0), Some(1), Some(2)], [1, 2, 3, 33], Channels::Compact)
//!     .with_tile_align(TileAlign::Bytes1);
//! let plan = check_inference(&Request {
//!     dtype: DType::BF16,
//!     layout,
//!     output: TensorSpec::contiguous([2, 3, 33], DType::BF16),
//! })?;
//! assert_eq!(plan.input().capacity(), 396);
//! # Ok::<(), simak_core::AdmissionError>(())
//! ```

use crate::dtype::DType;
use crate::error::{AdmissionError, Port};
use crate::layout::{Channels, MlaTiled, TiledView};
use crate::ops::casttess::TiledSpec;
use crate::ops::quant::check_same_shape;
use crate::tensor::{DynSpec, MAX_RANK, TensorSpec, View};

/// Most heads one OFM buffer holds (SPEC §12.1).
pub const MAX_HEADS: usize = 32;

/// An unchecked Detess-family request over rank-`R` ports (1 ≤ R ≤ 6): the tiled input's
/// dtype and layout, and the strided output (whose extents are the logical shape).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<const R: usize> {
    /// The tiled input's dtype (Detess: `I8`, `I16`, `I32` or `BF16`).
    pub dtype: DType,
    /// The tiled input's layout (SPEC §12.1).
    pub layout: MlaTiled,
    /// Output port: strided (byte strides), the logical shape; Detess: the input's dtype.
    pub output: TensorSpec<R>,
}

impl<const R: usize> Request<R> {
    /// The same request at run-time rank (what every Detess-family `check_inference` admits).
    pub(crate) fn as_dyn(&self) -> DynRequest<'_> {
        DynRequest {
            input: tiled_input(self.dtype, self.layout, &self.output),
            output: self.output.as_dyn(),
        }
    }
}

/// The tiled input spec of a rank-`R` Detess-family request: the output's extents, the
/// input's `dtype` and `layout`.
pub(crate) fn tiled_input<const R: usize>(
    dtype: DType,
    layout: MlaTiled,
    output: &TensorSpec<R>,
) -> TiledSpec<'_> {
    TiledSpec {
        extents: output.extents(),
        dtype,
        layout,
    }
}

/// An unchecked Detess-family request of run-time rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynRequest<'a> {
    /// The tiled input port (extents, dtype, layout).
    pub input: TiledSpec<'a>,
    /// The strided output port, the input's extents.
    pub output: DynSpec<'a>,
}

/// The admitted ports of a Detess-family plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ports {
    pub(crate) input: TiledView,
    pub(crate) dtype: DType,
    pub(crate) output: View,
}

/// Admits the ports of a Detess-family request (SPEC §12, §12.1): rank 1..=6; the input
/// dtype (`input_ok`), the output dtype (`output_ok`); the extents; the c16 tile-channel
/// rule; the layout with `E` = the input dtype's size; the strided output.
pub(crate) fn admit_ports(
    input: &TiledSpec<'_>,
    output: &DynSpec<'_>,
    input_ok: impl Fn(DType) -> bool,
    output_ok: impl Fn(DType) -> bool,
) -> Result<Ports, AdmissionError> {
    let rank = input.extents.len();
    if rank == 0 || rank > MAX_RANK {
        return Err(AdmissionError::Rank {
            rank,
            min: 1,
            max: MAX_RANK,
        });
    }
    if !input_ok(input.dtype) {
        return Err(AdmissionError::DType {
            port: Port::Input,
            found: input.dtype,
        });
    }
    if !output_ok(output.dtype) {
        return Err(AdmissionError::DType {
            port: Port::Output,
            found: output.dtype,
        });
    }
    check_same_shape(input.extents, output.extents)?;
    let tiled = admit_tiled_input(input.dtype, &input.layout, input.extents)?;
    let view = output.admit(Port::Output)?;
    Ok(Ports {
        input: tiled,
        dtype: input.dtype,
        output: view,
    })
}

/// Admits the tiled input of a Detess-family op (SPEC §12.1): `layout` over `extents` with
/// `E` = `dtype`'s size as byte planes, then the c16 tile-channel rule. Shared by host
/// admission and the device decoder of the Detess entries (`crate::wire::detess`).
///
/// # Errors
///
/// The errors of [`MlaTiled::admit`]; [`AdmissionError::C16TileChannels`].
pub(crate) fn admit_tiled_input(
    dtype: DType,
    layout: &MlaTiled,
    extents: &[u64],
) -> Result<TiledView, AdmissionError> {
    let planes = match dtype.size() {
        1 => 1,
        2 => 2,
        _ => 4,
    };
    let tiled = layout.admit(extents, planes)?;
    if layout.channels != Channels::Compact {
        let tile = layout.tile[3];
        let extent = tiled.role_extents()[3];
        if u64::from(tile) != extent && !tile.is_multiple_of(16) {
            return Err(AdmissionError::C16TileChannels { tile, extent });
        }
    }
    Ok(tiled)
}

/// A checked Detess plan: owning, immutable, backend-neutral (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    ports: Ports,
}

/// The accessors of a Detess-family plan.
macro_rules! ports_accessors {
    () => {
        /// The admitted tiled input (its capacity is the head's span in bytes).
        pub const fn input(&self) -> &crate::layout::TiledView {
            &self.ports.input
        }

        /// The tiled input's dtype.
        pub const fn input_dtype(&self) -> crate::DType {
            self.ports.dtype
        }

        /// The admitted strided output (strides and span in bytes).
        pub const fn output(&self) -> &crate::View {
            &self.ports.output
        }

        /// Number of logical elements (0 when empty).
        pub const fn elements(&self) -> u64 {
            self.ports.output.elements()
        }

        /// Whether the call is a no-op (some extent is zero).
        pub const fn is_empty(&self) -> bool {
            self.ports.output.is_empty()
        }
    };
}
pub(crate) use ports_accessors;

impl Plan {
    ports_accessors!();
}

/// The dtypes Detess reads: INT8, INT16, INT32, BF16.
const fn detess_dtype(d: DType) -> bool {
    matches!(d, DType::I8 | DType::I16 | DType::I32 | DType::BF16)
}

/// Admits a Detess request (SPEC §12, §12.1). Reads no tensor data.
///
/// # Errors
///
/// - [`AdmissionError::Rank`] for rank 0;
/// - [`AdmissionError::DType`] on the input for `F32` or `F16`, on the output for a dtype
///   other than the input's;
/// - [`AdmissionError::ShapeMismatch`];
/// - the layout errors of [`MlaTiled::admit`];
/// - [`AdmissionError::C16TileChannels`] for PadTo16 or CBlock16 with a C tile extent that
///   is neither C nor a multiple of 16;
/// - the layout errors of [`TensorSpec::admit`] on the output.
pub fn check_inference<const R: usize>(request: &Request<R>) -> Result<Plan, AdmissionError> {
    check_inference_dyn(&request.as_dyn())
}

/// Admits a Detess request of run-time rank: as [`check_inference`].
///
/// # Errors
///
/// As [`check_inference`]; also [`AdmissionError::StridesRank`].
pub fn check_inference_dyn(request: &DynRequest<'_>) -> Result<Plan, AdmissionError> {
    let d = request.input.dtype;
    let ports = admit_ports(&request.input, &request.output, detess_dtype, |o| o == d)?;
    Ok(Plan { ports })
}

/// One head of an OFM buffer as the caller names it: its span in bytes (its plan's
/// `input().capacity()`) and an optional explicit byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadSpec {
    /// The head's span in bytes.
    pub span: u64,
    /// Explicit byte offset; `None`: the sum of the spans of the heads before it (SPEC
    /// §12.1).
    pub offset: Option<u64>,
}

/// Places 1 to [`MAX_HEADS`] heads in an OFM buffer of `buffer` bytes (SPEC §12.1):
/// writes each head's byte offset into `offsets` (explicit, or by default the sum of the
/// spans of the heads before it) and checks every head against the buffer and the others
/// before anything is read. An empty head (span 0) may sit at the end of the buffer and
/// overlaps nothing.
///
/// # Errors
///
/// - [`AdmissionError::HeadCount`] for no heads or more than 32, or `offsets` shorter than
///   `heads`;
/// - [`AdmissionError::HeadOffset`] for an offset at or past the end of the buffer (past
///   it, for an empty head);
/// - [`AdmissionError::HeadSpan`] for a head that runs past the end;
/// - [`AdmissionError::HeadOverlap`] for two heads whose byte ranges overlap.
pub fn place_heads(
    buffer: u64,
    heads: &[HeadSpec],
    offsets: &mut [u64],
) -> Result<(), AdmissionError> {
    let count = heads.len();
    if count == 0 || count > MAX_HEADS || offsets.len() < count {
        return Err(AdmissionError::HeadCount { count });
    }
    let mut placed = [(0u64, 0u64); MAX_HEADS];
    let mut running: u64 = 0;
    for (head, (spec, slot)) in heads.iter().zip(placed.iter_mut()).enumerate() {
        let offset = spec.offset.unwrap_or(running);
        if offset > buffer || (offset == buffer && spec.span != 0) {
            return Err(AdmissionError::HeadOffset {
                head,
                offset,
                buffer,
            });
        }
        let end = offset.checked_add(spec.span).filter(|&e| e <= buffer);
        let Some(end) = end else {
            return Err(AdmissionError::HeadSpan {
                head,
                offset,
                span: spec.span,
                buffer,
            });
        };
        *slot = (offset, end);
        running = end;
    }
    for head in 0..count {
        let (a0, a1) = placed.get(head).copied().unwrap_or_default();
        for other in 0..head {
            let (b0, b1) = placed.get(other).copied().unwrap_or_default();
            if a0 < a1 && b0 < b1 && a0 < b1 && b0 < a1 {
                return Err(AdmissionError::HeadOverlap { head, other });
            }
        }
    }
    for (slot, &(offset, _)) in offsets.iter_mut().zip(placed.iter().take(count)) {
        *slot = offset;
    }
    Ok(())
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::layout::TileAlign;

    fn bytes(shape: [u64; 3], tile: [u32; 4], ch: Channels, align: TileAlign, d: DType) -> u64 {
        let layout =
            MlaTiled::new([None, Some(0), Some(1), Some(2)], tile, ch).with_tile_align(align);
        check_inference(&Request {
            dtype: d,
            layout,
            output: TensorSpec::contiguous(shape, d),
        })
        .unwrap()
        .input()
        .capacity()
    }

    #[test]
    fn sima_fixture_sizes() {
        let a1 = TileAlign::Bytes1;
        let a16 = TileAlign::Bytes16;
        assert_eq!(
            bytes(
                [2, 3, 33],
                [1, 2, 3, 33],
                Channels::Compact,
                a1,
                DType::BF16
            ),
            396
        );
        assert_eq!(
            bytes(
                [2, 3, 33],
                [1, 2, 3, 33],
                Channels::PadTo16,
                a16,
                DType::BF16
            ),
            576
        );
        assert_eq!(
            bytes(
                [19, 19, 273],
                [1, 19, 19, 273],
                Channels::CBlock16,
                a16,
                DType::I8
            ),
            103_968
        );
        assert_eq!(
            bytes(
                [16, 16, 16],
                [1, 16, 16, 16],
                Channels::Compact,
                a1,
                DType::I8
            ),
            4096
        );
        assert_eq!(
            bytes(
                [60, 80, 65],
                [1, 60, 80, 65],
                Channels::PadTo16,
                a16,
                DType::I8
            ),
            384_000
        );
    }

    #[test]
    fn c16_rule_and_dtypes() {
        let layout = |tc| {
            MlaTiled::new(
                [None, Some(0), Some(1), Some(2)],
                [1, 2, 3, tc],
                Channels::CBlock16,
            )
        };
        let req = |tc, d, o| Request {
            dtype: d,
            layout: layout(tc),
            output: TensorSpec::contiguous([2, 3, 40], o),
        };
        let code = |r: Request<3>| check_inference(&r).map(|_| 0).unwrap_or_else(|e| e.code());
        assert_eq!(code(req(40, DType::I8, DType::I8)), 0);
        assert_eq!(code(req(32, DType::I32, DType::I32)), 0);
        assert_eq!(code(req(20, DType::I8, DType::I8)), 0x224);
        assert_eq!(code(req(16, DType::F32, DType::F32)), 5);
        assert_eq!(code(req(16, DType::I8, DType::I16)), 0x201);
    }

    #[test]
    fn heads() {
        let h = |span, offset| HeadSpec { span, offset };
        let mut off = [0u64; 4];
        place_heads(100, &[h(40, None), h(60, None)], &mut off).unwrap();
        assert_eq!(&off[..2], &[0, 40]);
        place_heads(
            100,
            &[h(40, Some(60)), h(60, Some(0)), h(0, Some(100))],
            &mut off,
        )
        .unwrap();
        assert_eq!(&off[..3], &[60, 0, 100]);
        let code = |b, hs: &[HeadSpec]| {
            place_heads(b, hs, &mut [0; 40])
                .map(|_| 0)
                .unwrap_or_else(|e| e.code())
        };
        assert_eq!(code(100, &[]), 0x225);
        assert_eq!(code(100, &[h(1, None); 33]), 0x225);
        assert_eq!(code(100, &[h(1, Some(100))]), 0x226);
        assert_eq!(code(100, &[h(0, Some(101))]), 0x226);
        assert_eq!(code(100, &[h(60, None), h(41, None)]), 0x227);
        assert_eq!(code(100, &[h(1, Some(u64::MAX - 1))]), 0x226);
        assert_eq!(code(u64::MAX, &[h(2, Some(u64::MAX - 1))]), 0x227);
        assert_eq!(code(100, &[h(50, None), h(10, Some(45))]), 0x228);
    }
}
