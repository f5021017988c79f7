//! The latency catalogue of `simak-qualify`: every workload ID and its definition, as data.
//!
//! The tables below are the definition; [`catalogue`] only spells out their product in a
//! fixed order, so an ID never changes meaning and the golden list
//! (`qualify/tests/data/ids.txt`) pins the whole set:
//!
//! - Quant dense: 3 dtypes × 4 rounding modes × 36 dense workloads ([`DENSE_SHAPES`] × the
//!   value profiles [`DENSE_PROFILES`]) = 432;
//! - Quant strided: 3 dtypes × 4 modes × 18 ([`STRIDED_LAYOUTS`] × [`STRIDED_PROFILES`]) =
//!   216 (row padding, permuted axes, different input and output orders, short rows);
//! - CastTess and QuantTess ordinary: 3 dtypes × 6 frames ([`FRAMES`]) = 18 each;
//! - CastTess and QuantTess address-phase: 3 dtypes × 4 input × 4 output phases inside
//!   retained allocations ([`PHASE_FRAME`], [`input_phases`], [`OUTPUT_PHASES`]) = 48 each;
//! - Quant address-phase: 3 dtypes × 2 value profiles ([`QUANT_PHASE_PROFILES`]) × 4 input ×
//!   4 output phases ([`input_phases`], [`QUANT_OUTPUT_PHASES`]), varied independently,
//!   inside retained allocations, on [`QUANT_PHASE_SHAPE`] = 96.
//!
//! - Output side (SPEC §12, A65 only): Detess of the 9 MLA output heads of
//!   [`OUTPUT_HEADS`], DetessDequant → FP32 of the 7 integer heads, DetessCast of the 2
//!   BF16 heads, and dense Dequant → FP32 of INT8, INT16 and INT32 at 1000 and 1 Mi
//!   elements = 9 + 7 + 2 + 6 = 24.
//!
//! - Preproc (SPEC §13, A65 only): RGB8 and NV12 frames of 480×640 and 1080×1920 pixels
//!   ([`PREPROC_FRAMES`], [`PREPROC_FORMATS`]) to FP32 and INT8 strided, QuantTess and
//!   CastTess ([`PREPROC_OUTPUTS`]) = 16.
//!
//! The Quant address-phase IDs came after the first 780 and are listed after them, so every
//! earlier ID keeps its place and meaning; the output-side IDs came after the first 876, the
//! Preproc IDs after the first 900; each group is listed after the ones before it.
//!
//! QuantTess runs on the A65 only (it has no EV74 entry, SPEC §6).

use serde::Serialize;
use simak::DType;
use simak::layout::Channels;
use simak::ops::quant::Rounding;

/// The operation of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// Quant (SPEC §3).
    Quant,
    /// CastTess (SPEC §4, §5).
    CastTess,
    /// QuantTess (SPEC §3, §5).
    QuantTess,
    /// Detess (SPEC §12).
    Detess,
    /// DetessCast (SPEC §12).
    DetessCast,
    /// DetessDequant (SPEC §12.2).
    DetessDequant,
    /// Dequant (SPEC §12.2).
    Dequant,
    /// Preproc (SPEC §13).
    Preproc,
}

impl Op {
    /// The name used in IDs and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Op::Quant => "quant",
            Op::CastTess => "casttess",
            Op::QuantTess => "quanttess",
            Op::Detess => "detess",
            Op::DetessCast => "detesscast",
            Op::DetessDequant => "detessdequant",
            Op::Dequant => "dequant",
            Op::Preproc => "preproc",
        }
    }
}

/// The family of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Quant, both ports contiguous.
    Dense,
    /// Quant with strided ports.
    Strided,
    /// A tiled op on a camera frame.
    Ordinary,
    /// Ports at offsets inside retained allocations (Quant, CastTess, QuantTess).
    AddressPhase,
}

impl Kind {
    /// The name used in IDs and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Dense => "dense",
            Kind::Strided => "strided",
            Kind::Ordinary => "ordinary",
            Kind::AddressPhase => "address-phase",
        }
    }
}

/// The input values of a workload (generated from a fixed seed, [`super::values`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// N(0, 100) with an exact tie (`x · 0.5 = k + 0.5`) on every 16th element.
    Normal,
    /// Every element a nonzero subnormal of the input dtype, alternating signs.
    Subnormal,
    /// NaNs, ±∞, ±0 and exact ties, interleaved with normal values.
    Special,
    /// Normal inputs whose products with the subnormal multiplier 2^-140 underflow (to a
    /// subnormal binary32 product or to zero).
    Underflow,
    /// A per-element mix of all of the above.
    Mixed,
    /// Camera pixels: integers 0..=255 divided by 255 (every FP32 value needs rounding to
    /// BF16), a tie every 16th element.
    Pixels,
    /// MLA output bytes: every byte of the input buffer uniform (codes of any value, BF16
    /// patterns of any kind, padding included); Dequant multiplier 21.5, zero point 3.
    Codes,
    /// Camera frame bytes: every byte of the frame uniform; ImageNet's mean and std with
    /// divisor 255, and for the INT8 outputs multiplier 32 with zero point 0.
    Frame,
}

