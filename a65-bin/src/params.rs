//! Parameters as the command line gives them: the Quant multiplier, zero point, rounding
//! and calibration, and the value types and flags several commands share (shapes and
//! lists, the layout flags, the backend, the input dtype).
//!
//! The multiplier is parsed straight to the correctly rounded binary32 (`str::parse::<f32>`,
//! never through `f64`, which could round twice), or taken as exact bits (`0x` and exactly
//! eight hex digits). Validation reuses the library's rules and messages
//! ([`Multiplier::from_bits`], [`AdmissionError::ZeroPointOutOfRange`]).

use std::fmt;

use clap::{Args, ValueEnum};
use simak::layout::{Channels, MlaTiled, TileAlign};
use simak::ops::quant::{Multiplier, Rounding};
use simak::{AdmissionError, DType};

use crate::engine::Backend;
use crate::error::CliError;

/// A multiplier accepted from the command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiplierArg {
    /// The text as given.
    pub text: String,
    /// Its binary32 bits (finite, > 0).
    pub bits: u32,
}

/// Why a `--multiplier` or `--zero-point` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// The text is neither a decimal number nor `0x` with eight hex digits.
    #[error(
        "--multiplier {text:?} is neither a decimal number nor 0x followed by exactly 8 hex digits"
    )]
    MultiplierSyntax {
        /// The text given.
        text: String,
    },
    /// The value parsed but breaks a library rule (not finite, not > 0).
    #[error("--multiplier {text:?}: {rule}")]
    MultiplierRule {
        /// The text given.
        text: String,
        /// The library rule it breaks.
        rule: AdmissionError,
    },
    /// A nonzero finite decimal that rounds to zero or infinity in binary32.
    #[error(
        "--multiplier {text:?} rounds to {to} in binary32 (finite, nonzero binary32 values lie between about 1.4e-45 and 3.4e38)"
    )]
    MultiplierRounds {
        /// The text given.
        text: String,
        /// `zero` or `infinity`.
        to: &'static str,
    },
    /// The zero point is not an integer.
    #[error("--zero-point {text:?} is not an integer")]
    ZeroPointSyntax {
        /// The text given.
        text: String,
    },
    /// The zero point is outside [-128, 127].
    #[error("--zero-point {text:?}: {rule}")]
    ZeroPointRule {
        /// The text given.
        text: String,
        /// The library rule it breaks.
        rule: AdmissionError,
    },
}

/// Parses a multiplier: a decimal (correctly rounded to binary32 in one step) or `0x` followed
/// by exactly 8 hex digits (the binary32 bits).
///
/// # Errors
///
/// [`ParamError::MultiplierSyntax`] for anything else; [`ParamError::MultiplierRule`] when
/// the value is not finite or not > 0.
pub fn parse_multiplier(text: &str) -> Result<MultiplierArg, ParamError> {
    let syntax = || ParamError::MultiplierSyntax {
        text: text.to_owned(),
    };
    let trimmed = text.trim();
    let bits = if let Some(hex) = trimmed
        .strip_prefix("0x")
        .or_else(|| trimmed.strip_prefix("0X"))
    {
        if hex.len() != 8 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(syntax());
        }
        u32::from_str_radix(hex, 16).map_err(|_| syntax())?
    } else {
        // `str::parse::<f32>` is correctly rounded (nearest-even) from the decimal text.
        let value = trimmed.parse::<f32>().map_err(|_| syntax())?;
        // Say so when a nonzero finite decimal rounded away: the rule errors below would
        // otherwise report a zero or infinite multiplier the user never wrote.
        let exact = trimmed.parse::<f64>().unwrap_or(f64::NAN);
        if value == 0.0 && exact != 0.0 && exact.is_finite() && exact > 0.0 {
            return Err(ParamError::MultiplierRounds {
                text: text.to_owned(),
                to: "zero",
            });
        }
        if value.is_infinite() && exact.is_finite() {
            return Err(ParamError::MultiplierRounds {
                text: text.to_owned(),
                to: "infinity",
            });
        }
        value.to_bits()
    };
    Multiplier::from_bits(bits).map_err(|rule| ParamError::MultiplierRule {
        text: text.to_owned(),
        rule,
    })?;
    Ok(MultiplierArg {
        text: text.to_owned(),
        bits,
    })
}

