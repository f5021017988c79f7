//! The `simak` command-line tool over real tensor files: Quant to INT8 (SPEC §3) on the A65
//! or the simulated EV74, CastTess / QuantTess into the `MlaTiled` layout (SPEC §4, §5) and
//! back, EV74 Quant descriptors (SPEC §7), layout diagrams.
//!
//! Exit codes: 0 success; 2 bad input or usage (one line on stderr, no output written);
//! 1 internal failure.
#![forbid(unsafe_code)]

use simak_cli::{bench, demo, engine, error, layout, packet, params, quant, read, tess, untile};

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};

use simak::layout::{Channels, MlaTiled};

use crate::error::{CliError, bad_file};
use crate::params::{
    AxesArg, Calibration, RoundingArg, parse_address, parse_axes, parse_multiplier, parse_rgb,
    parse_shape, parse_std, parse_tile, parse_u64_list, parse_zero_point,
};
use crate::quant::{QuantJob, Scale};
use crate::read::Normalize;
use crate::tess::{TessBackend, TessJob, TessOp};

/// Quantize FP32 / BF16 / FP16 tensors to INT8 exactly as the simak accelerator
/// library does.
#[derive(Debug, Parser)]
#[command(
    name = "simak",
    version,
    about,
    long_about = "Quantize FP32 / BF16 / FP16 tensors to INT8 exactly as the simak accelerator \
                  library does (q = saturate(round(binary32(x * m)) + zero_point)), on the A65 \
                  host or the simulated EV74; convert tensors and images into the accelerator's \
                  MlaTiled layout (casttess, quanttess) and back (untile, dequant); show \
                  layouts and EV74 descriptors.\n\n\
                  Exit status: 0 on success, 2 for bad input or usage (one line on stderr, no \
                  output file written), 1 for internal failures.\n\n\
                  Outputs: only files named on the command line are replaced (a derived \
                  default name that exists is refused), atomically, keeping their mode; a \
                  symbolic link is written through. \"SPEC §N\" in these texts refers to \
                  section N of docs/contract.md in the simak repository."
)]
struct Cli {
    /// Quiet: no progress bar and no summary table; only errors and any --json output are
    /// printed (`demo -q` still prints its checksum line).
    #[arg(short, long, global = true, display_order = 100)]
    quiet: bool,
    /// Print the summary as JSON on stdout instead of the text table.
    #[arg(long, global = true, display_order = 101)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Quantize the float tensors of a .safetensors or .npy file to INT8.
    #[command(
        long_about = "Quantize the float tensors of a .safetensors or .npy file to INT8.\n\n\
        Each element x becomes saturate(round(binary32(x * M)) + Z) in [-128, 127]: the product \
        is rounded once to binary32 (nearest-even, subnormals kept), then to an integer with \
        --rounding; NaN gives Z, +inf 127, -inf -128.\n\n\
        .safetensors: every F32, BF16 and F16 tensor (or only those named with --tensor) \
        becomes an I8 tensor of the same name and shape; other tensors are copied unchanged; \
        the input's metadata is kept and each quantized tensor's parameters are recorded as \
        simak.<tensor>.multiplier_bits (0x%08x), simak.<tensor>.zero_point, \
        simak.<tensor>.rounding, simak.<tensor>.input_dtype and simak.<tensor>.calibration.\n\n\
        .npy: a float32 or float16 array (little- or big-endian, C or Fortran order) becomes \
        an int8 .npy of the same shape and order.\n\n\
        From ONNX QuantizeLinear (y = saturate(round(x / scale) + zero_point)): pass \
        --multiplier with 1/scale rounded once to binary32. When 1/scale is exact (scale a \
        power of two) every result agrees; otherwise x * M and x / scale can round to \
        different binary32 values, and at exact ties the integer can differ by one (scale \
        0.039215686 = 1/25.5: x = -5 gives the tie -127.5 here, -128 under nearest-even, \
        while a library that divides gets -127.49999, -127). docs/contract.md §3.\n\n\
        The output is written to a temporary file in the output's folder and renamed over \
        --output on success (an existing file is replaced atomically); on any error nothing \
        is written. A summary table (tensor, shape, dtype, multiplier bits, zero point, \
        rounding, saturated count, elements, elements/s of the execute call) is printed on \
        stdout. \"Saturated\" counts elements whose rounded value plus zero point fell \
        outside [-128, 127]."
    )]
    Quant(QuantArgs),
    /// Convert a tensor or image to BF16 in the MlaTiled layout (writes OUT and OUT.json).
    #[command(
        long_about = "Convert a tensor or image to BF16 in the MlaTiled layout of the ML \
        accelerator (SPEC §4, §5): FP32 -> BF16 rounds to nearest-even on the bits (NaNs \
        wrap as the integer formula does), FP16 -> BF16 rounds the exact value, BF16 is \
        copied.\n\n\
        Inputs: .npy (float32, float16; C or Fortran order), .safetensors (the tensor named \
        by --tensor, or the only one; F32, BF16, F16), PNG and JPEG images (decoded under \
        limits of 16384 x 16384 pixels and --image-limit, 1024 MiB by default, which admits \
        a 48-megapixel photo; converted to RGB, then HWC FP32 [H, W, 3] as (p / 255 - mean) \
        / std in binary32; 65535 for 16-bit images).\n\n\
        --axes D,H,W,C names the logical axis playing each role (-1 absent); the other \
        axes are outer axes. --tile D,H,W,C gives the tile extents. Writes the physical \
        buffer (capacity bytes, zero padding) to --output and a JSON sidecar to \
        OUTPUT.json (op, shape, input_dtype, output_dtype, axes, tile, channels, \
        capacity_bytes, tiles_per_outer, outer_count, buffer_crc32: the CRC-32 of the \
        buffer, sidecar_crc32: the CRC-32 of the sidecar's own fields), both atomically; \
        `simak untile` reads them back and refuses a pair whose checksums do not match."
    )]
    Casttess(CastTessArgs),
    /// Quantize a tensor or image to INT8 in the MlaTiled layout (writes OUT and OUT.json).
    #[command(
        long_about = "Quantize a tensor or image to INT8 (SPEC §3) in the MlaTiled layout \
        (SPEC §5), on the A65 (QuantTess has no EV74 entry). Inputs, --axes, --tile, \
        --channels and the sidecar are as for casttess; the sidecar adds multiplier_bits, \
        zero_point and rounding. The quant flags are those of `simak quant`."
    )]
    Quanttess(QuantTessArgs),
    /// Read a tiled buffer and its sidecar back into a logical .npy (BF16 as float32, INT8
    /// as int8).
    #[command(
        long_about = "Read a tiled buffer written by casttess or quanttess (and its sidecar \
        FILE.json) back into a logical row-major .npy: CastTess BF16 values as float32 \
        (exact: the BF16 bits shifted left by 16), QuantTess values as int8. The sidecar is \
        checked against the layout the library derives and against its own sidecar_crc32, \
        and the buffer must be exactly capacity_bytes long with the sidecar's buffer_crc32 \
        (else the two files come from different runs, or one was edited: exit 2). Without \
        --output, the default INPUT with extension .npy must not exist."
    )]
    Untile(UntileArgs),
    /// Turn INT8 back into FP32: (q - zero_point) / multiplier.
    #[command(
        long_about = "Turn INT8 back into FP32 as x = (q - zero_point) / multiplier: q - \
        zero_point is an exact integer in binary32 and the division is one binary32 division \
        (round to nearest-even). .npy: an int8 array with --multiplier and --zero-point \
        (default 0); the output is a float32 .npy of the same shape and order. \
        .safetensors: every I8 tensor carrying simak.<tensor>.multiplier_bits metadata (as \
        written by `simak quant`), or those named with --tensor, with their own zero point; \
        the output has F32 tensors, the other tensors copied, and the input's metadata less \
        the simak.<tensor>.* keys of the dequantized tensors."
    )]
    Dequant(DequantArgs),
    /// Print the MlaTiled tile grid of a shape (and optionally draw it as SVG).
    #[command(
        long_about = "Print the MlaTiled tile grid of a shape (SPEC §5): the role of each \
        axis, tile counts, the tile classes (full and boundary tiles) with their extents and \
        byte sizes, bytes per outer index, capacity, and the first tiles in storage order \
        with their byte offsets. --svg FILE draws the physical buffer as rows of 16 bytes, \
        each byte labelled with the logical element (and byte plane) stored there, padding \
        in grey and tiles outlined (buffers up to 16384 bytes)."
    )]
    Layout(LayoutArgs),
    /// Encode and decode EV74 descriptors (SPEC §7).
    #[command(subcommand)]
    Packet(PacketCommand),
    /// Run the quant pipeline on embedded generated tensors (no files needed) and print a
    /// checksum of all outputs.
    #[command(
        long_about = "Run the quant pipeline on embedded generated tensors: an image-like \
        [224, 224, 3] HWC tensor in [0, 1] and a weight-like [384, 384] matrix (about N(0, \
        0.05), with outliers, infinities, a NaN and subnormals), each as FP32, BF16 and FP16, \
        quantized with fixed multipliers, absmax calibration and all four rounding modes. \
        Prints the jobs and an FNV-1a 64 checksum over all outputs (the same on every run \
        and platform for a given seed)."
    )]
    Demo(DemoArgs),
    /// Measure throughput in-process (median ns per call, elements/s) against same-run
    /// references.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Debug, Subcommand)]
