//! The EV74 descriptors: relocatable encoding of a plan and decoding of a packet into its
//! fields.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use simak::ev74::{self, DecodeError, Entry, FieldValue};

use crate::casttess::CastTessPlan;
use crate::detess::{DetessPlan, OFM_NAMES, Prepared};
use crate::errors::{Names, QUANT_NAMES, TILED_NAMES, guarded, lib_error, simak_error};

/// The argument names of Preproc errors.
const PREPROC_NAMES: Names = Names {
    input: "frame",
    output: "out",
};
use crate::preproc::PreprocPlan;
use crate::quant::QuantPlan;

/// The relocatable EV74 Quant v1 descriptor of `plan` (224 bytes, address slots 0).
#[pyfunction]
pub(crate) fn ev74_quant_encode_relocatable<'py>(
    py: Python<'py>,
    plan: &Bound<'py, QuantPlan>,
) -> PyResult<Bound<'py, PyBytes>> {
    guarded(py, || {
        let device = ev74::check_inference(plan.get().prepared.plan())
            .map_err(|e| lib_error(py, e, QUANT_NAMES))?;
        let packet = ev74::encode_relocatable(&device);
        Ok(PyBytes::new(py, packet.as_bytes().as_ref()))
    })
}

/// The relocatable EV74 CastTess v1 descriptor of `plan` (216 bytes, address slots 0).
#[pyfunction]
pub(crate) fn ev74_casttess_encode_relocatable<'py>(
    py: Python<'py>,
    plan: &Bound<'py, CastTessPlan>,
) -> PyResult<Bound<'py, PyBytes>> {
    guarded(py, || {
        let device = ev74::check_inference(plan.get().prepared.plan())
            .map_err(|e| lib_error(py, e, TILED_NAMES))?;
        let packet = ev74::encode_relocatable(&device);
        Ok(PyBytes::new(py, packet.as_bytes().as_ref()))
    })
}

/// The relocatable EV74 descriptor of a Detess-family head `plan` (224 bytes, address slots
/// 0): Detess v1, DetessCast v1 or DetessDequant v1 by the plan's op.
#[pyfunction]
pub(crate) fn ev74_detess_encode_relocatable<'py>(
    py: Python<'py>,
    plan: &Bound<'py, DetessPlan>,
) -> PyResult<Bound<'py, PyBytes>> {
    fn bytes<'py, P>(py: Python<'py>, plan: &P) -> PyResult<Bound<'py, PyBytes>>
    where
        P: simak::ops::OpPlan,
        P::Op: ev74::NativeEntry,
    {
        let device = ev74::check_inference(plan).map_err(|e| lib_error(py, e, OFM_NAMES))?;
        let packet = ev74::encode_relocatable(&device);
        Ok(PyBytes::new(py, packet.as_bytes().as_ref()))
    }
    guarded(py, || match plan.get().prepared() {
        Prepared::Detess(p) => bytes(py, p.plan()),
        Prepared::Cast(p) => bytes(py, p.plan()),
        Prepared::Dequant(p) => bytes(py, p.plan()),
    })
}

/// The relocatable EV74 Preproc v1 descriptor of `plan` (368 bytes, address slots 0): the
/// plan's frame geometry, normalization, border and output.
#[pyfunction]
pub(crate) fn ev74_preproc_encode_relocatable<'py>(
    py: Python<'py>,
    plan: &Bound<'py, PreprocPlan>,
) -> PyResult<Bound<'py, PyBytes>> {
    guarded(py, || {
        let device = ev74::check_inference(plan.get().core_plan())
            .map_err(|e| lib_error(py, e, PREPROC_NAMES))?;
        let packet = ev74::encode_relocatable(&device);
        Ok(PyBytes::new(py, packet.as_bytes().as_ref()))
    })
}

/// Binds `packet`, which must be `plan`'s relocatable encoding (else 0x310), to the device
/// regions `input` and `output` (bus address, capacity in bytes): the bound descriptor.
fn bind_bytes<'py, P>(
    py: Python<'py>,
    plan: &P,
    packet: &[u8],
    input: (u32, u64),
    output: (u32, u64),
) -> PyResult<Bound<'py, PyBytes>>
where
    P: simak::ops::OpPlan,
    P::Op: ev74::NativeEntry,
{
    let device = ev74::check_inference(plan).map_err(|e| lib_error(py, e, OFM_NAMES))?;
    let encoded = ev74::encode_relocatable(&device);
    if packet != encoded.as_bytes().as_ref() {
        return Err(lib_error(py, ev74::BindError::PacketMismatch, OFM_NAMES));
    }
    let bound = ev74::bind(
        &device,
        &encoded,
        ev74::DeviceRegion::new(input.0, input.1),
        ev74::DeviceRegion::new(output.0, output.1),
    )
    .map_err(|e| lib_error(py, e, OFM_NAMES))?;
    Ok(PyBytes::new(py, bound.as_bytes().as_ref()))
}