impl Profile {
    /// The name used in IDs and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Normal => "normal",
            Profile::Subnormal => "subnormal",
            Profile::Special => "special",
            Profile::Underflow => "underflow",
            Profile::Mixed => "mixed",
            Profile::Pixels => "pixels",
            Profile::Codes => "codes",
            Profile::Frame => "frame",
        }
    }

    /// The Quant parameters used with this profile: multiplier bits and zero point.
    pub fn params(self) -> (u32, i32) {
        match self {
            // 2^-140, a subnormal multiplier.
            Profile::Underflow => (1 << 9, 0),
            Profile::Subnormal => (0x3f80_0000, 0),
            // 1/2 with zero point 3 (the peers' workload); pixels: 64 with zero point -64.
            Profile::Pixels => (0x4280_0000, -64),
            // 21.5: not a power of two, so 1/s is inexact.
            Profile::Codes => (0x41ac_0000, 3),
            // 32: the normalized values (about −2.1 to 2.6) span about −68 to 84.
            Profile::Frame => (0x4200_0000, 0),
            _ => (0x3f00_0000, 3),
        }
    }
}

/// How one port of a strided workload is laid out: the physical order of its axes
/// (slowest first) and the padding, in elements, appended after each logical axis's run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortLayout {
    /// Logical axes, slowest first.
    pub order: &'static [usize],
    /// Per logical axis: elements of padding after one full run of that axis.
    pub pad: &'static [u64],
}

impl PortLayout {
    /// Row-major packed.
    pub const PACKED: PortLayout = PortLayout {
        order: &[],
        pad: &[],
    };

    /// Byte strides for `shape` with elements of `elem` bytes, and the span in bytes.
    pub fn strides(&self, shape: &[u64], elem: u64) -> (Vec<u64>, u64) {
        let rank = shape.len();
        let order: Vec<usize> = if self.order.is_empty() {
            (0..rank).collect()
        } else {
            self.order.to_vec()
        };
        let mut strides = vec![0u64; rank];
        let mut run = elem;
        for &a in order.iter().rev() {
            strides[a] = run;
            run = run * shape[a].max(1) + self.pad.get(a).copied().unwrap_or(0) * elem;
        }
        let span = if shape.contains(&0) {
            0
        } else {
            elem + shape
                .iter()
                .zip(&strides)
                .map(|(&e, &s)| (e - 1) * s)
                .sum::<u64>()
        };
        (strides, span)
    }
}

/// A dense Quant shape: its ID part and extents.
#[derive(Debug, Clone, Copy)]
pub struct DenseShape {
    /// The ID part.
    pub name: &'static str,
    /// Extents.
    pub shape: &'static [u64],
}

/// The 9 dense shapes: tiny (scalar-tail) calls, vector-sized runs, cache-sized and
/// memory-sized tensors, a 2-D matrix and an NCHW image batch.
pub const DENSE_SHAPES: [DenseShape; 9] = [
    DenseShape {
        name: "1",
        shape: &[1],
    },
    DenseShape {
        name: "7",
        shape: &[7],
    },
    DenseShape {
        name: "64",
        shape: &[64],
    },
    DenseShape {
        name: "255",
        shape: &[255],
    },
    DenseShape {
        name: "4096",
        shape: &[4096],
    },
    DenseShape {
        name: "65536",
        shape: &[65536],
    },
    DenseShape {
        name: "1048576",
        shape: &[1_048_576],
    },
    DenseShape {
        name: "256x1024",
        shape: &[256, 1024],
    },
    DenseShape {
        name: "1x3x224x224",
        shape: &[1, 3, 224, 224],
    },
];

/// The value profiles of the dense workloads (9 shapes × 4 profiles = 36).
pub const DENSE_PROFILES: [Profile; 4] = [
    Profile::Normal,
    Profile::Subnormal,
    Profile::Special,
    Profile::Underflow,
];

/// A strided Quant workload: its ID part, extents and the two port layouts.
#[derive(Debug, Clone, Copy)]
pub struct StridedLayout {
    /// The ID part.
    pub name: &'static str,
    /// Extents.
    pub shape: &'static [u64],
    /// The input port.
    pub input: PortLayout,
    /// The output port.
    pub output: PortLayout,
}