/// Parses a zero point in [-128, 127].
///
/// # Errors
///
/// [`ParamError::ZeroPointSyntax`] or [`ParamError::ZeroPointRule`].
pub fn parse_zero_point(text: &str) -> Result<i32, ParamError> {
    let value: i64 = text
        .trim()
        .parse()
        .map_err(|_| ParamError::ZeroPointSyntax {
            text: text.to_owned(),
        })?;
    let rule = |zero_point: i32| ParamError::ZeroPointRule {
        text: text.to_owned(),
        rule: AdmissionError::ZeroPointOutOfRange { zero_point },
    };
    let narrow =
        i32::try_from(value).map_err(|_| rule(if value < 0 { i32::MIN } else { i32::MAX }))?;
    if !(-128..=127).contains(&narrow) {
        return Err(rule(narrow));
    }
    Ok(narrow)
}

/// Parses a dequantization zero point (SPEC §12.2): any 32-bit integer here; its range for
/// the input dtype (INT8 [-128, 127], INT16 [-32768, 32767], INT32 any) is the library's
/// rule ([`AdmissionError::DequantZeroPoint`], checked with the dtype).
///
/// # Errors
///
/// A message naming `--zero-point` when the text is not an integer or is outside `i32`.
pub fn parse_dequant_zero_point(text: &str) -> Result<i32, String> {
    let value: i64 = text
        .trim()
        .parse()
        .map_err(|_| format!("--zero-point {text:?} is not an integer"))?;
    i32::try_from(value).map_err(|_| {
        format!("--zero-point {text:?} is outside the 32-bit integers (the widest dtype, INT32)")
    })
}

/// The exact decimal value of a binary32 (every digit, no rounding).
///
/// A binary32 is `s · 2^e` with an integer `s`; for `e < 0` it has exactly `-e` digits after
/// the point once the odd significand is normalized, and formatting the (exact) `f64` with that
/// precision prints them all.
pub fn exact_decimal(bits: u32) -> String {
    let value = f32::from_bits(bits);
    if !value.is_finite() {
        return value.to_string();
    }
    let digits = match Multiplier::from_bits(bits & 0x7fff_ffff) {
        Ok(m) if m.exponent() < 0 => m.exponent().unsigned_abs() as usize,
        _ => 0,
    };
    format!("{:.*}", digits, value as f64)
}

/// Integer rounding mode, as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RoundingArg {
    /// Round half to even (default).
    NearestEven,
    /// Truncate toward zero.
    TowardZero,
    /// Ceiling: round toward +infinity.
    TowardPositive,
    /// Floor: round toward -infinity.
    TowardNegative,
}

impl From<RoundingArg> for Rounding {
    fn from(value: RoundingArg) -> Self {
        match value {
            RoundingArg::NearestEven => Rounding::NearestEven,
            RoundingArg::TowardZero => Rounding::TowardZero,
            RoundingArg::TowardPositive => Rounding::TowardPositive,
            RoundingArg::TowardNegative => Rounding::TowardNegative,
        }
    }
}

/// How the multiplier of each tensor is chosen from its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Calibration {
    /// m = 127 / max|x| over the finite elements, one binary32 division; zero point 0.
    Absmax,
}

impl fmt::Display for Calibration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Calibration::Absmax => "absmax",
        })
    }
}

/// The multiplier absmax calibration gives a tensor with no finite nonzero element (every
/// element zero, NaN or infinite, or no element at all): 1.0, the rule ONNX Runtime applies
/// to a zero range (its scale becomes 1). The library's
/// [`simak::calibrate::ZERO_RANGE_MULTIPLIER`].
pub const ZERO_RANGE_MULTIPLIER: f32 = simak::calibrate::ZERO_RANGE_MULTIPLIER;