enum PacketCommand {
    /// Encode a descriptor with the library's codec.
    #[command(subcommand)]
    Encode(EncodeCommand),
    /// List every field of a descriptor file (Quant v1 or CastTess v1, told apart by the
    /// magic) with its offset, then the device's verdict: valid (relocatable), valid
    /// (bound), or the rejection with its numeric code (exit 2).
    Decode(DecodeArgs),
}

#[derive(Debug, Subcommand)]
enum EncodeCommand {
    /// A 224-byte Quant v1 descriptor: relocatable (address slots zero), or bound with
    /// --input-address and --output-address.
    Quant(EncodeQuantArgs),
    /// A 216-byte CastTess v1 descriptor: relocatable (address slots zero), or bound with
    /// --input-address and --output-address (the output region is the layout's capacity,
    /// 16-byte aligned).
    Casttess(EncodeCastTessArgs),
}

#[derive(Debug, Args)]
struct EncodeCastTessArgs {
    /// Logical shape, e.g. 300,451,3 (rank 1 to 6).
    #[arg(long, value_name = "SHAPE", value_parser = parse_tess_shape)]
    shape: U64List,
    /// Input dtype.
    #[arg(long, value_enum)]
    dtype: DTypeArg,
    #[command(flatten)]
    layout: LayoutFlags,
    /// Input byte strides, one per axis (default: row-major contiguous).
    #[arg(long, value_name = "BYTES,..", value_parser = parse_list)]
    input_strides: Option<U64List>,
    /// Input bus address (decimal or 0x hex): bind the packet (with --output-address).
    #[arg(long, value_name = "A", value_parser = parse_address, requires = "output_address")]
    input_address: Option<u32>,
    /// Output bus address (decimal or 0x hex, 16-byte aligned): bind the packet (with
    /// --input-address).
    #[arg(long, value_name = "B", value_parser = parse_address, requires = "input_address")]
    output_address: Option<u32>,
    /// Where to write the 216-byte packet (atomically).
    #[arg(long, value_name = "PATH")]
    output: PathBuf,
}

