//! The EV74 descriptors: relocatable encoding of a plan and decoding of a packet into its
//! fields.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use simak::ev74::{self, CastTess, DecodeError, FieldValue, NativeEntry, Quant};

use crate::casttess::CastTessPlan;
use crate::errors::{QUANT_NAMES, TILED_NAMES, guarded, lib_error, simak_error};
use crate::quant::QuantPlan;

/// The relocatable EV74 Quant v1 descriptor of `plan` (224 bytes, address slots 0).
#[pyfunction]
pub(crate) fn ev74_quant_encode_relocatable<'py>(
    py: Python<'py>,
    plan: &Bound<'py, QuantPlan>,
) -> PyResult<Bound<'py, PyBytes>> {
    guarded(py, || {
        let device = ev74::check_inference::<Quant>(plan.get().prepared.plan())
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
        let device = ev74::check_inference::<CastTess>(plan.get().prepared.plan())
            .map_err(|e| lib_error(py, e, TILED_NAMES))?;
        let packet = ev74::encode_relocatable(&device);
        Ok(PyBytes::new(py, packet.as_bytes().as_ref()))
    })
}

/// The entry a packet most likely is: by magic, else by length, else Quant v1.
pub(crate) fn is_casttess(bytes: &[u8]) -> bool {
    match bytes.get(..4) {
        Some(m) if m == CastTess::MAGIC => true,
        Some(m) if m == Quant::MAGIC => false,
        _ => bytes.len() == CastTess::DESCRIPTOR_SIZE,
    }
}

pub(crate) fn decode_error(py: Python<'_>, title: &str, e: DecodeError) -> PyErr {
    let code = e.code();
    simak_error(
        py,
        code,
        format!(
            "invalid {title} packet: {e} (rule {:?}, simak error code {code})",
            e.rule()
        ),
    )
}

/// The fields of entry `E`'s descriptor `bytes` as a dict (wire order).
pub(crate) fn fields_dict<'py, E: NativeEntry>(
    py: Python<'py>,
    bytes: &[u8],
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    let Some(fields) = E::fields(bytes) else {
        let code = 1;
        return Err(simak_error(
            py,
            code,
            format!(
                "a {} descriptor is {} bytes, not {} (simak error code {code})",
                E::TITLE,
                E::DESCRIPTOR_SIZE,
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

pub(crate) fn decode_entry<'py, E: NativeEntry>(
    py: Python<'py>,
    bytes: &[u8],
    validate: bool,
) -> PyResult<Bound<'py, PyDict>> {
    if validate {
        let repr = E::parse(bytes).map_err(|e| decode_error(py, E::TITLE, e))?;
        let prefix = E::prefix(&repr);
        if prefix.input_address != 0 || prefix.output_address != 0 {
            ev74::decode::<E>(bytes).map_err(|e| decode_error(py, E::TITLE, e))?;
        }
    }
    fields_dict::<E>(py, bytes)
}

/// Decodes an EV74 descriptor (Quant v1 or CastTess v1, told by its magic).
#[pyfunction]
#[pyo3(signature = (packet, validate=true))]
pub(crate) fn ev74_decode<'py>(
    py: Python<'py>,
    packet: &Bound<'py, PyBytes>,
    validate: bool,
) -> PyResult<Bound<'py, PyDict>> {
    guarded(py, || {
        let bytes = packet.as_bytes();
        if is_casttess(bytes) {
            decode_entry::<CastTess>(py, bytes, validate)
        } else {
            decode_entry::<Quant>(py, bytes, validate)
        }
    })
}