/// What the summary says of a tensor calibrated with [`ZERO_RANGE_MULTIPLIER`].
pub const ZERO_RANGE_NOTE: &str =
    "no finite nonzero element: absmax used multiplier 1.0 (ONNX Runtime's rule for a zero range)";

/// Why absmax calibration found no multiplier for a tensor.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum CalibrationError {
    /// `127 / max|x|` is not a finite binary32 (max|x| is too small).
    #[error("--calibrate absmax: 127 / max|x| with max|x| = {abs_max:e} is not a finite binary32")]
    NotFinite {
        /// The largest finite magnitude found.
        abs_max: f32,
    },
}

/// The absmax multiplier: `m = 127f32 / abs_max`, one IEEE binary32 division (correctly
/// rounded, nearest-even), where `abs_max` is the largest finite magnitude as an `f32` (exact
/// for FP32, BF16 and FP16 elements). `None` (no finite nonzero element) gives
/// [`ZERO_RANGE_MULTIPLIER`]. The library's [`simak::calibrate::absmax_multiplier`], with
/// the error naming the command-line flag.
///
/// # Errors
///
/// [`CalibrationError::NotFinite`] when the quotient overflows to infinity.
pub fn absmax_multiplier(abs_max: Option<f32>) -> Result<u32, CalibrationError> {
    simak::calibrate::absmax_multiplier(abs_max).map_err(|e| match e {
        simak::calibrate::CalibrationError::NotFinite { abs_max } => {
            CalibrationError::NotFinite { abs_max }
        }
    })
}

/// Parses a comma-separated list of unsigned integers (decimal), e.g. `2,3`.
///
/// # Errors
///
/// A message naming the bad item.
pub fn parse_u64_list(text: &str) -> Result<Vec<u64>, String> {
    if text.trim().is_empty() {
        return Err("an empty list".to_owned());
    }
    text.split(',')
        .map(|item| {
            let item = item.trim();
            item.parse::<u64>()
                .map_err(|_| format!("{item:?} is not an unsigned integer"))
        })
        .collect()
}

/// Parses a logical shape: a comma-separated list of extents, or `scalar` for rank 0.
///
/// # Errors
///
/// A message naming the bad item; an empty text (write `scalar` for rank 0).
pub fn parse_shape(text: &str) -> Result<Vec<u64>, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("scalar") {
        return Ok(Vec::new());
    }
    if t.is_empty() {
        return Err("an empty shape (write `scalar` for rank 0)".to_owned());
    }
    check_rank(parse_u64_list(t)?)
}

/// Parses a logical shape of rank 1 to 6 (a comma-separated list of extents).
///
/// # Errors
///
/// As [`parse_u64_list`]; a rank above [`simak::MAX_RANK`].
pub fn parse_tiled_shape(text: &str) -> Result<Vec<u64>, String> {
    check_rank(parse_u64_list(text)?)
}

/// `shape` if its rank is at most [`simak::MAX_RANK`].
fn check_rank(shape: Vec<u64>) -> Result<Vec<u64>, String> {
    if shape.len() > simak::MAX_RANK {
        return Err(format!(
            "rank {} is above the supported maximum {}",
            shape.len(),
            simak::MAX_RANK
        ));
    }
    Ok(shape)
}

/// The `N` comma-separated items of `text`, trimmed; `what` names them in the error.
fn items<'t, const N: usize>(text: &'t str, what: &str) -> Result<[&'t str; N], String> {
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    <[&str; N]>::try_from(items)
        .map_err(|items| format!("expected {N} comma-separated {what}, found {}", items.len()))
}

/// The roles of the four `D,H,W,C` items, in order.
const ROLES: [&str; 4] = ["D", "H", "W", "C"];

