//! `simak._native`: the Python extension module of the `simak` package, a thin layer over
//! the Rust library (`simak` crate). Every rule of the contract (`docs/contract.md`) keeps
//! its single implementation in Rust; this module only turns NumPy arrays into byte slices
//! with their extents and byte strides, converts errors into `simak.SimakError` with the
//! stable code of `docs/errors.md`, and releases the GIL while kernels run.
//!
//! Safety model: an array's data pointer and its (non-negative) byte strides describe the
//! elements NumPy guarantees to lie in its buffer; admission gives the accessed span, and a
//! slice of exactly that span starting at the data pointer is what the library reads or
//! writes. Input and output ranges are checked disjoint here, before any slice is formed,
//! so a shared and a mutable slice never alias. As with NumPy itself, another Python thread
//! writing the same arrays during a call is a data race the caller must avoid.
//!
//! The modules: `errors` (`SimakError` and error conversion), `arrays` (NumPy arrays,
//! geometry, slices and new buffers), `args` (Python arguments into library values), `run`
//! (GIL release and threads), one per operation (`quant`, `casttess`, `quanttess`,
//! `dequant`, `detess`: the three Detess ops, `DetessPlan` and `untile`; `preproc`:
//! `preprocess` and `PreprocPlan`), `calibrate`
//! (absmax calibration), `layout` (`Layout`) and `ev74` (descriptors); this file only
//! registers them.

mod args;
mod arrays;
mod calibrate;
mod casttess;
mod dequant;
mod detess;
mod errors;
mod ev74;
mod layout;
mod model;
mod preproc;
mod quant;
mod quanttess;
mod run;

use pyo3::prelude::*;
use simak::a65;

use crate::errors::SimakError;

/// The `simak._native` module.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    // ml_dtypes (about a second to import) is imported now, with `simak`, rather than by
    // the first bfloat16 call while it holds the GIL. Without ml_dtypes this caches its
    // absence, as the first call would have: bfloat16 inputs and results are then refused.
    let _ = arrays::bfloat16(py);
    m.add("SimakError", py.get_type::<SimakError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("SIMD_ROUTES", !a65::SCALAR_ONLY)?;
    m.add_function(wrap_pyfunction!(quant::quantize, m)?)?;
    m.add_function(wrap_pyfunction!(casttess::casttess, m)?)?;
    m.add_function(wrap_pyfunction!(quanttess::quanttess, m)?)?;
    m.add_function(wrap_pyfunction!(detess::untile, m)?)?;
    m.add_function(wrap_pyfunction!(detess::detess, m)?)?;
    m.add_function(wrap_pyfunction!(detess::detess_cast, m)?)?;
    m.add_function(wrap_pyfunction!(detess::detess_dequant, m)?)?;
    m.add_function(wrap_pyfunction!(dequant::dequantize, m)?)?;
    m.add_function(wrap_pyfunction!(preproc::preprocess, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate::calibrate_absmax, m)?)?;
    m.add_function(wrap_pyfunction!(ev74::ev74_quant_encode_relocatable, m)?)?;
    m.add_function(wrap_pyfunction!(ev74::ev74_casttess_encode_relocatable, m)?)?;
    m.add_function(wrap_pyfunction!(ev74::ev74_detess_encode_relocatable, m)?)?;
    m.add_function(wrap_pyfunction!(ev74::ev74_quant_bind, m)?)?;
    m.add_function(wrap_pyfunction!(ev74::ev74_casttess_bind, m)?)?;
    m.add_function(wrap_pyfunction!(ev74::ev74_detess_bind, m)?)?;
    m.add_function(wrap_pyfunction!(ev74::ev74_preproc_encode_relocatable, m)?)?;
    m.add_function(wrap_pyfunction!(ev74::ev74_preproc_bind, m)?)?;
    m.add_function(wrap_pyfunction!(ev74::ev74_decode, m)?)?;
    m.add_function(wrap_pyfunction!(quant::_quantize_with_fp_control, m)?)?;
    m.add_class::<quant::QuantPlan>()?;
    m.add_class::<casttess::CastTessPlan>()?;
    m.add_class::<layout::Layout>()?;
    m.add_class::<detess::DetessPlan>()?;
    m.add_class::<preproc::PreprocPlan>()?;
    m.add_class::<model::Model>()?;
    m.add_class::<model::ModelStage>()?;
    Ok(())
}