#[derive(Debug, Args)]
struct EncodeQuantArgs {
    /// Logical shape, e.g. 2,3 (rank 1 to 6), or `scalar` for rank 0.
    #[arg(long, value_name = "SHAPE", value_parser = parse_list_shape)]
    shape: U64List,
    /// Input dtype.
    #[arg(long, value_enum)]
    dtype: DTypeArg,
    /// The multiplier M (decimal or 0x + 8 hex digits), as for `simak quant`.
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    multiplier: String,
    /// Zero point in [-128, 127].
    #[arg(long, value_name = "Z", allow_hyphen_values = true)]
    zero_point: Option<String>,
    /// Integer rounding.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = RoundingArg::NearestEven)]
    rounding: RoundingArg,
    /// Input byte strides, one per axis (default: row-major contiguous).
    #[arg(long, value_name = "BYTES,..", value_parser = parse_list)]
    input_strides: Option<U64List>,
    /// Output byte strides, one per axis (default: row-major contiguous).
    #[arg(long, value_name = "BYTES,..", value_parser = parse_list)]
    output_strides: Option<U64List>,
    /// Input bus address (decimal or 0x hex): bind the packet (with --output-address).
    #[arg(long, value_name = "A", value_parser = parse_address, requires = "output_address")]
    input_address: Option<u32>,
    /// Output bus address (decimal or 0x hex): bind the packet (with --input-address).
    #[arg(long, value_name = "B", value_parser = parse_address, requires = "input_address")]
    output_address: Option<u32>,
    /// Where to write the 224-byte packet (atomically).
    #[arg(long, value_name = "PATH")]
    output: PathBuf,
}

#[derive(Debug, Args)]
struct DecodeArgs {
    /// The descriptor file.
    #[arg(value_name = "PACKET")]
    packet: PathBuf,
}

