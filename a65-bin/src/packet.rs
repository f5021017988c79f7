//! `simak packet encode quant|casttess` and `simak packet decode`: the EV74 Quant v1
//! (224 bytes) and CastTess v1 (216 bytes) descriptors of SPEC §7 as the library encodes
//! them, and the device-side verdict on any file.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde::Serialize;
use simak::DType;
use simak::ev74::{
    self, CastTess, DecodeError, DevicePlan, DeviceRegion, Field, FieldValue, NativeEntry, Quant,
};
use simak::layout::MlaTiled;
use simak::ops::quant::{Params, Rounding};

use crate::engine::{self, Tensor};
use crate::error::{CliError, bad_file};
use crate::output::{Format, Target};
use crate::params::{MultiplierArg, exact_decimal};
use crate::report::{emit, shape_text};

/// A parsed `simak packet encode quant` invocation.
#[derive(Debug, Clone)]
pub struct EncodeQuantJob {
    /// Logical shape (empty for a scalar).
    pub shape: Vec<u64>,
    /// Input dtype.
    pub dtype: DType,
    /// Multiplier.
    pub multiplier: MultiplierArg,
    /// Zero point.
    pub zero_point: i32,
    /// Rounding.
    pub rounding: Rounding,
    /// Input byte strides (`None`: row-major contiguous).
    pub input_strides: Option<Vec<u64>>,
    /// Output byte strides (`None`: row-major contiguous).
    pub output_strides: Option<Vec<u64>>,
    /// Input and output bus addresses: a bound packet; `None`: relocatable.
    pub addresses: Option<(u32, u32)>,
    /// Where to write the 224 bytes.
    pub output: PathBuf,
    /// `-q`.
    pub quiet: bool,
    /// `--json`.
    pub json: bool,
}

/// Which descriptor a file holds: one native entry's facts and its listing and verdict
/// functions (the generic ones at that entry).
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    /// `Quant v1` or `CastTess v1`.
    pub title: &'static str,
    magic: [u8; 4],
    size: usize,
    entry: &'static str,
    route: u8,
    fields: fn(&[u8]) -> Option<simak::ev74::Fields>,
    verdict: fn(&[u8]) -> Verdict,
}

impl PartialEq for Kind {
    fn eq(&self, other: &Self) -> bool {
        self.route == other.route
    }
}

impl Kind {
    /// The kind of entry `E`.
    pub const fn of<E: NativeEntry>() -> Kind {
        Kind {
            title: E::TITLE,
            magic: E::MAGIC,
            size: E::DESCRIPTOR_SIZE,
            entry: E::NAME,
            route: E::ROUTE,
            fields: E::fields,
            verdict: verdict::<E>,
        }
    }

    /// Every entry a file may hold.
    pub const ALL: [Kind; 2] = [Kind::of::<Quant>(), Kind::of::<CastTess>()];