/// The 9 strided layouts.
pub const STRIDED_LAYOUTS: [StridedLayout; 9] = [
    StridedLayout {
        name: "rowpad-in-1024x1024",
        shape: &[1024, 1024],
        input: PortLayout {
            order: &[],
            pad: &[0, 16],
        },
        output: PortLayout::PACKED,
    },
    StridedLayout {
        name: "rowpad-out-1024x1024",
        shape: &[1024, 1024],
        input: PortLayout::PACKED,
        output: PortLayout {
            order: &[],
            pad: &[0, 64],
        },
    },
    StridedLayout {
        name: "rowpad-both-512x1000",
        shape: &[512, 1000],
        input: PortLayout {
            order: &[],
            pad: &[0, 24],
        },
        output: PortLayout {
            order: &[],
            pad: &[0, 24],
        },
    },
    StridedLayout {
        name: "transposed-in-1024x1024",
        shape: &[1024, 1024],
        input: PortLayout {
            order: &[1, 0],
            pad: &[],
        },
        output: PortLayout::PACKED,
    },
    StridedLayout {
        name: "nchw-to-nhwc-1x3x224x224",
        shape: &[1, 3, 224, 224],
        input: PortLayout::PACKED,
        output: PortLayout {
            order: &[0, 2, 3, 1],
            pad: &[],
        },
    },
    StridedLayout {
        name: "nhwc-to-nchw-1x3x224x224",
        shape: &[1, 3, 224, 224],
        input: PortLayout {
            order: &[0, 2, 3, 1],
            pad: &[],
        },
        output: PortLayout::PACKED,
    },
    StridedLayout {
        name: "permuted-64x64x64",
        shape: &[64, 64, 64],
        input: PortLayout {
            order: &[2, 0, 1],
            pad: &[],
        },
        output: PortLayout {
            order: &[1, 2, 0],
            pad: &[],
        },
    },
    StridedLayout {
        name: "short-rows-65536x3",
        shape: &[65536, 3],
        input: PortLayout {
            order: &[],
            pad: &[0, 1],
        },
        output: PortLayout {
            order: &[],
            pad: &[0, 1],
        },
    },
    StridedLayout {
        name: "short-rows-16384x15",
        shape: &[16384, 15],
        input: PortLayout {
            order: &[],
            pad: &[0, 1],
        },
        output: PortLayout::PACKED,
    },
];

/// The value profiles of the strided workloads (9 layouts × 2 = 18).
pub const STRIDED_PROFILES: [Profile; 2] = [Profile::Normal, Profile::Mixed];

/// An ordinary tiled workload: an HWC camera frame, its tile (H, W) and channel mode.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    /// Height, width, channels.
    pub hwc: [u64; 3],
    /// Tile height and width (the tile covers all channels).
    pub tile_hw: [u32; 2],
    /// Channel storage.
    pub channels: Channels,
}

/// The 6 frames of the ordinary cases (× 3 dtypes = 18).
pub const FRAMES: [Frame; 6] = [
    Frame {
        hwc: [480, 640, 3],
        tile_hw: [16, 64],
        channels: Channels::Compact,
    },
    Frame {
        hwc: [480, 640, 3],
        tile_hw: [16, 64],
        channels: Channels::PadTo16,
    },
    Frame {
        hwc: [720, 1280, 3],
        tile_hw: [8, 128],
        channels: Channels::Compact,
    },
    Frame {
        hwc: [720, 1280, 3],
        tile_hw: [8, 128],
        channels: Channels::PadTo16,
    },
    Frame {
        hwc: [1080, 1920, 3],
        tile_hw: [16, 64],
        channels: Channels::Compact,
    },
    Frame {
        hwc: [1080, 1920, 3],
        tile_hw: [32, 32],
        channels: Channels::PadTo16,
    },
];

/// The frame of the address-phase cases.
pub const PHASE_FRAME: Frame = Frame {
    hwc: [240, 320, 3],
    tile_hw: [16, 64],
    channels: Channels::Compact,
};

/// Input phases (bytes past a 64-byte aligned allocation start) for elements of `elem`
/// bytes: aligned, one element, half a cache line, one element short of a line.
pub fn input_phases(elem: u32) -> [u32; 4] {
    [0, elem, 32, 64 - elem]
}

/// Output phases: the tiled output must stay 16-byte aligned (SPEC §2).
pub const OUTPUT_PHASES: [u32; 4] = [0, 16, 32, 48];

/// The Quant address-phase shape: a dense 1-D tensor of 65536 elements, both ports
/// contiguous (256 KiB of FP32 input).
pub const QUANT_PHASE_SHAPE: DenseShape = DenseShape {
    name: "65536",
    shape: &[65536],
};

/// The value profiles of the Quant address-phase cases: normal values and the edge-value
/// mix (subnormals, NaNs, ±∞, ±0, ties, underflowing products).
pub const QUANT_PHASE_PROFILES: [Profile; 2] = [Profile::Normal, Profile::Mixed];

/// Quant output phases (bytes past a 64-byte aligned allocation start): the INT8 output
/// needs no alignment, so aligned, one byte, half a cache line, one byte short of a line.
pub const QUANT_OUTPUT_PHASES: [u32; 4] = [0, 1, 32, 63];