/// A comma-separated list of unsigned integers.
#[derive(Debug, Clone, PartialEq, Eq)]
struct U64List(Vec<u64>);

fn parse_list(text: &str) -> Result<U64List, String> {
    parse_u64_list(text).map(U64List)
}

fn parse_list_shape(text: &str) -> Result<U64List, String> {
    parse_shape(text).map(U64List)
}

fn parse_tess_shape(text: &str) -> Result<U64List, String> {
    let shape = parse_u64_list(text)?;
    if shape.len() > simak::MAX_RANK {
        return Err(format!(
            "rank {} is above the supported maximum {}",
            shape.len(),
            simak::MAX_RANK
        ));
    }
    Ok(U64List(shape))
}

/// Channel mode of the MlaTiled layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ChannelsArg {
    /// Each pixel stores exactly the tile's channels.
    Compact,
    /// Each pixel's channels are padded with zeros to a multiple of 16.
    Pad16,
}

impl From<ChannelsArg> for Channels {
    fn from(c: ChannelsArg) -> Self {
        match c {
            ChannelsArg::Compact => Channels::Compact,
            ChannelsArg::Pad16 => Channels::PadTo16,
        }
    }
}

/// The layout flags shared by casttess, quanttess and layout.
#[derive(Debug, Args)]
struct LayoutFlags {
    /// Logical axis playing D, H, W, C; -1 for an absent role (e.g. HWC: -1,0,1,2).
    #[arg(long, value_name = "D,H,W,C", value_parser = parse_axes, allow_hyphen_values = true)]
    axes: AxesArg,
    /// Tile extents for D, H, W, C (absent roles take 1).
    #[arg(long, value_name = "D,H,W,C", value_parser = parse_tile)]
    tile: [u32; 4],
    /// Channel mode.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = ChannelsArg::Compact)]
    channels: ChannelsArg,
}

impl LayoutFlags {
    fn layout(&self) -> MlaTiled {
        MlaTiled::new(self.axes, self.tile, self.channels.into())
    }
}

#[derive(Debug, Args)]
struct TessArgs {
    /// Input: .npy, .safetensors, .png, .jpg or .jpeg.
    #[arg(long, value_name = "PATH")]
    input: PathBuf,
    /// The tensor to convert (safetensors; default: the file's only tensor).
    #[arg(long, value_name = "NAME")]
    tensor: Option<String>,
    /// The physical buffer to write; the sidecar goes to PATH.json.
    #[arg(long, value_name = "PATH")]
    output: PathBuf,
    #[command(flatten)]
    layout: LayoutFlags,
    /// Images: per-channel mean subtracted after scaling to [0, 1] [default: 0,0,0].
    #[arg(long, value_name = "R,G,B", value_parser = parse_rgb, allow_hyphen_values = true)]
    mean: Option<[f32; 3]>,
    /// Images: per-channel standard deviation divided by (each > 0) [default: 1,1,1].
    #[arg(long, value_name = "R,G,B", value_parser = parse_std, allow_hyphen_values = true)]
    std: Option<[f32; 3]>,
    /// Images: the largest FP32 tensor an image may decode to, in MiB (12 bytes per pixel;
    /// also the decoder's allocation limit). The default, 1024, admits a 48-megapixel RGB
    /// photo (8000 x 6000 x 3 FP32, 576 MB).
    #[arg(long, value_name = "MIB", default_value_t = simak_cli::read::IMAGE_DEFAULT_LIMIT >> 20,
          value_parser = clap::value_parser!(u64).range(1..=1 << 24))]
    image_limit: u64,
}

#[derive(Debug, Args)]
struct CastTessArgs {
    #[command(flatten)]
    tess: TessArgs,
    /// Execution backend: a65 (host cores) or ev74-sim (EV74 firmware on the host
    /// simulator).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = Backend::A65)]
    backend: Backend,
    /// EV74 worker ring size, 1 to 4 (with --backend ev74-sim only; 4 when not given).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4))]
    workers: Option<u64>,
}