    /// The descriptor a file most likely holds: by its magic, else by its length, else
    /// Quant v1 (whose rules then name what is wrong).
    pub fn guess(bytes: &[u8]) -> Kind {
        let by = |f: &dyn Fn(&Kind) -> bool| Kind::ALL.into_iter().find(|k| f(k));
        by(&|k| bytes.get(..4) == Some(&k.magic[..]))
            .or_else(|| by(&|k| bytes.len() == k.size))
            .unwrap_or(Kind::of::<Quant>())
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

/// The verdict of entry `E`'s device-side rules on `bytes`: every rule of the descriptor's
/// parser; a packet with both address slots zero is a valid relocatable packet, any other
/// one must pass the device's `decode` (both slots bound for a nonempty packet).
pub fn verdict<E: NativeEntry>(bytes: &[u8]) -> Verdict {
    match E::parse(bytes) {
        Err(e) => Verdict::Invalid(e.into()),
        Ok(r) if E::prefix(&r).input_address == 0 && E::prefix(&r).output_address == 0 => {
            Verdict::Relocatable
        }
        Ok(_) => match ev74::decode::<E>(bytes) {
            Ok(_) => Verdict::Bound,
            Err(e) => Verdict::Invalid(e.into()),
        },
    }
}

/// How a raw field value reads (dtype, flags, multiplier, rounding); empty otherwise.
fn meaning(kind: Kind, field: &Field) -> String {
    match (field.name, field.value) {
        ("flags", FieldValue::Hex32(bits)) if kind == Kind::of::<CastTess>() => {
            let mut parts = vec![if bits & 1 != 0 { "pad16" } else { "compact" }.to_owned()];
            if bits & !1 != 0 {
                parts.push(format!("unknown bits 0x{:x}", bits & !1));
            }
            parts.join(" | ")
        }
        (name, FieldValue::I32(-1)) if name.starts_with("axes[") => "absent".to_owned(),
        ("dtype", FieldValue::U32(code)) => DType::from_wire_code(code)
            .map_or_else(|| "invalid".to_owned(), |d| d.name().to_owned()),
        ("flags", FieldValue::Hex32(bits)) => {
            let mut parts = Vec::new();
            if bits & 1 != 0 {
                parts.push("input contiguous".to_owned());
            }
            if bits & 2 != 0 {
                parts.push("output contiguous".to_owned());
            }
            if bits & !3 != 0 {
                parts.push(format!("unknown bits 0x{:x}", bits & !3));
            }
            if parts.is_empty() {
                "strided".to_owned()
            } else {
                parts.join(" | ")
            }
        }
        ("multiplier", FieldValue::Hex32(bits)) => {
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

#[derive(Debug, Serialize)]
struct Listing {
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
    let verdict = (kind.verdict)(bytes);
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
            entry: kind.entry,
            route: kind.route,
            bytes: bytes.len(),
            fields,
            verdict: v,
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
/// packet the device would reject is bad input (exit 2) after the listing.
///
/// # Errors
///
/// Bad input for an unreadable file or an invalid packet.
pub fn run_decode(input: &Path, quiet: bool, json: bool) -> Result<(), CliError> {
    let bytes = crate::read::read_file(input, "")?;
    let kind = Kind::guess(&bytes);
    let (l, verdict) = listing(kind, input, &bytes);
    if json {
        let mut s = serde_json::to_string_pretty(&l).map_err(anyhow::Error::from)?;
        s.push('\n');
        emit(&s)?;
    } else if !quiet {
        emit(&listing_text(&l))?;
    }
    match verdict {
        Verdict::Invalid(r) => Err(bad_file(
            input,
            format!(
                "invalid {} packet: {} (error code {}, {})",
                kind.title, r.message, r.code, r.name
            ),
        )),
        _ => Ok(()),
    }
}

/// Writes an encoded packet (after checking the device's verdict on it) and prints its
/// listing.
fn finish_encode(
    kind: Kind,
    bytes: &[u8],
    output: &Path,
    quiet: bool,
    json: bool,
) -> Result<(), CliError> {
    let target = Target::new("--output", output, Format::Raw)?;
    let (l, verdict) = listing(kind, output, bytes);
    if let Verdict::Invalid(r) = verdict {
        return Err(CliError::Internal(anyhow!(
            "the library encoded a packet its decoder rejects: {}",
            r.message
        )));
    }
    target.write(|w| w.write_all(bytes))?;
    if json {
        let mut s = serde_json::to_string_pretty(&l).map_err(anyhow::Error::from)?;
        s.push('\n');
        emit(&s)
    } else if quiet {
        Ok(())
    } else {
        emit(&listing_text(&l))
    }
}

/// Runs `simak packet encode quant`.
///
/// # Errors
///
/// Bad input (exit 2) for a request the library refuses (admission, device domain,
/// binding); internal otherwise.
pub fn run_encode_quant(job: &EncodeQuantJob) -> Result<(), CliError> {
    let bad = |rule: String| CliError::Input(format!("packet encode quant: {rule}"));
    let rank = job.shape.len();
    for (flag, strides) in [
        ("--input-strides", &job.input_strides),
        ("--output-strides", &job.output_strides),
    ] {
        if let Some(s) = strides
            && s.len() != rank
        {
            return Err(bad(format!(
                "{flag} has {} but the shape {} has rank {rank}",
                crate::report::count(s.len() as u64, "entry", "entries"),
                shape_text(&job.shape)
            )));
        }
    }
    let tensor = Tensor {
        dtype: job.dtype,
        shape: &job.shape,
        strides: job.input_strides.as_deref(),
        out_strides: job.output_strides.as_deref(),
        data: &[],
    };
    let params = Params::from_bits(job.multiplier.bits)
        .with_zero_point(job.zero_point)
        .with_rounding(job.rounding);
    let plan = engine::plan(&tensor, params).map_err(|e| bad(e.to_string()))?;
    let bytes = encode_bytes::<Quant>(&plan, job.addresses).map_err(bad)?;
    finish_encode(
        Kind::of::<Quant>(),
        &bytes,
        &job.output,
        job.quiet,
        job.json,
    )
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

/// A parsed `simak packet encode casttess` invocation.
#[derive(Debug, Clone)]
pub struct EncodeCastTessJob {
    /// Logical shape (rank 1 to 6).
    pub shape: Vec<u64>,
    /// Input dtype.
    pub dtype: DType,
    /// Output layout.
    pub layout: MlaTiled,
    /// Input byte strides (`None`: row-major contiguous).
    pub input_strides: Option<Vec<u64>>,
    /// Input and output bus addresses: a bound packet; `None`: relocatable.
    pub addresses: Option<(u32, u32)>,
    /// Where to write the 216 bytes.
    pub output: PathBuf,
    /// `-q`.
    pub quiet: bool,
    /// `--json`.
    pub json: bool,
}

/// Runs `simak packet encode casttess`.
///
/// # Errors
///
/// Bad input (exit 2) for a request the library refuses (admission, device domain,
/// binding); internal otherwise.
pub fn run_encode_casttess(job: &EncodeCastTessJob) -> Result<(), CliError> {
    let bad = |rule: String| CliError::Input(format!("packet encode casttess: {rule}"));
    let rank = job.shape.len();
    if let Some(s) = &job.input_strides
        && s.len() != rank
    {
        return Err(bad(format!(
            "--input-strides has {} but the shape {} has rank {rank}",
            crate::report::count(s.len() as u64, "entry", "entries"),
            shape_text(&job.shape)
        )));
    }
    let tensor = Tensor {
        dtype: job.dtype,
        shape: &job.shape,
        strides: job.input_strides.as_deref(),
        out_strides: None,
        data: &[],
    };
    let plan = crate::tess::cast_plan(&tensor, job.layout)
        .map_err(|e| bad(crate::tess::layout_rule(e)))?;
    let bytes = encode_bytes::<CastTess>(&plan, job.addresses).map_err(bad)?;
    finish_encode(
        Kind::of::<CastTess>(),
        &bytes,
        &job.output,
        job.quiet,
        job.json,
    )
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
}