/// An MLA output head of the output-side workloads: HWC, roles H = 0, W = 1, C = 2,
/// written as a contiguous HWC tensor.
#[derive(Debug, Clone, Copy)]
pub struct OutputHead {
    /// The stored dtype.
    pub dtype: DType,
    /// Height, width, channels.
    pub hwc: [u64; 3],
    /// Tile extents D, H, W, C.
    pub tile: [u32; 4],
    /// Channel encoding.
    pub channels: Channels,
    /// Tile alignment in bytes (16 or 1).
    pub tile_align: u64,
}

/// The 9 output heads: the three heads of a YOLO-style INT8 OFM (CBlock16, tiles of 16
/// channels), an SSD head in one CBlock16 tile, a 1×1000 classifier head (Compact,
/// alignment 1), INT16 PadTo16 and INT32 Compact heads, and two BF16 heads (PadTo16 tiles
/// of 16 channels, CBlock16 in one tile).
pub const OUTPUT_HEADS: [OutputHead; 9] = [
    OutputHead {
        dtype: DType::I8,
        hwc: [80, 80, 144],
        tile: [1, 80, 80, 16],
        channels: Channels::CBlock16,
        tile_align: 16,
    },
    OutputHead {
        dtype: DType::I8,
        hwc: [40, 40, 144],
        tile: [1, 40, 40, 16],
        channels: Channels::CBlock16,
        tile_align: 16,
    },
    OutputHead {
        dtype: DType::I8,
        hwc: [20, 20, 144],
        tile: [1, 20, 20, 16],
        channels: Channels::CBlock16,
        tile_align: 16,
    },
    OutputHead {
        dtype: DType::I8,
        hwc: [19, 19, 273],
        tile: [1, 19, 19, 273],
        channels: Channels::CBlock16,
        tile_align: 16,
    },
    OutputHead {
        dtype: DType::I8,
        hwc: [1, 1, 1000],
        tile: [1, 1, 1, 1000],
        channels: Channels::Compact,
        tile_align: 1,
    },
    OutputHead {
        dtype: DType::I16,
        hwc: [40, 40, 144],
        tile: [1, 40, 40, 16],
        channels: Channels::PadTo16,
        tile_align: 16,
    },
    OutputHead {
        dtype: DType::I32,
        hwc: [20, 20, 144],
        tile: [1, 20, 20, 144],
        channels: Channels::Compact,
        tile_align: 1,
    },
    OutputHead {
        dtype: DType::BF16,
        hwc: [60, 80, 256],
        tile: [1, 60, 80, 16],
        channels: Channels::PadTo16,
        tile_align: 16,
    },
    OutputHead {
        dtype: DType::BF16,
        hwc: [19, 19, 273],
        tile: [1, 19, 19, 273],
        channels: Channels::CBlock16,
        tile_align: 16,
    },
];

/// The dense Dequant shapes (× INT8, INT16, INT32 = 6).
pub const DEQUANT_SHAPES: [DenseShape; 2] = [
    DenseShape {
        name: "1000",
        shape: &[1000],
    },
    DenseShape {
        name: "1048576",
        shape: &[1_048_576],
    },
];

/// The input dtypes, in ID order.
pub const DTYPES: [DType; 3] = [DType::F32, DType::BF16, DType::F16];

/// The tiled layout of a tiled workload (HWC, roles H = 0, W = 1, C = 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tiled {
    /// Tile extents in D, H, W, C order.
    pub tile: [u32; 4],
    /// `compact`, `pad16` or `cblock16`.
    pub channels: &'static str,
}

/// One workload of the latency catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Workload {
    /// The stable ID.
    pub id: String,
    /// The operation.
    pub op: Op,
    /// The family.
    pub kind: Kind,
    /// Input dtype name.
    pub dtype: &'static str,
    /// Rounding mode name (Quant and QuantTess).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rounding: Option<&'static str>,
    /// Logical extents.
    pub shape: Vec<u64>,
    /// Input byte strides.
    pub input_strides: Vec<u64>,
    /// Output byte strides (Quant only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_strides: Option<Vec<u64>>,
    /// The tiled layout (CastTess, QuantTess).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiled: Option<Tiled>,
    /// Bytes between the input allocation's start and the input port.
    pub input_phase: u32,
    /// Bytes between the output allocation's start and the output port.
    pub output_phase: u32,
    /// Input values.
    pub profile: Profile,
    /// Quant multiplier bits (`0x%08x`; Quant and QuantTess).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub multiplier_bits: Option<String>,
    /// Quant zero point (Quant and QuantTess).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zero_point: Option<i32>,
    /// The tile alignment in bytes (output-side ops).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tile_align: Option<u64>,
    /// The output dtype name (output-side ops).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_dtype: Option<&'static str>,
    /// The frame format (Preproc: `rgb`, `nv12`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_format: Option<&'static str>,
    /// The output (Preproc: `f32`, `i8`, `quanttess`, `casttess`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<&'static str>,
    /// The backends that run it: `a65`, and `ev74-sim` except for QuantTess and the
    /// output-side ops.
    pub backends: Vec<&'static str>,
    #[serde(skip)]
    dtype_value: Option<DType>,
    #[serde(skip)]
    rounding_value: Option<Rounding>,
    #[serde(skip)]
    channels_value: Option<Channels>,
    #[serde(skip)]
    output_dtype_value: Option<DType>,
}

