//! `simak packet encode quant|casttess` and `simak packet decode`: the EV74 Quant v1
//! (224 bytes) and CastTess v1 (216 bytes) descriptors of SPEC §7 as the library encodes
//! them, and the device-side verdict on any file.

use std::ops::Deref;
use std::path::{Path, PathBuf};

use anyhow::anyhow;
use clap::{Args, Subcommand};
use serde::Serialize;
use simak::DType;
use simak::ev74::{
    self, CastTess, DecodeError, DevicePlan, DeviceRegion, Entry, Field, FieldValue, NativeEntry,
    Quant,
};
use simak::layout::MlaTiled;
use simak::ops::quant::{self, Params, Rounding};
use simak::ops::{Op, casttess};

use crate::engine::{self, Tensor};
use crate::error::{CliError, bad_file};
use crate::output::{Format, Target};
use crate::params::{
    DTypeArg, LayoutFlags, RoundingArg, U64List, exact_decimal, parse_address, parse_list,
    parse_list_shape, parse_multiplier, parse_tess_shape, parse_zero_point,
};
use crate::report::{self, Context, Done, shape_text};

/// `simak packet`: encode or decode a descriptor.
#[derive(Debug, Subcommand)]
pub enum PacketCommand {
    /// Encode a descriptor with the library's codec.
    #[command(subcommand)]
    Encode(EncodeCommand),
    /// List every field of a descriptor file (Quant v1, CastTess v1, Detess v1,
    /// DetessCast v1, DetessDequant v1 or Preproc v1, told apart by the magic) with its
    /// offset, then the device's verdict: valid (relocatable), valid (bound), or the
    /// rejection with its numeric code (exit 2).
    Decode(DecodeArgs),
}

/// `simak packet encode`: one subcommand per native entry.
#[derive(Debug, Subcommand)]
pub enum EncodeCommand {
    /// A 224-byte Quant v1 descriptor: relocatable (address slots zero), or bound with
    /// --input-address and --output-address.
    Quant(EncodeQuantArgs),
    /// A 216-byte CastTess v1 descriptor: relocatable (address slots zero), or bound with
    /// --input-address and --output-address (the output region is the layout's capacity,
    /// 16-byte aligned).
    Casttess(EncodeCastTessArgs),
}

/// The flags of `simak packet encode quant`.
#[derive(Debug, Args)]
pub struct EncodeQuantArgs {
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
    // --input-address, --output-address, --output.
    #[command(flatten)]
    place: Placement,
}

/// The flags of `simak packet encode casttess`.
#[derive(Debug, Args)]
#[command(
    mut_arg("output_address", |a| a.help(
        "Output bus address (decimal or 0x hex, 16-byte aligned): bind the packet (with --input-address)"
    )),
    mut_arg("output", |a| a.help("Where to write the 216-byte packet (atomically)")),
)]
pub struct EncodeCastTessArgs {
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
    // --input-address, --output-address, --output, with the help texts above.
    #[command(flatten)]
    place: Placement,
}

/// Where a packet is bound and written: the flags every `packet encode` command ends with
/// (help texts of the Quant packet; `encode casttess` words two of them for its own).
#[derive(Debug, Args)]
pub struct Placement {
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

/// The flags of `simak packet decode`.
#[derive(Debug, Args)]
pub struct DecodeArgs {
    /// The descriptor file.
    #[arg(value_name = "PACKET")]
    packet: PathBuf,
}

/// Which descriptor a file holds: a row of the library's entry table ([`ev74::ENTRIES`]),
/// with its facts and its listing and verdict functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kind(Entry);

impl Deref for Kind {
    type Target = Entry;
    fn deref(&self) -> &Entry {
        &self.0
    }
}

impl Kind {
    /// The kind of entry `E`.
    pub const fn of<E: NativeEntry>() -> Kind {
        Kind(Entry::of::<E>())
    }

    /// The descriptor a file most likely holds ([`ev74::entry_or_first`]): by its magic,
    /// else by its length, else Quant v1 (whose rules then name what is wrong).
    pub fn guess(bytes: &[u8]) -> Kind {
        Kind(*ev74::entry_or_first(bytes))
    }

    /// `quant-v1` or `casttess-v1`.
    fn id(&self) -> String {
        self.title.to_ascii_lowercase().replace(' ', "-")
    }
}

/// A rejection: the rule's message, its stable numeric code and the code's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The error's message.
    pub message: String,
    /// Stable numeric code.
    pub code: u32,
    /// The code's name.
    pub name: String,
}

