//! `simak packet encode quant` and `simak packet decode`: the 224-byte EV74 Quant v1
//! descriptor (SPEC §7) as the library encodes it, and the device-side verdict on any file.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde::Serialize;
use simak::DType;
use simak::ev74::DeviceRegion;
use simak::ev74::quant::{
    self as ev74q, DecodeError, ENTRY, Field, FieldValue, QuantDescriptorV1, QuantRepr, ROUTE,
};
use simak::ops::quant::{Params, Rounding};

use crate::engine::{self, Tensor};
use crate::error::{CliError, bad_file};
use crate::output::{check_target, write_atomic};
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

/// The validation verdict on a descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Valid, both address slots zero (or an empty packet with zero slots).
    Relocatable,
    /// Valid and bound: the device would accept it.
    Bound,
    /// Rejected with this error.
    Invalid(DecodeError),
}

impl Verdict {
    /// `valid (relocatable)`, `valid (bound)` or `invalid: <error> (error code N)`.
    pub fn text(&self) -> String {
        match self {
            Verdict::Relocatable => "valid (relocatable)".to_owned(),
            Verdict::Bound => "valid (bound)".to_owned(),
            Verdict::Invalid(e) => format!(
                "invalid: {e} (error code {}, {:?})",
                e.code().get(),
                e.code()
            ),
        }
    }
}

/// The verdict of the device-side rules on `bytes`: every rule of the Quant v1 parser; a
/// packet with both address slots zero is a valid relocatable packet, any other one must
/// pass the device's `decode` (both slots bound for a nonempty packet).
pub fn quant_verdict(bytes: &[u8]) -> Verdict {
    match QuantRepr::parse_bytes(bytes) {
        Err(e) => Verdict::Invalid(e),
        Ok(r) if r.input_address == 0 && r.output_address == 0 => Verdict::Relocatable,
        Ok(_) => match ev74q::decode(bytes) {
            Ok(_) => Verdict::Bound,
            Err(e) => Verdict::Invalid(e),
        },
    }
}

/// How a raw field value reads (dtype, flags, multiplier, rounding); empty otherwise.
fn meaning(field: &Field) -> String {
    match (field.name, field.value) {
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
    code: Option<u16>,
    code_name: Option<String>,
    text: String,
}

#[derive(Debug, Serialize)]
struct Listing {
    file: String,
    descriptor: &'static str,
    entry: &'static str,
    route: u8,
    bytes: usize,
    fields: Vec<FieldJson>,
    verdict: VerdictJson,
}

fn listing(file: &Path, bytes: &[u8]) -> (Listing, Verdict) {
    let fields = QuantDescriptorV1::new_checked(bytes)
        .map(|d| {
            d.fields()
                .iter()
                .map(|f| FieldJson {
                    offset: f.offset,
                    name: f.name,
                    value: f.value.as_i128(),
                    text: f.value.to_string(),
                    meaning: meaning(f),
                })
                .collect()
        })
        .unwrap_or_default();
    let verdict = quant_verdict(bytes);
    let v = VerdictJson {
        valid: !matches!(verdict, Verdict::Invalid(_)),
        state: match verdict {
            Verdict::Relocatable => Some("relocatable"),
            Verdict::Bound => Some("bound"),
            Verdict::Invalid(_) => None,
        },
        error: match verdict {
            Verdict::Invalid(e) => Some(e.to_string()),
            _ => None,
        },
        code: match verdict {
            Verdict::Invalid(e) => Some(e.code().get()),
            _ => None,
        },
        code_name: match verdict {
            Verdict::Invalid(e) => Some(format!("{:?}", e.code())),
            _ => None,
        },
        text: verdict.text(),
    };
    (
        Listing {
            file: file.display().to_string(),
            descriptor: "quant-v1",
            entry: ENTRY,
            route: ROUTE,
            bytes: bytes.len(),
            fields,
            verdict: v,
        },
        verdict,
    )
}

fn listing_text(l: &Listing) -> String {
    let mut out = format!(
        "{}: Quant v1 descriptor ({} bytes; entry {}, route 0x{:02x})\n",
        l.file, l.bytes, l.entry, l.route
    );
    if l.fields.is_empty() {
        out.push_str("(not 224 bytes long: no fields to list)\n");
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
/// Bad input for an unreadable file, a CastTess packet, or an invalid packet.
pub fn run_decode(input: &Path, quiet: bool, json: bool) -> Result<(), CliError> {
    let bytes = std::fs::read(input).map_err(|e| bad_file(input, format!("cannot read: {e}")))?;
    if bytes.get(..4) == Some(b"SKCT".as_slice()) {
        return Err(bad_file(
            input,
            "a CastTess v1 packet (magic SKCT): this build has no CastTess descriptor codec",
        ));
    }
    let (l, verdict) = listing(input, &bytes);
    if json {
        let mut s = serde_json::to_string_pretty(&l).map_err(anyhow::Error::from)?;
        s.push('\n');
        emit(&s)?;
    } else if !quiet {
        emit(&listing_text(&l))?;
    }
    match verdict {
        Verdict::Invalid(e) => Err(bad_file(
            input,
            format!(
                "invalid Quant v1 packet: {e} (error code {}, {:?})",
                e.code().get(),
                e.code()
            ),
        )),
        _ => Ok(()),
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
                "{flag} has {} entries but the shape {} has rank {rank}",
                s.len(),
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
    let device_plan = ev74q::check_inference(&plan).map_err(|e| bad(e.to_string()))?;
    let bytes: Vec<u8> = match job.addresses {
        None => ev74q::encode_relocatable(&device_plan).as_bytes().to_vec(),
        Some((a, b)) => {
            let input = DeviceRegion::new(a, plan.input().span());
            let output = DeviceRegion::new(b, plan.output().span());
            ev74q::encode(&device_plan, input, output)
                .map_err(|e| bad(format!("binding at 0x{a:x} / 0x{b:x}: {e}")))?
                .as_bytes()
                .to_vec()
        }
    };
    check_target(&job.output)?;
    let (l, verdict) = listing(&job.output, &bytes);
    if let Verdict::Invalid(e) = verdict {
        return Err(CliError::Internal(anyhow!(
            "the library encoded a packet its decoder rejects: {e}"
        )));
    }
    write_atomic(&job.output, |w| w.write_all(&bytes))?;
    if job.json {
        let mut s = serde_json::to_string_pretty(&l).map_err(anyhow::Error::from)?;
        s.push('\n');
        emit(&s)
    } else if job.quiet {
        Ok(())
    } else {
        emit(&listing_text(&l))
    }
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
        let dp = ev74q::check_inference(&plan).unwrap();
        let reloc = ev74q::encode_relocatable(&dp);
        assert_eq!(quant_verdict(reloc.as_bytes()), Verdict::Relocatable);
        let bound = ev74q::encode(
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
            Verdict::Invalid(DecodeError::OutputUnbound)
        ));
        assert!(matches!(
            quant_verdict(&half[..100]),
            Verdict::Invalid(DecodeError::Length { found: 100 })
        ));
        assert_eq!(
            Verdict::Invalid(DecodeError::Reserved20 { value: 1 }).text(),
            "invalid: reserved word at offset 20 is 0x00000001 (error code 8, Reserved20)"
        );
    }
}