impl Workload {
    /// The input dtype.
    pub fn input_dtype(&self) -> DType {
        self.dtype_value.unwrap_or(DType::F32)
    }

    /// The rounding mode (NearestEven for CastTess, where it plays no part).
    pub fn rounding_mode(&self) -> Rounding {
        self.rounding_value.unwrap_or(Rounding::NearestEven)
    }

    /// The channel storage of a tiled workload.
    pub fn channel_mode(&self) -> Channels {
        self.channels_value.unwrap_or(Channels::Compact)
    }

    /// The output dtype of an output-side workload (FP32 for the others' purposes).
    pub fn output_dtype_value(&self) -> DType {
        self.output_dtype_value.unwrap_or(DType::F32)
    }

    /// Whether the op reads an MLA output layout or writes dequantized values (SPEC §12).
    pub fn is_output_side(&self) -> bool {
        matches!(
            self.op,
            Op::Detess | Op::DetessCast | Op::DetessDequant | Op::Dequant
        )
    }

    /// Number of elements.
    pub fn elements(&self) -> u64 {
        self.shape.iter().product()
    }

    /// Whether `backend` (`a65` or `ev74-sim`) runs this workload.
    pub fn runs_on(&self, backend: &str) -> bool {
        self.backends.contains(&backend)
    }
}

/// `[a, b, c]` as `axb​xc`.
fn shape_name(shape: &[u64]) -> String {
    shape
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

fn channels_name(c: Channels) -> &'static str {
    match c {
        Channels::Compact => "compact",
        Channels::PadTo16 => "pad16",
        Channels::CBlock16 => "cblock16",
    }
}

#[allow(clippy::too_many_arguments)]
fn quant(
    kind: Kind,
    dtype: DType,
    mode: Rounding,
    part: &str,
    shape: &[u64],
    input: PortLayout,
    output: PortLayout,
    profile: Profile,
    phases: (u32, u32),
) -> Workload {
    let (m, zp) = profile.params();
    let (input_strides, _) = input.strides(shape, dtype.size() as u64);
    let (output_strides, _) = output.strides(shape, 1);
    let mut id = format!(
        "quant/{}/{}/{}/{part}/{}",
        kind.name(),
        dtype.name(),
        mode.name(),
        profile.name()
    );
    if kind == Kind::AddressPhase {
        id.push_str(&format!("/in+{}/out+{}", phases.0, phases.1));
    }
    Workload {
        id,
        op: Op::Quant,
        kind,
        dtype: dtype.name(),
        rounding: Some(mode.name()),
        shape: shape.to_vec(),
        input_strides,
        output_strides: Some(output_strides),
        tiled: None,
        input_phase: phases.0,
        output_phase: phases.1,
        profile,
        multiplier_bits: Some(format!("0x{m:08x}")),
        zero_point: Some(zp),
        tile_align: None,
        output_dtype: None,
        frame_format: None,
        to: None,
        backends: vec!["a65", "ev74-sim"],
        dtype_value: Some(dtype),
        rounding_value: Some(mode),
        channels_value: None,
        output_dtype_value: None,
    }
}

fn tiled(op: Op, kind: Kind, dtype: DType, frame: Frame, phases: (u32, u32)) -> Workload {
    let profile = match kind {
        Kind::AddressPhase => Profile::Mixed,
        _ => Profile::Pixels,
    };
    let (m, zp) = profile.params();
    let [h, w, c] = frame.hwc;
    let tile = [1, frame.tile_hw[0], frame.tile_hw[1], c as u32];
    let mut id = format!(
        "{}/{}/{}/{}/t{}x{}/{}",
        op.name(),
        kind.name(),
        dtype.name(),
        shape_name(&frame.hwc),
        tile[1],
        tile[2],
        channels_name(frame.channels)
    );
    if kind == Kind::AddressPhase {
        id.push_str(&format!("/in+{}/out+{}", phases.0, phases.1));
    }
    let quant = op == Op::QuantTess;
    let (input_strides, _) = PortLayout::PACKED.strides(&frame.hwc, dtype.size() as u64);
    Workload {
        id,
        op,
        kind,
        dtype: dtype.name(),
        rounding: quant.then_some(Rounding::NearestEven.name()),
        shape: vec![h, w, c],
        input_strides,
        output_strides: None,
        tiled: Some(Tiled {
            tile,
            channels: channels_name(frame.channels),
        }),
        input_phase: phases.0,
        output_phase: phases.1,
        profile,
        multiplier_bits: quant.then(|| format!("0x{m:08x}")),
        zero_point: quant.then_some(zp),
        tile_align: None,
        output_dtype: None,
        frame_format: None,
        to: None,
        backends: if quant {
            vec!["a65"]
        } else {
            vec!["a65", "ev74-sim"]
        },
        dtype_value: Some(dtype),
        rounding_value: quant.then_some(Rounding::NearestEven),
        channels_value: Some(frame.channels),
        output_dtype_value: None,
    }
}