/// The D, H, W, C axis map as given with `--axes`: logical axis indices, `-1` for absent.
pub type AxesArg = [Option<u8>; 4];

/// Parses `--axes D,H,W,C`: four logical axis indices in 0..=5, or -1 for an absent role.
/// Whether they are distinct and below the rank is the library's rule (checked with the
/// shape).
///
/// # Errors
///
/// Not exactly four items, or an item outside -1..=5.
pub fn parse_axes(text: &str) -> Result<AxesArg, String> {
    let items: [&str; 4] = items(text, "axes (D,H,W,C)")?;
    let mut axes = [None; 4];
    for (slot, (item, role)) in axes.iter_mut().zip(items.iter().zip(ROLES)) {
        let value: i64 = item
            .parse()
            .map_err(|_| format!("{role} axis {item:?} is not an integer"))?;
        *slot = match value {
            -1 => None,
            0..=5 => Some(value as u8),
            _ => {
                return Err(format!(
                    "{role} axis {value} is neither -1 (absent) nor a logical axis 0..=5"
                ));
            }
        };
    }
    Ok(axes)
}

/// Parses `--tile D,H,W,C`: four tile extents (each checked against its axis extent by the
/// library).
///
/// # Errors
///
/// Not exactly four items, or an item that is not a 32-bit unsigned integer.
pub fn parse_tile(text: &str) -> Result<[u32; 4], String> {
    let items: [&str; 4] = items(text, "tile extents (D,H,W,C)")?;
    let mut tile = [0u32; 4];
    for (slot, (item, role)) in tile.iter_mut().zip(items.iter().zip(ROLES)) {
        *slot = item
            .parse()
            .map_err(|_| format!("{role} tile {item:?} is not an unsigned 32-bit integer"))?;
    }
    Ok(tile)
}

/// Parses three finite binary32 values `r,g,b` (each decimal rounded once to binary32).
///
/// # Errors
///
/// Not exactly three items, or an item that is not a finite number.
pub fn parse_rgb(text: &str) -> Result<[f32; 3], String> {
    let items: [&str; 3] = items(text, "values (r,g,b)")?;
    let mut out = [0f32; 3];
    for (slot, item) in out.iter_mut().zip(items) {
        let v: f32 = item
            .parse()
            .map_err(|_| format!("{item:?} is not a number"))?;
        if !v.is_finite() {
            return Err(format!("{item:?} is not finite"));
        }
        *slot = v;
    }
    Ok(out)
}

/// Parses `--std r,g,b`: like [`parse_rgb`], each value > 0.
///
/// # Errors
///
/// As [`parse_rgb`], or a value ≤ 0.
pub fn parse_std(text: &str) -> Result<[f32; 3], String> {
    let values = parse_rgb(text)?;
    if let Some(v) = values.iter().find(|v| **v <= 0.0) {
        return Err(format!("standard deviation {v} is not > 0"));
    }
    Ok(values)
}

/// Parses a 32-bit device bus address: decimal or `0x` hex, in 1..=0xffffffff.
///
/// # Errors
///
/// Syntax, zero (which means unbound) or above 32 bits.
pub fn parse_address(text: &str) -> Result<u32, String> {
    let t = text.trim();
    let value = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse::<u64>(),
    }
    .map_err(|_| format!("{t:?} is not an address (decimal or 0x hex)"))?;
    let address =
        u32::try_from(value).map_err(|_| format!("{t} is outside the 32-bit device domain"))?;
    if address == 0 {
        return Err("address 0 means unbound; bound addresses are nonzero".to_owned());
    }
    Ok(address)
}

/// A comma-separated list of unsigned integers (a shape or byte strides), as a clap value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct U64List(pub Vec<u64>);

/// [`parse_u64_list`] as a clap value parser.
///
/// # Errors
///
/// As [`parse_u64_list`].
pub fn parse_list(text: &str) -> Result<U64List, String> {
    parse_u64_list(text).map(U64List)
}