impl From<DecodeError> for Rejection {
    fn from(e: DecodeError) -> Rejection {
        Rejection {
            message: e.to_string(),
            code: e.code(),
            name: format!("{:?}", e.rule()),
        }
    }
}

/// The validation verdict on a descriptor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Valid, both address slots zero.
    Relocatable,
    /// Valid and bound: the device would accept it.
    Bound,
    /// Rejected.
    Invalid(Rejection),
}

impl Verdict {
    /// `valid (relocatable)`, `valid (bound)` or `invalid: <error> (error code N, Name)`.
    pub fn text(&self) -> String {
        match self {
            Verdict::Relocatable => "valid (relocatable)".to_owned(),
            Verdict::Bound => "valid (bound)".to_owned(),
            Verdict::Invalid(r) => {
                format!("invalid: {} (error code {}, {})", r.message, r.code, r.name)
            }
        }
    }
}

impl From<ev74::Verdict> for Verdict {
    fn from(v: ev74::Verdict) -> Verdict {
        match v {
            ev74::Verdict::Relocatable => Verdict::Relocatable,
            ev74::Verdict::Bound => Verdict::Bound,
            ev74::Verdict::Invalid(e) => Verdict::Invalid(e.into()),
        }
    }
}

/// The verdict of entry `E`'s device-side rules on `bytes` ([`ev74::verdict_of`]): every
/// rule of the descriptor's parser; a packet with both address slots zero is a valid
/// relocatable packet, any other one must pass the device's `decode` (both slots bound for
/// a nonempty packet).
pub fn verdict<E: NativeEntry>(bytes: &[u8]) -> Verdict {
    ev74::verdict_of::<E>(bytes).into()
}

/// How a raw field value reads (dtype, flags, multiplier, rounding); empty otherwise.
fn meaning(kind: Kind, field: &Field) -> String {
    match (field.name, field.value) {
        (name, FieldValue::I32(-1)) if name.starts_with("axes[") => "absent".to_owned(),
        ("dtype" | "input_dtype", FieldValue::U32(code)) => DType::from_wire_code(code)
            .map_or_else(|| "invalid".to_owned(), |d| d.name().to_owned()),
        ("flags", FieldValue::Hex32(bits)) => {
            let format = &kind.format;
            let mut parts = Vec::new();
            format
                .flag_names
                .describe(bits, format.flag_mask, |part| match part {
                    Some(text) => parts.push(text.to_owned()),
                    None => parts.push(format!("unknown bits 0x{:x}", bits & !format.flag_mask)),
                });
            parts.join(" | ")
        }
        ("multiplier", FieldValue::Hex32(bits)) => {
            if f32::from_bits(bits).is_finite() {
                exact_decimal(bits)
            } else {
                f32::from_bits(bits).to_string()
            }
        }
        ("pixel_format", FieldValue::U32(code)) => simak::ev74::preproc::format_from_code(code)
            .map_or_else(|| "invalid".to_owned(), |f| f.name().to_owned()),
        ("output_kind", FieldValue::U32(code)) => {
            match simak::ev74::preproc::OutputKind::from_code(code) {
                Some(simak::ev74::preproc::OutputKind::F32) => "f32".to_owned(),
                Some(simak::ev74::preproc::OutputKind::I8) => "i8".to_owned(),
                Some(simak::ev74::preproc::OutputKind::QuantTess) => "quanttess".to_owned(),
                Some(simak::ev74::preproc::OutputKind::CastTess) => "casttess".to_owned(),
                None => "invalid".to_owned(),
            }
        }
        (name, FieldValue::Hex32(bits))
            if name == "divisor" || name.starts_with("mean[") || name.starts_with("std[") =>
        {
            if f32::from_bits(bits).is_finite() {
                exact_decimal(bits)
            } else {
                f32::from_bits(bits).to_string()
            }
        }
        ("rounding", FieldValue::U32(code)) => Rounding::ALL
            .into_iter()
            .find(|r| r.code() == code)
            .map_or_else(|| "invalid".to_owned(), |r| r.name().to_owned()),
        ("input_address" | "output_address", FieldValue::Hex64(0)) => "unbound".to_owned(),
        _ => String::new(),
    }
}

#[derive(Debug, Serialize)]
struct FieldJson {
    offset: usize,
    name: &'static str,
    value: i128,
    text: String,
    meaning: String,
}

#[derive(Debug, Serialize)]
struct VerdictJson {
    valid: bool,
    state: Option<&'static str>,
    error: Option<String>,
    code: Option<u32>,
    code_name: Option<String>,
    text: String,
}