#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("scale").required(true).args(["multiplier", "calibrate"])
))]
struct QuantTessArgs {
    #[command(flatten)]
    tess: TessArgs,
    /// The multiplier M, as for `simak quant`.
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    multiplier: Option<String>,
    /// Pick the multiplier from the data (absmax: 127 / max|x|), as for `simak quant`.
    #[arg(long, value_enum, value_name = "METHOD")]
    calibrate: Option<Calibration>,
    /// Zero point in [-128, 127]. Default 0. Not with --calibrate.
    #[arg(
        long,
        value_name = "Z",
        allow_hyphen_values = true,
        conflicts_with = "calibrate"
    )]
    zero_point: Option<String>,
    /// Integer rounding of the binary32 product.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = RoundingArg::NearestEven)]
    rounding: RoundingArg,
    /// Execution backend. Only a65: QuantTess has no EV74 entry (ev74-sim is refused).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = Backend::A65)]
    backend: Backend,
}

#[derive(Debug, Args)]
struct UntileArgs {
    /// The tiled buffer (its sidecar is INPUT.json).
    #[arg(value_name = "INPUT")]
    input: PathBuf,
    /// The logical .npy to write [default: INPUT with extension .npy, which must not exist:
    /// only a file named here is ever replaced].
    #[arg(long, value_name = "PATH")]
    output: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct DequantArgs {
    /// An int8 .npy, or a .safetensors file written by `simak quant`.
    #[arg(value_name = "INPUT")]
    input: PathBuf,
    /// Output; its format follows the input.
    #[arg(long, value_name = "PATH")]
    output: PathBuf,
    /// Dequantize only this tensor (safetensors; repeatable).
    #[arg(long = "tensor", value_name = "NAME")]
    tensors: Vec<String>,
    /// The multiplier M the data was quantized with (.npy only).
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    multiplier: Option<String>,
    /// The zero point (.npy only) [default: 0].
    #[arg(long, value_name = "Z", allow_hyphen_values = true)]
    zero_point: Option<String>,
}

/// Element storage of a layout: BF16 (CastTess, two byte planes) or INT8 (QuantTess).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TiledDType {
    /// bfloat16: two byte planes per pixel (CastTess).
    Bf16,
    /// int8: one byte plane (QuantTess).
    I8,
}

#[derive(Debug, Args)]
struct LayoutArgs {
    /// Logical shape, e.g. 300,451,3 (rank 1 to 6).
    #[arg(long, value_name = "SHAPE", value_parser = parse_tess_shape)]
    shape: U64List,
    #[command(flatten)]
    layout: LayoutFlags,
    /// Element storage.
    #[arg(long, value_enum, default_value_t = TiledDType::Bf16)]
    dtype: TiledDType,
    /// How many tiles to list in storage order.
    #[arg(long, value_name = "N", default_value_t = 8)]
    tiles: usize,
    /// Draw the physical buffer as an SVG byte map (up to 16384 bytes).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Quant of a 1-D tensor (or row-padded 2-D, see --layout) on the peers' workload
    /// (multiplier 0.5, zero point 3, nearest-even, inputs from N(0, 100) with a fixed seed
    /// and an exact tie every 16th element), with the auto-selected A65 route; plus a plain
    /// read of the input and a trivial kernel with the same traffic (read each element,
    /// store its low byte).
    Quant(BenchQuantArgs),
}

#[derive(Debug, Args)]
struct BenchQuantArgs {
    /// Input dtype.
    #[arg(long, value_enum, default_value_t = DTypeArg::F32)]
    dtype: DTypeArg,
    /// Elements per call.
    #[arg(long, value_name = "N", default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1..=1 << 31))]
    elements: u64,
    /// Threads, each running one piece of every call through the partition API
    /// (`Prepared::split`); the waiting threads spin, so use at most one per core. The
    /// references are always measured on one thread.
    #[arg(long, value_name = "T", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=256))]
    threads: u64,
    /// Repetitions; the median is reported.
    #[arg(long, value_name = "R", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=1000))]
    reps: u64,
    /// Also measure the exact integer path (slow).
    #[arg(long)]
    exact: bool,
    /// Input layout: a contiguous 1-D tensor, or a 2-D tensor of 1024-element rows whose
    /// input rows are padded by 16 elements (strided input, contiguous output; --elements
    /// rounds up to whole rows).
    #[arg(long, value_enum, default_value_t = bench::BenchLayout::Contiguous)]
    layout: bench::BenchLayout,
    /// Input values: the peers' N(0, 100) workload, or a hostile class (every element a
    /// nonzero subnormal, a NaN, or a value that saturates).
    #[arg(long, value_enum, default_value_t = bench::BenchValues::Normal)]
    values: bench::BenchValues,
}

/// Input dtype of a benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DTypeArg {
    /// IEEE binary32.
    F32,
    /// bfloat16.
    Bf16,
    /// IEEE binary16.
    F16,
}