/// An output-side workload (A65 only): `head` through `op` into a contiguous HWC tensor
/// of `out`, or (Dequant) a dense tensor of `shape`.
fn output_side(
    op: Op,
    head: Option<OutputHead>,
    dense: Option<(DType, DenseShape)>,
    out: DType,
) -> Workload {
    let profile = Profile::Codes;
    let (m, zp) = profile.params();
    let dequant = matches!(op, Op::DetessDequant | Op::Dequant);
    let (dtype, shape, id, tiled, tile_align, input_strides) = match (head, dense) {
        (Some(h), _) => {
            let [t0, t1, t2, t3] = h.tile;
            let id = format!(
                "{}/ordinary/{}/{}/t{t0}x{t1}x{t2}x{t3}/{}/align{}/{}",
                op.name(),
                h.dtype.name(),
                shape_name(&h.hwc),
                channels_name(h.channels),
                h.tile_align,
                out.name()
            );
            let tiled = Tiled {
                tile: h.tile,
                channels: channels_name(h.channels),
            };
            (
                h.dtype,
                h.hwc.to_vec(),
                id,
                Some(tiled),
                Some(h.tile_align),
                Vec::new(),
            )
        }
        (None, Some((dtype, shape))) => {
            let id = format!(
                "{}/dense/{}/{}/{}",
                op.name(),
                dtype.name(),
                shape.name,
                out.name()
            );
            let (strides, _) = PortLayout::PACKED.strides(shape.shape, dtype.size() as u64);
            (dtype, shape.shape.to_vec(), id, None, None, strides)
        }
        (None, None) => unreachable!("a head or a dense shape"),
    };
    let (output_strides, _) = PortLayout::PACKED.strides(&shape, out.size() as u64);
    Workload {
        id,
        op,
        kind: if head.is_some() {
            Kind::Ordinary
        } else {
            Kind::Dense
        },
        dtype: dtype.name(),
        rounding: None,
        shape,
        input_strides,
        output_strides: Some(output_strides),
        tiled,
        input_phase: 0,
        output_phase: 0,
        profile,
        multiplier_bits: dequant.then(|| format!("0x{m:08x}")),
        zero_point: dequant.then_some(zp),
        tile_align,
        output_dtype: Some(out.name()),
        frame_format: None,
        to: None,
        backends: vec!["a65"],
        dtype_value: Some(dtype),
        rounding_value: None,
        channels_value: head.map(|h| h.channels),
        output_dtype_value: Some(out),
    }
}

/// The Preproc frames (height, width): VGA and 1080p.
pub const PREPROC_FRAMES: [(u64, u64); 2] = [(480, 640), (1080, 1920)];

/// The Preproc frame formats.
pub const PREPROC_FORMATS: [&str; 2] = ["rgb", "nv12"];

/// The Preproc outputs: FP32 and INT8 strided (contiguous HWC), QuantTess and CastTess in
/// tiles of (1, 16, 64, 3), Compact.
pub const PREPROC_OUTPUTS: [&str; 4] = ["f32", "i8", "quanttess", "casttess"];

/// The Preproc tile of the tiled outputs.
pub const PREPROC_TILE: [u32; 4] = [1, 16, 64, 3];

/// A Preproc workload (A65 only): a `format` frame of `h × w` pixels to `to`, the output
/// `[h, w, 3]`.
fn preproc(format: &'static str, (h, w): (u64, u64), to: &'static str) -> Workload {
    let profile = Profile::Frame;
    let (m, zp) = profile.params();
    let quant = matches!(to, "i8" | "quanttess");
    let tiled = matches!(to, "quanttess" | "casttess");
    let shape = vec![h, w, 3];
    let out = match to {
        "f32" => DType::F32,
        "casttess" => DType::BF16,
        _ => DType::I8,
    };
    let output_strides = (!tiled).then(|| PortLayout::PACKED.strides(&shape, out.size() as u64).0);
    Workload {
        id: format!("preproc/ordinary/{format}/{h}x{w}/{to}"),
        op: Op::Preproc,
        kind: Kind::Ordinary,
        dtype: "u8",
        rounding: quant.then_some(Rounding::NearestEven.name()),
        shape,
        input_strides: Vec::new(),
        output_strides,
        tiled: tiled.then_some(Tiled {
            tile: PREPROC_TILE,
            channels: channels_name(Channels::Compact),
        }),
        input_phase: 0,
        output_phase: 0,
        profile,
        multiplier_bits: quant.then(|| format!("0x{m:08x}")),
        zero_point: quant.then_some(zp),
        tile_align: None,
        output_dtype: Some(out.name()),
        frame_format: Some(format),
        to: Some(to),
        backends: vec!["a65"],
        dtype_value: None,
        rounding_value: quant.then_some(Rounding::NearestEven),
        channels_value: tiled.then_some(Channels::Compact),
        output_dtype_value: Some(out),
    }
}