/// [`parse_shape`] (rank 0 to 6, `scalar` for rank 0) as a clap value parser.
///
/// # Errors
///
/// As [`parse_shape`].
pub fn parse_list_shape(text: &str) -> Result<U64List, String> {
    parse_shape(text).map(U64List)
}

/// [`parse_tiled_shape`] (rank 1 to 6) as a clap value parser.
///
/// # Errors
///
/// As [`parse_tiled_shape`].
pub fn parse_tess_shape(text: &str) -> Result<U64List, String> {
    parse_tiled_shape(text).map(U64List)
}

/// Channel mode of the MlaTiled layout (SPEC §5, §12.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ChannelsArg {
    /// Each pixel stores exactly the tile's channels.
    Compact,
    /// Each pixel's channels are padded with zeros to a multiple of 16.
    Pad16,
    /// 16-channel blocks, for each block every pixel's 16 channels (the MLA's outputs only:
    /// detess and layout; casttess and quanttess refuse it).
    Cblock16,
}

impl From<ChannelsArg> for Channels {
    fn from(c: ChannelsArg) -> Self {
        match c {
            ChannelsArg::Compact => Channels::Compact,
            ChannelsArg::Pad16 => Channels::PadTo16,
            ChannelsArg::Cblock16 => Channels::CBlock16,
        }
    }
}

/// Parses `--tile-align`: 16 or 1 (bytes, SPEC §12.1).
///
/// # Errors
///
/// Any other text.
pub fn parse_tile_align(text: &str) -> Result<TileAlign, String> {
    match text.trim() {
        "16" => Ok(TileAlign::Bytes16),
        "1" => Ok(TileAlign::Bytes1),
        other => Err(format!(
            "tile alignment {other:?} is neither 16 nor 1 (bytes)"
        )),
    }
}

/// The layout flags shared by casttess, quanttess, layout and packet encode casttess.
#[derive(Debug, Clone, Args)]
pub struct LayoutFlags {
    /// Logical axis playing D, H, W, C; -1 for an absent role (e.g. HWC: -1,0,1,2).
    #[arg(long, value_name = "D,H,W,C", value_parser = parse_axes, allow_hyphen_values = true)]
    pub axes: AxesArg,
    /// Tile extents for D, H, W, C (absent roles take 1).
    #[arg(long, value_name = "D,H,W,C", value_parser = parse_tile)]
    pub tile: [u32; 4],
    /// Channel mode.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = ChannelsArg::Compact)]
    pub channels: ChannelsArg,
}

impl LayoutFlags {
    /// The layout metadata the flags give (checked against a shape by the library).
    pub fn layout(&self) -> MlaTiled {
        MlaTiled::new(self.axes, self.tile, self.channels.into())
    }
}

/// Words a library admission error of a layout for the command line: a layout rule names
/// its flag (`--axes`, `--tile`).
pub fn layout_rule(e: AdmissionError) -> String {
    use AdmissionError as A;
    match e {
        A::TileAxisOutOfRange { .. } | A::TileAxisRepeated { .. } => format!("--axes: {e}"),
        A::TileExtent { .. } => format!("--tile: {e}"),
        other => other.to_string(),
    }
}

/// Execution backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// The A65 host CPU cores.
    A65,
    /// The EV74 vector DSP firmware on the host simulator.
    #[value(name = "ev74-sim")]
    Ev74Sim,
}

/// Default EV74 worker ring size: the full ring of SPEC §8.
pub const DEFAULT_WORKERS: usize = 4;

impl BackendArg {
    /// The backend with the worker count of `--workers` (`ev74-sim` only, 4 when not
    /// given).
    ///
    /// # Errors
    ///
    /// Usage (exit 2) for `--workers` with any other backend.
    pub fn with_workers(self, workers: Option<u64>) -> Result<Backend, CliError> {
        match (self, workers) {
            (BackendArg::Ev74Sim, w) => Ok(Backend::Ev74Sim {
                workers: w.map_or(DEFAULT_WORKERS, |w| w as usize),
            }),
            (BackendArg::A65, None) => Ok(Backend::A65),
            (BackendArg::A65, Some(_)) => Err(CliError::Input(
                "--workers applies to --backend ev74-sim only".to_owned(),
            )),
        }
    }
}