#[derive(Debug, Args)]
#[command(group(
    ArgGroup::new("scale").required(true).args(["multiplier", "calibrate"])
))]
struct QuantArgs {
    /// Input file: .safetensors (F32, BF16, F16 tensors) or .npy (float32, float16).
    #[arg(long, value_name = "PATH")]
    input: PathBuf,
    /// Quantize only this tensor (safetensors; repeatable). Default: every F32, BF16 and
    /// F16 tensor. Unselected tensors are copied unchanged.
    #[arg(long = "tensor", value_name = "NAME")]
    tensors: Vec<String>,
    /// Output file; its format follows the input (.safetensors with I8 tensors, or int8
    /// .npy). Replaced atomically if it exists; must not be the input.
    #[arg(long, value_name = "PATH")]
    output: PathBuf,
    /// The multiplier M (it multiplies: q = x * M). A decimal such as 0.0078125, rounded
    /// once to the nearest binary32, or exact bits as 0x followed by 8 hex digits
    /// (0x3e99999a). Must be finite and > 0 (subnormals allowed). From an ONNX
    /// QuantizeLinear scale s: M = 1/s rounded to binary32 (see the long help).
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    multiplier: Option<String>,
    /// Pick the multiplier per tensor from its data instead of --multiplier. absmax:
    /// m = 127f32 / max|x| over the finite elements, computed as one binary32 division
    /// (nearest-even) of 127 by the exact f32 value of max|x|; zero point 0. A tensor with
    /// no finite nonzero element (all zero, NaN or infinite, or empty) gets m = 1.0, ONNX
    /// Runtime's rule for a zero range, and the summary says so; a tensor whose m is not
    /// finite (max|x| below about 7.5e-37) is an error.
    #[arg(long, value_enum, value_name = "METHOD")]
    calibrate: Option<Calibration>,
    /// Zero point Z added after rounding, in [-128, 127]. Default 0. Not with --calibrate.
    #[arg(
        long,
        value_name = "Z",
        allow_hyphen_values = true,
        conflicts_with = "calibrate"
    )]
    zero_point: Option<String>,
    /// Integer rounding of the binary32 product.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = RoundingArg::NearestEven)]
    rounding: RoundingArg,
    /// Execution backend. a65 runs on the host CPU cores (the fastest route the CPU offers;
    /// every route gives bit-identical results); ev74-sim runs the EV74 firmware on the host
    /// simulator (byte-identical to a65).
    #[arg(long, value_enum, value_name = "BACKEND", default_value_t = Backend::A65)]
    backend: Backend,
    /// EV74 worker ring size, 1 to 4 (with --backend ev74-sim only; 4 when not given).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=4))]
    workers: Option<u64>,
}

#[derive(Debug, Args)]
struct DemoArgs {
    /// Seed of the tensor generator, decimal or 0x hex [default: 0x5eed5a3a20240001].
    #[arg(long, value_name = "SEED", value_parser = parse_seed)]
    seed: Option<u64>,
}

/// Execution backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Backend {
    /// The A65 host CPU cores.
    A65,
    /// The EV74 vector DSP firmware on the host simulator.
    #[value(name = "ev74-sim")]
    Ev74Sim,
}

/// Default EV74 worker ring size: the full ring of SPEC §8.
const DEFAULT_WORKERS: u64 = 4;

/// The worker count of `--backend ev74-sim`; `--workers` with any other backend is a usage
/// error.
fn workers_of(backend: Backend, workers: Option<u64>) -> Result<Option<usize>, CliError> {
    match (backend, workers) {
        (Backend::Ev74Sim, w) => Ok(Some(w.unwrap_or(DEFAULT_WORKERS) as usize)),
        (Backend::A65, None) => Ok(None),
        (Backend::A65, Some(_)) => Err(CliError::Input(
            "--workers applies to --backend ev74-sim only".to_owned(),
        )),
    }
}

fn scale_of(
    input: &std::path::Path,
    multiplier: &Option<String>,
    calibrate: Option<Calibration>,
    zero_point: &Option<String>,
) -> Result<(Scale, i32), CliError> {
    let scale = match (multiplier, calibrate) {
        (Some(text), _) => Scale::Fixed(parse_multiplier(text).map_err(|e| bad_file(input, e))?),
        (None, Some(c)) => Scale::Calibrate(c),
        // clap's required group makes this unreachable; report it as usage anyway.
        (None, None) => {
            return Err(bad_file(
                input,
                "one of --multiplier or --calibrate is required",
            ));
        }
    };
    let zero_point = match zero_point {
        Some(text) => parse_zero_point(text).map_err(|e| bad_file(input, e))?,
        None => 0,
    };
    Ok((scale, zero_point))
}