/// The listing of a descriptor: its kind, every field with its offset, the device's verdict.
#[derive(Debug, Serialize)]
pub struct Listing {
    file: String,
    descriptor: String,
    #[serde(skip)]
    title: &'static str,
    #[serde(skip)]
    size: usize,
    entry: &'static str,
    route: u8,
    bytes: usize,
    fields: Vec<FieldJson>,
    verdict: VerdictJson,
    /// `packet decode`: why the device rejects the packet, reported after the listing.
    #[serde(skip)]
    refusal: Option<String>,
}

fn listing(kind: Kind, file: &Path, bytes: &[u8]) -> (Listing, Verdict) {
    let fields = (kind.fields)(bytes)
        .map(|fields| {
            fields
                .iter()
                .map(|f| FieldJson {
                    offset: f.offset,
                    name: f.name,
                    value: f.value.as_i128(),
                    text: f.value.to_string(),
                    meaning: meaning(kind, f),
                })
                .collect()
        })
        .unwrap_or_default();
    let verdict = Verdict::from((kind.verdict)(bytes));
    let rejection = match &verdict {
        Verdict::Invalid(r) => Some(r.clone()),
        _ => None,
    };
    let v = VerdictJson {
        valid: rejection.is_none(),
        state: match verdict {
            Verdict::Relocatable => Some("relocatable"),
            Verdict::Bound => Some("bound"),
            Verdict::Invalid(_) => None,
        },
        error: rejection.as_ref().map(|r| r.message.clone()),
        code: rejection.as_ref().map(|r| r.code),
        code_name: rejection.as_ref().map(|r| r.name.clone()),
        text: verdict.text(),
    };
    (
        Listing {
            file: file.display().to_string(),
            descriptor: kind.id(),
            title: kind.title,
            size: kind.size,
            entry: kind.name,
            route: kind.route,
            bytes: bytes.len(),
            fields,
            verdict: v,
            refusal: None,
        },
        verdict,
    )
}

fn listing_text(l: &Listing) -> String {
    let mut out = format!(
        "{}: {} descriptor ({} bytes; entry {}, route 0x{:02x})\n",
        l.file, l.title, l.bytes, l.entry, l.route
    );
    if l.fields.is_empty() {
        out.push_str(&format!("(not {} bytes long: no fields to list)\n", l.size));
    } else {
        out.push_str(&format!(
            "{:>6}  {:<18}  {:<20}  {}\n",
            "offset", "field", "value", "meaning"
        ));
        for f in &l.fields {
            out.push_str(
                format!(
                    "{:>6}  {:<18}  {:<20}  {}",
                    f.offset, f.name, f.text, f.meaning
                )
                .trim_end(),
            );
            out.push('\n');
        }
    }
    out.push_str(&format!("verdict: {}\n", l.verdict.text));
    out
}

/// Runs `simak packet decode`: lists every field with its offset, then the verdict. A
/// packet the device would reject is bad input (exit 2) after the listing
/// ([`report::Summary::status`]).
///
/// # Errors
///
/// Bad input for an unreadable file.
pub fn run_decode(args: DecodeArgs, _ctx: &Context) -> Result<Done<Listing>, CliError> {
    let input = args.packet.as_path();
    let bytes = crate::read::read_input(input, "", crate::read::Expect::Packet)?;
    let kind = Kind::guess(&bytes);
    let (mut listing, verdict) = listing(kind, input, &bytes);
    if let Verdict::Invalid(r) = verdict {
        listing.refusal = Some(format!(
            "invalid {} packet: {} (error code {}, {})",
            kind.title, r.message, r.code, r.name
        ));
    }
    Ok(Done::summary(listing))
}

impl report::Summary for Listing {
    fn text(&self) -> String {
        listing_text(self)
    }

    fn status(&self) -> Result<(), CliError> {
        match &self.refusal {
            Some(rule) => Err(bad_file(Path::new(&self.file), rule)),
            None => Ok(()),
        }
    }
}

/// The part of a `simak packet encode` request that every entry has.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// Logical shape.
    pub shape: &'a [u64],
    /// Input dtype.
    pub dtype: DType,
    /// `--input-strides` (`None`: row-major contiguous).
    pub input_strides: Option<&'a [u64]>,
    /// Where the packet is bound and written.
    pub placement: &'a Placement,
}