/// The values `--threads` takes (`bench quant`, `casttess`, `quanttess`): 1 to 256.
pub fn threads_parser() -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(1..=256)
}

/// An input dtype as named on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DTypeArg {
    /// IEEE binary32.
    F32,
    /// bfloat16.
    Bf16,
    /// IEEE binary16.
    F16,
}

impl From<DTypeArg> for DType {
    fn from(d: DTypeArg) -> Self {
        match d {
            DTypeArg::F32 => DType::F32,
            DTypeArg::Bf16 => DType::BF16,
            DTypeArg::F16 => DType::F16,
        }
    }
}

/// Parses `--output-order AXES`: comma-separated axis numbers forming a permutation of
/// `0..n` (`n` = how many are given), as `numpy.transpose(x, AXES)` takes them; whether `n`
/// is a tensor's rank is checked per tensor ([`check_output_order`]).
///
/// # Errors
///
/// A message when an item is not a number, or the list is empty, repeats an axis or names
/// one ≥ `n`.
pub fn parse_output_order(text: &str) -> Result<Vec<usize>, String> {
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    let mut axes = Vec::with_capacity(items.len());
    for item in &items {
        let axis: usize = item.parse().map_err(|_| {
            format!(
                "--output-order {text:?}: {item:?} is not an axis number (expected e.g. 0,2,3,1)"
            )
        })?;
        axes.push(axis);
    }
    let n = axes.len();
    let mut seen = vec![false; n];
    for &a in &axes {
        match seen.get_mut(a) {
            Some(s) if !*s => *s = true,
            Some(_) => {
                return Err(format!(
                    "--output-order {text:?} is not a permutation: axis {a} appears twice"
                ));
            }
            None => {
                return Err(format!(
                    "--output-order {text:?} is not a permutation of 0..{n}: axis {a} is out of range"
                ));
            }
        }
    }
    Ok(axes)
}

/// Checks that `--output-order` `axes` fits a tensor of `shape`.
///
/// # Errors
///
/// A message naming both ranks when `axes.len()` is not the tensor's rank.
pub fn check_output_order(axes: &[usize], shape: &[u64]) -> Result<(), String> {
    if axes.len() == shape.len() {
        return Ok(());
    }
    Err(format!(
        "rank {} does not match --output-order {} ({} axes)",
        shape.len(),
        axes.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(","),
        axes.len()
    ))
}

/// The output byte strides (INT8: one byte per element) per input axis that store
/// `numpy.transpose(x, axes)` in C order, and that array's shape `[shape[axes[0]], ...]`.
/// `axes` must be a permutation of the axes of `shape` ([`check_output_order`]).
pub fn permuted_output(shape: &[u64], axes: &[usize]) -> (Vec<u64>, Vec<u64>) {
    let mut strides = vec![0u64; shape.len()];
    let mut acc = 1u64;
    for &a in axes.iter().rev() {
        if let Some(s) = strides.get_mut(a) {
            *s = acc;
            // An extent of 0 counts as 1: an empty tensor still gets a packed, nonzero
            // stride on every axis (admission refuses stride 0 on an axis of extent > 1).
            acc = acc.saturating_mul(shape.get(a).copied().unwrap_or(1).max(1));
        }
    }
    let permuted = axes
        .iter()
        .map(|&a| shape.get(a).copied().unwrap_or(1))
        .collect();
    (strides, permuted)
}

/// `--dtype` of a `.npy` input: how to read elements whose descr numpy cannot name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NpyDtypeArg {
    /// bfloat16 as ml_dtypes saves it: descr `<V2` (2-byte raw data), little-endian.
    Bf16,
}