/// The whole latency catalogue, in its fixed order: Quant dense, Quant strided, then for
/// CastTess and QuantTess the ordinary and the address-phase cases, then the Quant
/// address-phase cases.
pub fn catalogue() -> Vec<Workload> {
    let mut out = Vec::new();
    for dtype in DTYPES {
        for mode in Rounding::ALL {
            for shape in DENSE_SHAPES {
                for profile in DENSE_PROFILES {
                    out.push(quant(
                        Kind::Dense,
                        dtype,
                        mode,
                        shape.name,
                        shape.shape,
                        PortLayout::PACKED,
                        PortLayout::PACKED,
                        profile,
                        (0, 0),
                    ));
                }
            }
        }
    }
    for dtype in DTYPES {
        for mode in Rounding::ALL {
            for layout in STRIDED_LAYOUTS {
                for profile in STRIDED_PROFILES {
                    out.push(quant(
                        Kind::Strided,
                        dtype,
                        mode,
                        layout.name,
                        layout.shape,
                        layout.input,
                        layout.output,
                        profile,
                        (0, 0),
                    ));
                }
            }
        }
    }
    for op in [Op::CastTess, Op::QuantTess] {
        for dtype in DTYPES {
            for frame in FRAMES {
                out.push(tiled(op, Kind::Ordinary, dtype, frame, (0, 0)));
            }
        }
        for dtype in DTYPES {
            for input in input_phases(dtype.size() as u32) {
                for output in OUTPUT_PHASES {
                    out.push(tiled(
                        op,
                        Kind::AddressPhase,
                        dtype,
                        PHASE_FRAME,
                        (input, output),
                    ));
                }
            }
        }
    }
    // Added after the first 780 IDs: listed last so that those keep their places.
    for dtype in DTYPES {
        for profile in QUANT_PHASE_PROFILES {
            for input in input_phases(dtype.size() as u32) {
                for output in QUANT_OUTPUT_PHASES {
                    out.push(quant(
                        Kind::AddressPhase,
                        dtype,
                        Rounding::NearestEven,
                        QUANT_PHASE_SHAPE.name,
                        QUANT_PHASE_SHAPE.shape,
                        PortLayout::PACKED,
                        PortLayout::PACKED,
                        profile,
                        (input, output),
                    ));
                }
            }
        }
    }
    // Added after the first 876 IDs (issue 25): listed last.
    for head in OUTPUT_HEADS {
        out.push(output_side(Op::Detess, Some(head), None, head.dtype));
    }
    for head in OUTPUT_HEADS.iter().filter(|h| h.dtype != DType::BF16) {
        out.push(output_side(
            Op::DetessDequant,
            Some(*head),
            None,
            DType::F32,
        ));
    }
    for head in OUTPUT_HEADS.iter().filter(|h| h.dtype == DType::BF16) {
        out.push(output_side(Op::DetessCast, Some(*head), None, DType::F32));
    }
    for dtype in [DType::I8, DType::I16, DType::I32] {
        for shape in DEQUANT_SHAPES {
            out.push(output_side(
                Op::Dequant,
                None,
                Some((dtype, shape)),
                DType::F32,
            ));
        }
    }
    // Added after the first 900 IDs (issue 26): listed last.
    for frame in PREPROC_FRAMES {
        for format in PREPROC_FORMATS {
            for to in PREPROC_OUTPUTS {
                out.push(preproc(format, frame, to));
            }
        }
    }
    out
}