/// Binds a relocatable Quant v1 packet of `plan` to device regions (SPEC §6).
#[pyfunction]
pub(crate) fn ev74_quant_bind<'py>(
    py: Python<'py>,
    plan: &Bound<'py, QuantPlan>,
    packet: &[u8],
    input: (u32, u64),
    output: (u32, u64),
) -> PyResult<Bound<'py, PyBytes>> {
    guarded(py, || {
        bind_bytes(py, plan.get().prepared.plan(), packet, input, output)
    })
}

/// Binds a relocatable CastTess v1 packet of `plan` to device regions (SPEC §6).
#[pyfunction]
pub(crate) fn ev74_casttess_bind<'py>(
    py: Python<'py>,
    plan: &Bound<'py, CastTessPlan>,
    packet: &[u8],
    input: (u32, u64),
    output: (u32, u64),
) -> PyResult<Bound<'py, PyBytes>> {
    guarded(py, || {
        bind_bytes(py, plan.get().prepared.plan(), packet, input, output)
    })
}

/// Binds a relocatable Detess-family packet of the head `plan` to device regions (SPEC §6):
/// the tiled input aligned to 16 bytes at tile alignment 16, else to its element size.
#[pyfunction]
pub(crate) fn ev74_detess_bind<'py>(
    py: Python<'py>,
    plan: &Bound<'py, DetessPlan>,
    packet: &[u8],
    input: (u32, u64),
    output: (u32, u64),
) -> PyResult<Bound<'py, PyBytes>> {
    guarded(py, || match plan.get().prepared() {
        Prepared::Detess(p) => bind_bytes(py, p.plan(), packet, input, output),
        Prepared::Cast(p) => bind_bytes(py, p.plan(), packet, input, output),
        Prepared::Dequant(p) => bind_bytes(py, p.plan(), packet, input, output),
    })
}

/// Binds a relocatable Preproc v1 packet of `plan` to device regions (SPEC §6): the frame
/// at any byte, a strided output at its element size, a tiled one at 16 bytes.
#[pyfunction]
pub(crate) fn ev74_preproc_bind<'py>(
    py: Python<'py>,
    plan: &Bound<'py, PreprocPlan>,
    packet: &[u8],
    input: (u32, u64),
    output: (u32, u64),
) -> PyResult<Bound<'py, PyBytes>> {
    guarded(py, || {
        bind_bytes(py, plan.get().core_plan(), packet, input, output)
    })
}

pub(crate) fn decode_error(py: Python<'_>, title: &str, e: DecodeError) -> PyErr {
    let code = e.code();
    simak_error(
        py,
        code,
        format!("invalid {title} packet: {e} (rule {:?})", e.rule()),
    )
}

/// The fields of `entry`'s descriptor `bytes` as a dict (wire order).
pub(crate) fn fields_dict<'py>(
    py: Python<'py>,
    entry: &Entry,
    bytes: &[u8],
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let Some(fields) = (entry.fields)(bytes) else {
        let code = 1;
        return Err(simak_error(
            py,
            code,
            format!(
                "a {} descriptor is {} bytes, not {}",
                entry.title,
                entry.size,
                bytes.len()
            ),
        ));
    };
    for f in &fields {
        match f.value {
            FieldValue::Magic(m) => dict.set_item(f.name, PyBytes::new(py, &m))?,
            other => dict.set_item(f.name, other.as_i128())?,
        }
    }
    Ok(dict)
}

/// Decodes an EV74 descriptor of any entry of `ev74::ENTRIES`, told by its magic, else by
/// its length, else Quant v1 (`ev74::entry_or_first`); with `validate`, the device
/// decoder's verdict (`ev74::verdict`) must not be a rejection.
#[pyfunction]
#[pyo3(signature = (packet, validate=true))]
pub(crate) fn ev74_decode<'py>(
    py: Python<'py>,
    packet: &Bound<'py, PyBytes>,
    validate: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guarded(py, || {
        let bytes = packet.as_bytes();
        let entry = ev74::entry_or_first(bytes);
        if validate && let Some(e) = (entry.verdict)(bytes).error() {
            return Err(decode_error(py, entry.title, e));
        }
        fields_dict(py, entry, bytes)
    })
}