impl NpyDtypeArg {
    /// The dtype the elements are read as.
    pub fn dtype(self) -> DType {
        match self {
            NpyDtypeArg::Bf16 => DType::BF16,
        }
    }
}

/// The names given with a repeatable `--tensor`, in the order given.
///
/// # Errors
///
/// Bad input when a name is given twice.
pub fn distinct(names: Vec<String>) -> Result<Vec<String>, CliError> {
    let mut out: Vec<String> = Vec::with_capacity(names.len());
    for name in names {
        if out.contains(&name) {
            return Err(CliError::Input(format!(
                "--tensor {name} is given twice (name each tensor once)"
            )));
        }
        out.push(name);
    }
    Ok(out)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn output_orders_are_permutations() {
        assert_eq!(parse_output_order("0,2,3,1").unwrap(), vec![0, 2, 3, 1]);
        assert_eq!(parse_output_order(" 1 , 0 ").unwrap(), vec![1, 0]);
        assert!(parse_output_order("0,0,1").unwrap_err().contains("twice"));
        assert!(
            parse_output_order("0,3")
                .unwrap_err()
                .contains("out of range")
        );
        assert!(
            parse_output_order("0,x")
                .unwrap_err()
                .contains("not an axis")
        );
        assert!(parse_output_order("").is_err());
        assert!(check_output_order(&[1, 0], &[2, 3]).is_ok());
        assert!(
            check_output_order(&[1, 0], &[2, 3, 4])
                .unwrap_err()
                .contains("rank 3")
        );
        // NCHW [1, 3, 4, 5] -> NHWC [1, 4, 5, 3]: C has stride 1, W 3, H 15, N 60.
        assert_eq!(
            permuted_output(&[1, 3, 4, 5], &[0, 2, 3, 1]),
            (vec![60, 1, 15, 3], vec![1, 4, 5, 3])
        );
    }

    #[test]
    fn decimal_is_rounded_once_to_binary32() {
        assert_eq!(parse_multiplier("0.0078125").unwrap().bits, 0x3c00_0000);
        assert_eq!(parse_multiplier("0.3").unwrap().bits, 0x3e99_999a);
        // Just above the midpoint 1 + 2^-24: through f64 it would land on the midpoint
        // and tie to 1.0; straight to binary32 it rounds up.
        assert_eq!(
            parse_multiplier("1.00000005960464477550").unwrap().bits,
            0x3f80_0001
        );
        assert_eq!(parse_multiplier("1e-45").unwrap().bits, 1);
    }

    #[test]
    fn decimals_that_round_away_say_so() {
        for (text, to) in [("1e-50", "zero"), ("5e-46", "zero"), ("1e39", "infinity")] {
            assert!(
                matches!(
                    parse_multiplier(text),
                    Err(ParamError::MultiplierRounds { to: t, .. }) if t == to
                ),
                "{text}"
            );
        }
        // 8e-46 is above half the smallest subnormal: it rounds up to it.
        assert_eq!(parse_multiplier("8e-46").unwrap().bits, 1);
        assert!(matches!(
            parse_multiplier("0"),
            Err(ParamError::MultiplierRule { .. })
        ));
    }

    #[test]
    fn hex_takes_exactly_eight_digits() {
        assert_eq!(parse_multiplier("0x3e99999a").unwrap().bits, 0x3e99_999a);
        assert_eq!(parse_multiplier("0X3F800000").unwrap().bits, 0x3f80_0000);
        for bad in ["0x123", "0x3e99999a0", "0xg0000000", "0x", "abc", ""] {
            assert!(
                matches!(
                    parse_multiplier(bad),
                    Err(ParamError::MultiplierSyntax { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn rules_come_from_the_library() {
        for (text, bits) in [("nan", 0x7fc0_0000), ("inf", 0x7f80_0000)] {
            assert_eq!(
                parse_multiplier(text),
                Err(ParamError::MultiplierRule {
                    text: text.into(),
                    rule: AdmissionError::MultiplierNotFinite { bits }
                })
            );
        }
        assert!(matches!(
            parse_multiplier("0x7f800000"),
            Err(ParamError::MultiplierRule {
                rule: AdmissionError::MultiplierNotFinite { .. },
                ..
            })
        ));
        for text in ["0", "-1", "-0", "-1e-50"] {
            assert!(
                matches!(
                    parse_multiplier(text),
                    Err(ParamError::MultiplierRule {
                        rule: AdmissionError::MultiplierNotPositive { .. },
                        ..
                    })
                ),
                "{text}"
            );
        }
    }

    #[test]
    fn zero_point_range() {
        assert_eq!(parse_zero_point("-128"), Ok(-128));
        assert_eq!(parse_zero_point("127"), Ok(127));
        assert!(matches!(
            parse_zero_point("128"),
            Err(ParamError::ZeroPointRule { .. })
        ));
        assert!(matches!(
            parse_zero_point("-129"),
            Err(ParamError::ZeroPointRule { .. })
        ));
        assert!(matches!(
            parse_zero_point("99999999999"),
            Err(ParamError::ZeroPointRule { .. })
        ));
        assert!(matches!(
            parse_zero_point("1.5"),
            Err(ParamError::ZeroPointSyntax { .. })
        ));
    }

    #[test]
    fn exact_decimal_prints_every_digit() {
        assert_eq!(exact_decimal(0x3f80_0000), "1");
        assert_eq!(exact_decimal(0x3c00_0000), "0.0078125");
        assert_eq!(exact_decimal(0x3dcc_cccd), "0.100000001490116119384765625");
        assert_eq!(exact_decimal(0x42fe_0000), "127");
        assert_eq!(exact_decimal(1).len(), 2 + 149);
    }

    #[test]
    fn absmax_is_one_binary32_division() {
        assert_eq!(absmax_multiplier(Some(127.0)), Ok(0x3f80_0000));
        assert_eq!(absmax_multiplier(Some(0.5)), Ok(254f32.to_bits()));
        assert_eq!(absmax_multiplier(Some(3.0)), Ok((127f32 / 3f32).to_bits()));
        assert_eq!(absmax_multiplier(None), Ok(0x3f80_0000));
        assert_eq!(absmax_multiplier(Some(0.0)), Ok(0x3f80_0000));
        assert!(matches!(
            absmax_multiplier(Some(f32::from_bits(1))),
            Err(CalibrationError::NotFinite { .. })
        ));
    }

    #[test]
    fn lists() {
        assert_eq!(parse_shape("2, 3"), Ok(vec![2, 3]));
        assert_eq!(parse_shape("scalar"), Ok(vec![]));
        assert!(parse_shape("").is_err());
        assert!(parse_shape("1,1,1,1,1,1,1").is_err());
        assert!(parse_shape("2,-3").is_err());
        assert_eq!(
            parse_axes("-1,0,1,2"),
            Ok([None, Some(0), Some(1), Some(2)])
        );
        assert!(parse_axes("-1,0,1").is_err());
        assert!(parse_axes("-2,0,1,2").is_err());
        assert!(parse_axes("6,0,1,2").is_err());
        assert_eq!(parse_tile("1,16,64,3"), Ok([1, 16, 64, 3]));
        assert!(parse_tile("1,16,64").is_err());
        assert!(parse_tile("1,16,-64,3").is_err());
        assert_eq!(parse_rgb("0.5,1,2"), Ok([0.5, 1.0, 2.0]));
        assert!(parse_rgb("0.5,nan,2").is_err());
        assert!(parse_std("1,0,1").is_err());
        assert_eq!(parse_address("0x1000"), Ok(0x1000));
        assert_eq!(parse_address("4096"), Ok(4096));
        assert!(parse_address("0").is_err());
        assert!(parse_address("0x100000000").is_err());
    }
}