fn normalize_of(tess: &TessArgs) -> Option<Normalize> {
    if tess.mean.is_none() && tess.std.is_none() {
        return None;
    }
    let d = Normalize::default();
    Some(Normalize {
        mean: tess.mean.unwrap_or(d.mean),
        std: tess.std.unwrap_or(d.std),
    })
}

fn tess_job(tess: TessArgs, op: TessOp, backend: TessBackend, quiet: bool, json: bool) -> TessJob {
    let normalize = normalize_of(&tess);
    TessJob {
        op,
        layout: tess.layout.layout(),
        input: tess.input,
        tensor: tess.tensor,
        output: tess.output,
        backend,
        normalize,
        image_limit: tess.image_limit << 20,
        quiet,
        json,
    }
}

fn parse_seed(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|e| format!("{text:?} is not a 64-bit seed: {e}"))
}

fn quant_job(args: QuantArgs, quiet: bool, json: bool) -> Result<QuantJob, CliError> {
    let input = args.input;
    let backend = match workers_of(args.backend, args.workers)? {
        None => engine::Backend::A65,
        Some(workers) => engine::Backend::Ev74Sim { workers },
    };
    let (scale, zero_point) = scale_of(&input, &args.multiplier, args.calibrate, &args.zero_point)?;
    let mut tensors: Vec<String> = Vec::with_capacity(args.tensors.len());
    for t in args.tensors {
        if !tensors.contains(&t) {
            tensors.push(t);
        }
    }
    Ok(QuantJob {
        input,
        output: args.output,
        tensors,
        scale,
        zero_point,
        rounding: args.rounding.into(),
        backend,
        quiet,
        json,
    })
}

fn dtype_of(d: DTypeArg) -> simak::DType {
    match d {
        DTypeArg::F32 => simak::DType::F32,
        DTypeArg::Bf16 => simak::DType::BF16,
        DTypeArg::F16 => simak::DType::F16,
    }
}

fn run(cli: Cli) -> Result<(), CliError> {
    let (quiet, json) = (cli.quiet, cli.json);
    match cli.command {
        Command::Quant(args) => quant::run(&quant_job(args, quiet, json)?),
        Command::Casttess(args) => {
            let backend = match workers_of(args.backend, args.workers)? {
                None => TessBackend::A65,
                Some(workers) => TessBackend::Ev74Sim { workers },
            };
            tess::run(&tess_job(args.tess, TessOp::Cast, backend, quiet, json))
        }
        Command::Quanttess(args) => {
            let (scale, zero_point) = scale_of(
                &args.tess.input,
                &args.multiplier,
                args.calibrate,
                &args.zero_point,
            )?;
            let backend = match args.backend {
                Backend::A65 => TessBackend::A65,
                Backend::Ev74Sim => TessBackend::Ev74Sim {
                    workers: DEFAULT_WORKERS as usize,
                },
            };
            let op = TessOp::Quant {
                scale,
                zero_point,
                rounding: args.rounding.into(),
            };
            tess::run(&tess_job(args.tess, op, backend, quiet, json))
        }
        Command::Untile(args) => untile::run_untile(&untile::UntileJob {
            input: args.input,
            output: args.output,
            quiet,
            json,
        }),
        Command::Dequant(args) => {
            let input = args.input;
            let multiplier = match &args.multiplier {
                Some(t) => Some(parse_multiplier(t).map_err(|e| bad_file(&input, e))?),
                None => None,
            };
            let zero_point = match &args.zero_point {
                Some(t) => Some(parse_zero_point(t).map_err(|e| bad_file(&input, e))?),
                None => None,
            };
            let mut tensors: Vec<String> = Vec::new();
            for t in args.tensors {
                if !tensors.contains(&t) {
                    tensors.push(t);
                }
            }
            untile::run_dequant(&untile::DequantJob {
                input,
                output: args.output,
                tensors,
                multiplier,
                zero_point,
                quiet,
                json,
            })
        }
        Command::Layout(args) => layout::run(&layout::LayoutJob {
            shape: args.shape.0,
            layout: args.layout.layout(),
            planes: match args.dtype {
                TiledDType::Bf16 => 2,
                TiledDType::I8 => 1,
            },
            tiles: args.tiles,
            svg: args.svg,
            quiet,
            json,
        }),
        Command::Packet(PacketCommand::Decode(args)) => {
            packet::run_decode(&args.packet, quiet, json)
        }
        Command::Packet(PacketCommand::Encode(EncodeCommand::Quant(args))) => {
            let bad =
                |e: &dyn std::fmt::Display| CliError::Input(format!("packet encode quant: {e}"));
            let multiplier = parse_multiplier(&args.multiplier).map_err(|e| bad(&e))?;
            let zero_point = match &args.zero_point {
                Some(t) => parse_zero_point(t).map_err(|e| bad(&e))?,
                None => 0,
            };
            packet::run_encode_quant(&packet::EncodeQuantJob {
                shape: args.shape.0,
                dtype: dtype_of(args.dtype),
                multiplier,
                zero_point,
                rounding: args.rounding.into(),
                input_strides: args.input_strides.map(|l| l.0),
                output_strides: args.output_strides.map(|l| l.0),
                addresses: args.input_address.zip(args.output_address),
                output: args.output,
                quiet,
                json,
            })
        }
        Command::Packet(PacketCommand::Encode(EncodeCommand::Casttess(args))) => {
            packet::run_encode_casttess(&packet::EncodeCastTessJob {
                shape: args.shape.0,
                dtype: dtype_of(args.dtype),
                layout: args.layout.layout(),
                input_strides: args.input_strides.map(|l| l.0),
                addresses: args.input_address.zip(args.output_address),
                output: args.output,
                quiet,
                json,
            })
        }
        Command::Bench(BenchCommand::Quant(args)) => bench::run(&bench::BenchJob {
            dtype: dtype_of(args.dtype),
            elements: args.elements as usize,
            threads: args.threads as usize,
            reps: args.reps as usize,
            exact: args.exact,
            layout: args.layout,
            values: args.values,
            json,
            quiet,
        }),
        Command::Demo(args) => demo::run(args.seed.unwrap_or(demo::DEFAULT_SEED), quiet, json),
    }
}