/// Whether `id` is selected by `filter`: a glob (`*`, `?`, `[…]`) matched against the whole
/// ID when the filter has glob characters, else a substring.
///
/// # Errors
///
/// A message when the glob does not parse.
pub fn matcher(filter: Option<&str>) -> Result<impl Fn(&str) -> bool, String> {
    let pattern = match filter {
        Some(f) if f.contains(['*', '?', '[']) => Some(
            glob::Pattern::new(f)
                .map_err(|e| format!("--filter {f:?} is not a valid glob: {e}"))?,
        ),
        _ => None,
    };
    let text = filter.map(str::to_owned);
    Ok(move |id: &str| match (&pattern, &text) {
        (Some(p), _) => p.matches(id),
        (None, Some(t)) => id.contains(t.as_str()),
        (None, None) => true,
    })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn counts_are_the_documented_ones() {
        let all = catalogue();
        let count =
            |op: Op, kind: Kind| all.iter().filter(|w| w.op == op && w.kind == kind).count();
        assert_eq!(count(Op::Quant, Kind::Dense), 432);
        assert_eq!(count(Op::Quant, Kind::Strided), 216);
        assert_eq!(count(Op::CastTess, Kind::Ordinary), 18);
        assert_eq!(count(Op::CastTess, Kind::AddressPhase), 48);
        assert_eq!(count(Op::QuantTess, Kind::Ordinary), 18);
        assert_eq!(count(Op::QuantTess, Kind::AddressPhase), 48);
        assert_eq!(count(Op::Quant, Kind::AddressPhase), 96);
        assert_eq!(count(Op::Detess, Kind::Ordinary), 9);
        assert_eq!(count(Op::DetessDequant, Kind::Ordinary), 7);
        assert_eq!(count(Op::DetessCast, Kind::Ordinary), 2);
        assert_eq!(count(Op::Dequant, Kind::Dense), 6);
        assert_eq!(count(Op::Preproc, Kind::Ordinary), 16);
        assert_eq!(all.len(), 916);
        // The output-side IDs come after the first 876, the Preproc ones after the first
        // 900, on the A65 only.
        assert!(all[..876].iter().all(|w| !w.is_output_side()));
        assert!(
            all[876..900]
                .iter()
                .all(|w| w.is_output_side() && w.backends == ["a65"])
        );
        assert!(
            all[900..]
                .iter()
                .all(|w| w.op == Op::Preproc && w.backends == ["a65"])
        );
        assert!(all[..900].iter().all(|w| w.op != Op::Preproc));
        // The Quant address-phase IDs come after the first 780.
        assert!(
            all[..780]
                .iter()
                .all(|w| !w.id.starts_with("quant/address-phase/"))
        );
        assert!(
            all[780..876]
                .iter()
                .all(|w| w.op == Op::Quant && w.kind == Kind::AddressPhase)
        );
        let mut ids: Vec<&str> = all.iter().map(|w| w.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), all.len(), "IDs are unique");
    }

    #[test]
    fn quant_phases_vary_each_port_independently() {
        let all = catalogue();
        for dtype in ["f32", "bf16", "f16"] {
            for profile in ["normal", "mixed"] {
                let pairs: Vec<(u32, u32)> = all
                    .iter()
                    .filter(|w| {
                        w.op == Op::Quant
                            && w.kind == Kind::AddressPhase
                            && w.dtype == dtype
                            && w.profile.name() == profile
                    })
                    .map(|w| {
                        let suffix = format!("/in+{}/out+{}", w.input_phase, w.output_phase);
                        assert!(w.id.ends_with(&suffix), "{}", w.id);
                        assert!(w.id.starts_with(&format!(
                            "quant/address-phase/{dtype}/nearest-even/65536/{profile}/"
                        )));
                        assert_eq!(w.input_strides, [w.input_dtype().size() as u64]);
                        assert_eq!(w.output_strides.as_deref(), Some(&[1u64][..]));
                        (w.input_phase, w.output_phase)
                    })
                    .collect();
                let e = if dtype == "f32" { 4 } else { 2 };
                let mut want = Vec::new();
                for i in [0, e, 32, 64 - e] {
                    for o in [0, 1, 32, 63] {
                        want.push((i, o));
                    }
                }
                assert_eq!(pairs, want, "{dtype} {profile}");
            }
        }
    }

    #[test]
    fn port_layouts_give_the_strides_written_out() {
        let pad = PortLayout {
            order: &[],
            pad: &[0, 16],
        };
        assert_eq!(pad.strides(&[4, 8], 4), (vec![96, 4], 4 + 3 * 96 + 7 * 4));
        let t = PortLayout {
            order: &[1, 0],
            pad: &[],
        };
        assert_eq!(t.strides(&[3, 5], 2).0, vec![2, 6]);
        let nhwc = PortLayout {
            order: &[0, 2, 3, 1],
            pad: &[],
        };
        assert_eq!(nhwc.strides(&[1, 3, 4, 5], 1).0, vec![60, 1, 15, 3]);
    }

    #[test]
    fn filters_are_substrings_or_globs() {
        let m = matcher(Some("casttess/address")).unwrap();
        assert!(m(
            "casttess/address-phase/f32/240x320x3/t16x64/compact/in+0/out+0"
        ));
        assert!(!m("quanttess/address-phase/f32"));
        let g = matcher(Some("quant/*/f16/*")).unwrap();
        assert!(g("quant/dense/f16/nearest-even/1/normal"));
        assert!(!g("quanttess/ordinary/f16/x"));
        assert!(matcher(Some("[")).is_err());
    }
}