impl<'a> Request<'a> {
    /// The request of the flags of one command.
    fn of(
        shape: &'a U64List,
        dtype: DTypeArg,
        input_strides: &'a Option<U64List>,
        placement: &'a Placement,
    ) -> Request<'a> {
        Request {
            shape: &shape.0,
            dtype: dtype.into(),
            input_strides: input_strides.as_ref().map(|l| &l.0[..]),
            placement,
        }
    }
}

/// The flags of one `simak packet encode` command: a request for entry
/// [`EncodeArgs::Entry`], encoded by the one generic path ([`run_encode`]).
pub trait EncodeArgs {
    /// The native entry whose descriptor is encoded.
    type Entry: NativeEntry;
    /// The entry's own parameters, parsed from the flags.
    type Params;
    /// The command, as errors name it (`packet encode quant`).
    const COMMAND: &'static str;
    /// The flags every entry has.
    fn request(&self) -> Request<'_>;
    /// `--output-strides`, for an entry whose output port takes strides (none by default).
    fn output_strides(&self) -> Option<&[u64]> {
        None
    }
    /// Parses the entry's parameters, before any other check.
    ///
    /// # Errors
    ///
    /// The rule a parameter breaks, as text.
    fn params(&self) -> Result<Self::Params, String>;
    /// Checks the request of `tensor` (no data) with `params`.
    ///
    /// # Errors
    ///
    /// The library's refusal, as text.
    fn plan(
        tensor: &Tensor<'_>,
        params: &Self::Params,
    ) -> Result<<Self::Entry as Op>::Plan, String>;
}

impl EncodeArgs for EncodeQuantArgs {
    type Entry = Quant;
    type Params = Params;
    const COMMAND: &'static str = "packet encode quant";
    fn request(&self) -> Request<'_> {
        Request::of(&self.shape, self.dtype, &self.input_strides, &self.place)
    }
    fn output_strides(&self) -> Option<&[u64]> {
        self.output_strides.as_ref().map(|l| &l.0[..])
    }
    fn params(&self) -> Result<Params, String> {
        let multiplier = parse_multiplier(&self.multiplier).map_err(|e| e.to_string())?;
        let zero_point = match &self.zero_point {
            Some(t) => parse_zero_point(t).map_err(|e| e.to_string())?,
            None => 0,
        };
        Ok(Params::from_bits(multiplier.bits)
            .with_zero_point(zero_point)
            .with_rounding(self.rounding.into()))
    }
    fn plan(tensor: &Tensor<'_>, params: &Params) -> Result<quant::Plan, String> {
        engine::plan(tensor, *params).map_err(|e| e.to_string())
    }
}

impl EncodeArgs for EncodeCastTessArgs {
    type Entry = CastTess;
    type Params = MlaTiled;
    const COMMAND: &'static str = "packet encode casttess";
    fn request(&self) -> Request<'_> {
        Request::of(&self.shape, self.dtype, &self.input_strides, &self.place)
    }
    fn params(&self) -> Result<MlaTiled, String> {
        Ok(self.layout.layout())
    }
    fn plan(tensor: &Tensor<'_>, layout: &MlaTiled) -> Result<casttess::Plan, String> {
        crate::tess::cast_plan(tensor, *layout).map_err(crate::tess::layout_rule)
    }
}

/// Runs `simak packet encode quant|casttess`: checks the request, encodes its descriptor
/// with the library's codec (relocatable, or bound at the addresses), checks the device's
/// verdict on it and stages the packet.
///
/// # Errors
///
/// Bad input (exit 2) for a request the library refuses (admission, device domain,
/// binding); internal otherwise.
pub fn run_encode<A: EncodeArgs>(args: A, _ctx: &Context) -> Result<Done<Listing>, CliError> {
    let bad = |rule: String| CliError::Input(format!("{}: {rule}", A::COMMAND));
    let params = args.params().map_err(bad)?;
    let Request {
        shape,
        dtype,
        input_strides,
        placement,
    } = args.request();
    let output_strides = args.output_strides();
    let rank = shape.len();
    for (flag, strides) in [
        ("--input-strides", input_strides),
        ("--output-strides", output_strides),
    ] {
        if let Some(s) = strides
            && s.len() != rank
        {
            return Err(bad(format!(
                "{flag} has {} but the shape {} has rank {rank}",
                crate::report::count(s.len() as u64, "entry", "entries"),
                shape_text(shape)
            )));
        }
    }
    let tensor = Tensor {
        dtype,
        shape,
        strides: input_strides,
        out_strides: output_strides,
        data: &[],
    };
    let plan = A::plan(&tensor, &params).map_err(bad)?;
    let addresses = placement.input_address.zip(placement.output_address);
    let bytes = encode_bytes::<A::Entry>(&plan, addresses).map_err(bad)?;
    let output = placement.output.as_path();
    let target = Target::new("--output", output, Format::Raw)?;
    let (listing, verdict) = listing(Kind::of::<A::Entry>(), output, &bytes);
    if let Verdict::Invalid(r) = verdict {
        return Err(CliError::Internal(anyhow!(
            "the library encoded a packet its decoder rejects: {}",
            r.message
        )));
    }
    let staged = target.stage(|w| w.write_all(&bytes))?;
    Ok(Done::new(listing, vec![staged]))
}