/// Prints a command-line parsing error as one line (`simak: error: …`, exit 2); help and
/// version requests print as clap prints them.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        _ => {
            let text = e.render().to_string();
            let kept: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| {
                    !l.is_empty()
                        && !l.starts_with("Usage:")
                        && !l.starts_with("For more information")
                })
                .collect();
            let line = kept.join(" ");
            let line = line.strip_prefix("error: ").unwrap_or(&line);
            simak_cli::report::emit_stderr(&CliError::Input(format!("usage: {line}")).line());
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    // Best effort: without the handler an interrupt may leave a temporary file (never a
    // partial output).
    let _ = simak_cli::output::install_interrupt_cleanup();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            simak_cli::report::emit_stderr(&e.line());
            e.exit_code()
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn default_seed_is_the_documented_one() {
        let cli = Cli::try_parse_from(["simak", "demo"]).unwrap();
        let Command::Demo(args) = cli.command else {
            panic!("not demo")
        };
        assert_eq!(args.seed, None);
        assert_eq!(parse_seed("0x5eed5a3a20240001"), Ok(demo::DEFAULT_SEED));
        assert_eq!(parse_seed("12"), Ok(12));
        assert!(parse_seed("0xzz").is_err());
    }

    #[test]
    fn negative_values_parse_as_values() {
        let cli = Cli::try_parse_from([
            "simak",
            "quant",
            "--input",
            "a.npy",
            "--output",
            "b.npy",
            "--multiplier",
            "-1",
            "--zero-point",
            "-129",
        ])
        .unwrap();
        let Command::Quant(args) = cli.command else {
            panic!("not quant")
        };
        assert_eq!(args.multiplier.as_deref(), Some("-1"));
        assert_eq!(args.zero_point.as_deref(), Some("-129"));
    }

    #[test]
    fn multiplier_and_calibrate_are_exclusive_and_one_is_required() {
        let base = ["simak", "quant", "--input", "a.npy", "--output", "b.npy"];
        assert!(Cli::try_parse_from(base).is_err());
        let both = [&base[..], &["--multiplier", "1", "--calibrate", "absmax"]].concat();
        assert!(Cli::try_parse_from(both).is_err());
        let zp = [&base[..], &["--calibrate", "absmax", "--zero-point", "3"]].concat();
        assert!(Cli::try_parse_from(zp).is_err());
    }
}