/// The descriptor bytes of `plan` for entry `E`: relocatable, or bound to regions of the
/// plan's spans at `addresses` (input, output).
///
/// # Errors
///
/// The device-domain or binding refusal, as text.
fn encode_bytes<E: NativeEntry>(
    plan: &E::Plan,
    addresses: Option<(u32, u32)>,
) -> Result<Vec<u8>, String> {
    let device_plan: DevicePlan<E> = ev74::check_inference(plan).map_err(|e| e.to_string())?;
    Ok(match addresses {
        None => ev74::encode_relocatable(&device_plan)
            .as_bytes()
            .as_ref()
            .to_vec(),
        Some((a, b)) => {
            let input = DeviceRegion::new(a, device_plan.input_span());
            let output = DeviceRegion::new(b, device_plan.output_span());
            ev74::encode(&device_plan, input, output)
                .map_err(|e| format!("binding at 0x{a:x} / 0x{b:x}: {e}"))?
                .as_bytes()
                .as_ref()
                .to_vec()
        }
    })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn verdicts() {
        let plan = engine::plan(
            &Tensor {
                dtype: DType::F32,
                shape: &[2, 3],
                strides: None,
                out_strides: None,
                data: &[],
            },
            Params::new(1.0),
        )
        .unwrap();
        let dp = ev74::quant::check_inference(&plan).unwrap();
        let reloc = ev74::encode_relocatable(&dp);
        let quant_verdict = |b: &[u8]| verdict::<Quant>(b);
        assert_eq!(quant_verdict(reloc.as_bytes()), Verdict::Relocatable);
        let bound = ev74::encode(
            &dp,
            DeviceRegion::new(0x1000, 24),
            DeviceRegion::new(0x2000, 6),
        )
        .unwrap();
        assert_eq!(quant_verdict(bound.as_bytes()), Verdict::Bound);
        let mut half = *bound.as_bytes();
        half[32..40].fill(0);
        assert!(matches!(
            quant_verdict(&half),
            Verdict::Invalid(Rejection { code: 39, .. })
        ));
        assert!(matches!(
            quant_verdict(&half[..100]),
            Verdict::Invalid(Rejection { code: 1, .. })
        ));
        assert_eq!(
            Verdict::Invalid(Rejection::from(DecodeError::Reserved {
                offset: 20,
                value: 1
            }))
            .text(),
            "invalid: reserved word at offset 20 is 0x00000001 (error code 8, Reserved20)"
        );
        assert_eq!(Kind::guess(b"SKCT").title, "CastTess v1");
        assert_eq!(Kind::guess(&[0u8; 216]).title, "CastTess v1");
        assert_eq!(Kind::guess(&[0u8; 224]).title, "Quant v1");
        assert_eq!(Kind::guess(&[0u8; 10]).title, "Quant v1");
    }

    /// The flag word reads as before the entry table held its names (the CLI's own
    /// listing of each entry's bits).
    #[test]
    fn flag_meanings() {
        let read = |kind: Kind, bits: u32| {
            let field = Field {
                offset: 16,
                name: "flags",
                value: FieldValue::Hex32(bits),
            };
            meaning(kind, &field)
        };
        let (q, c) = (Kind::of::<Quant>(), Kind::of::<CastTess>());
        assert_eq!(read(q, 0), "strided");
        assert_eq!(read(q, 1), "input contiguous");
        assert_eq!(read(q, 2), "output contiguous");
        assert_eq!(read(q, 3), "input contiguous | output contiguous");
        assert_eq!(read(q, 0x14), "unknown bits 0x14");
        assert_eq!(read(q, 0x15), "input contiguous | unknown bits 0x14");
        assert_eq!(read(c, 0), "compact");
        assert_eq!(read(c, 1), "pad16");
        assert_eq!(read(c, 2), "compact | unknown bits 0x2");
        assert_eq!(read(c, 0x81), "pad16 | unknown bits 0x80");
    }
}
