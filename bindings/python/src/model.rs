//! `simak.Model`: a model's boundary from its manifest (`*_mpk.json`, SPEC §14), over
//! `simak::model::Model`: `Model.from_mpk(path)`, `Model.from_mpk_json(text)`, `inputs`,
//! `outputs`, `preprocess(frame, input=0, out=None, threads=1)` and
//! `postprocess(ofm, threads=1)`.

use std::sync::Arc;

use numpy::npyffi::NPY_TYPES;
use numpy::{PyArray1, PyArrayDescrMethods, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};
use simak::model::{ElementType, ModelError, StageInfo};

use crate::args::{check_threads, repr};
use crate::arrays::{data_address, new_tiled, num, numpy_fn};
use crate::detess::numpy_descr;
use crate::errors::{guarded, simak_error};
use crate::layout::tiled_input;
use crate::run::run_detached;

fn model_error(py: Python<'_>, e: &ModelError) -> PyErr {
    simak_error(py, e.code(), e.to_string())
}

/// The NumPy dtype of a stage's element type.
fn descr<'py>(py: Python<'py>, t: ElementType) -> PyResult<Bound<'py, PyAny>> {
    Ok(match t {
        ElementType::U8 => numpy::dtype::<u8>(py).into_any(),
        ElementType::D(d) => numpy_descr(py, d)?.into_any(),
    })
}

/// One stage of a model (`Model.inputs`, `Model.outputs`).
#[pyclass(module = "simak", frozen, name = "ModelStage")]
pub(crate) struct ModelStage {
    info: StageInfo,
}

#[pymethods]
impl ModelStage {
    /// The model input's or output's node name.
    #[getter]
    fn name(&self) -> &str {
        &self.info.name
    }

    /// Input: the shape of the frame or tensor the caller gives (leading batch extent
    /// included; a frame is `(N, H, W, C)`, or `(N, H * 3 // 2, W)` for NV12 and I420).
    /// Output: the tensor's shape.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.info.shape)
    }

    /// Input: the caller's dtype (`uint8` frames); output: the tensor's.
    #[getter]
    fn dtype<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        descr(py, self.info.dtype)
    }

    /// Input: the IFM's bytes; output: the head's bytes in the OFM buffer.
    #[getter]
    fn size(&self) -> u64 {
        self.info.size
    }

    /// Input: the IFM's byte offset among the MLA's inputs; output: the head's byte
    /// offset in the OFM buffer.
    #[getter]
    fn offset(&self) -> u64 {
        self.info.offset
    }

    /// The op: `preproc`, `quant`, `quanttess`, `casttess`, `detess`, `detesscast`,
    /// `detessdequant` or `dequant`.
    #[getter]
    fn op(&self) -> &'static str {
        self.info.op.name()
    }

    /// The op's parameters, as text (a `dict`, in a fixed order).
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (k, v) in &self.info.params {
            d.set_item(k, v)?;
        }
        Ok(d)
    }

    /// The plugins the stage fuses, in chain order.
    #[getter]
    fn plugins<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, &self.info.plugins)
    }

    /// Bytes the stage reads (the frame or tensor; the head).
    #[getter]
    fn input_bytes(&self) -> u64 {
        self.info.input_bytes
    }

    /// Bytes the stage writes (the IFM; the tensor).
    #[getter]
    fn output_bytes(&self) -> u64 {
        self.info.output_bytes
    }

    /// The backends whose entries the op has (`("a65",)` or `("a65", "ev74")`).
    #[getter]
    fn backends<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.info.op.backends())
    }

    /// The SPEC §14 rules and defaults the stage used, in words.
    #[getter]
    fn rules<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, &self.info.rules)
    }

    fn __repr__(&self) -> String {
        // The shape as the tuple `.shape` is, the dtype as `np.dtype`'s repr.
        let dims: Vec<String> = self.info.shape.iter().map(u64::to_string).collect();
        let shape = match dims.as_slice() {
            [one] => format!("({one},)"),
            _ => format!("({})", dims.join(", ")),
        };
        format!(
            "ModelStage(name={:?}, op={:?}, shape={shape}, dtype=dtype('{}'), size={}, offset={})",
            self.info.name,
            self.info.op.name(),
            self.info.dtype.numpy_name(),
            self.info.size,
            self.info.offset
        )
    }
}

/// A compiled model's boundary, read from its manifest (`*_mpk.json`, SPEC §14): one stage
/// per model input (a frame or tensor → the IFM bytes the MLA reads) and per model output
/// (the OFM buffer → one tensor), each a prepared simak op, run on the A65.
#[pyclass(module = "simak", frozen, name = "Model")]
pub(crate) struct Model {
    inner: Arc<simak::model::Model>,
}

impl Model {
    fn stage_list<'py>(py: Python<'py>, stages: &[StageInfo]) -> PyResult<Bound<'py, PyList>> {
        let items: Vec<ModelStage> = stages
            .iter()
            .map(|s| ModelStage { info: s.clone() })
            .collect();
        PyList::new(py, items)
    }

    /// The index of `input=`: an index (an `int`, not a `bool`), a name (a `str`), or
    /// absent (the first input).
    fn input_index(&self, py: Python<'_>, input: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
        let inputs = self.inner.inputs();
        let Some(input) = input.filter(|i| !i.is_none()) else {
            return Ok(0);
        };
        if let Ok(name) = input.cast::<pyo3::types::PyString>() {
            let name = name.to_string_lossy();
            return inputs.iter().position(|s| s.name == *name).ok_or_else(|| {
                let names: Vec<&str> = inputs.iter().map(|s| s.name.as_str()).collect();
                simak_error(
                    py,
                    0x70e,
                    format!("input={name:?}: the model's inputs are {names:?}"),
                )
            });
        }
        if input.is_instance_of::<pyo3::types::PyBool>()
            || !input.is_instance_of::<pyo3::types::PyInt>()
        {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "input= takes an input's index (an int) or name (a str), not {}",
                repr(input)
            )));
        }
        let past = || {
            simak_error(
                py,
                0x70e,
                format!(
                    "input={}: the model's inputs are indexed 0 to {}",
                    repr(input),
                    inputs.len().saturating_sub(1)
                ),
            )
        };
        let i: i64 = input.extract().map_err(|_| past())?;
        usize::try_from(i)
            .ok()
            .filter(|&i| i < inputs.len())
            .ok_or_else(past)
    }
}

#[pymethods]
impl Model {
    /// Reads the manifest at `path` (SPEC §14). Raises `SimakError` (codes 0x700–0x7ff,
    /// or an op's own code) naming the plugin and the key.
    #[staticmethod]
    fn from_mpk(py: Python<'_>, path: std::path::PathBuf) -> PyResult<Model> {
        guarded(py, || {
            let m = simak::model::Model::from_mpk(&path).map_err(|e| model_error(py, &e))?;
            Ok(Model { inner: Arc::new(m) })
        })
    }

    /// Reads a manifest's JSON text (SPEC §14).
    #[staticmethod]
    fn from_mpk_json(py: Python<'_>, text: &str) -> PyResult<Model> {
        guarded(py, || {
            let m = simak::model::Model::from_mpk_json(text).map_err(|e| model_error(py, &e))?;
            Ok(Model { inner: Arc::new(m) })
        })
    }

    /// The manifest's `name`.
    #[getter]
    fn name(&self) -> &str {
        self.inner.name()
    }

    /// Frames per call.
    #[getter]
    fn batch(&self) -> u64 {
        self.inner.batch()
    }

    /// Bytes of all IFMs, back to back in the MLA's input order.
    #[getter]
    fn ifm_size(&self) -> u64 {
        self.inner.ifm_size()
    }

    /// Bytes of the OFM buffer.
    #[getter]
    fn ofm_size(&self) -> u64 {
        self.inner.ofm_size()
    }

    /// The input stages, in the manifest's `input_nodes` order.
    #[getter]
    fn inputs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        Model::stage_list(py, self.inner.inputs())
    }

    /// The output stages, in the manifest's `output_nodes` order.
    #[getter]
    fn outputs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        Model::stage_list(py, self.inner.outputs())
    }

    /// Runs input stage `input` (an index, or a name; the first by default) on `frame`: a
    /// NumPy array of the stage's dtype, in native byte order, and shape (`inputs[i].shape`;
    /// with batch 1 the leading 1 may be left out), any strides (a non-contiguous view is
    /// copied once). Returns the IFM bytes, a 1-D `uint8` array of `inputs[i].size` bytes
    /// aligned to 16, or writes `out=`: a writeable C-contiguous 1-D `uint8` array of
    /// exactly that size, aligned to 16 when the IFM is tiled (a QuantTess or CastTess
    /// stage, or a Preproc one with a tiled `to`; 0x404 otherwise), not sharing memory with
    /// `frame` (0x407). Raises `TypeError` for a `frame` that is not an array or a bad
    /// `input=`, `SimakError` 5 for another dtype, 0x70d for another shape or size, 0x70e
    /// for an input past the model's.
    #[pyo3(
        signature = (frame, input = None, out = None, threads = 1),
        text_signature = "(self, /, frame, input=0, out=None, threads=1)"
    )]
    fn preprocess<'py>(
        &self,
        py: Python<'py>,
        frame: &Bound<'py, PyAny>,
        input: Option<&Bound<'py, PyAny>>,
        out: Option<&Bound<'py, PyAny>>,
        threads: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        guarded(py, || {
            let threads = check_threads(threads)?;
            let index = self.input_index(py, input)?;
            let stage = &self.inner.inputs()[index];
            if frame.cast::<PyUntypedArray>().is_err() {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "frame must be a NumPy array (a uint8 frame or a float tensor), not {}",
                    repr(frame)
                )));
            }
            let a = numpy_fn(py, "ascontiguousarray")?
                .call1((frame,))?
                .cast_into::<PyUntypedArray>()?;
            let want_dtype = descr(py, stage.dtype)?;
            if !a.dtype().as_any().eq(&want_dtype)? {
                return Err(simak_error(
                    py,
                    5,
                    format!(
                        "frame has dtype {}; input {:?} takes {} (native byte order)",
                        a.dtype().as_any().str()?,
                        stage.name,
                        stage.dtype.numpy_name()
                    ),
                ));
            }
            let shape: Vec<u64> = a.shape().iter().map(|&e| e as u64).collect();
            let fits = shape == stage.shape
                || (stage.shape.first() == Some(&1) && shape == stage.shape[1..]);
            if !fits {
                return Err(simak_error(
                    py,
                    0x70d,
                    format!(
                        "frame has shape {shape:?}; input {:?} takes {:?}{}",
                        stage.name,
                        stage.shape,
                        if stage.shape.first() == Some(&1) {
                            " (or without its leading 1)"
                        } else {
                            ""
                        }
                    ),
                ));
            }
            let bytes = a
                .call_method1("reshape", (-1,))?
                .call_method1("view", (numpy::dtype::<u8>(py),))?
                .cast_into::<PyArray1<u8>>()?;
            let ro = bytes.readonly();
            let data = ro.as_slice()?;
            let ifm = match out {
                Some(o) => {
                    let o = o.cast::<PyArray1<u8>>().map_err(|_| {
                        simak_error(
                            py,
                            5,
                            format!("out= must be a 1-D uint8 array, not {}", repr(o)),
                        )
                    })?;
                    o.clone().into_any()
                }
                None => new_tiled(py, stage.size)?.into_any(),
            };
            let arr = ifm.cast::<PyArray1<u8>>()?;
            let mut rw = arr.try_readwrite().map_err(|_| {
                let writeable = arr
                    .getattr("flags")
                    .and_then(|f| f.getattr("writeable"))
                    .and_then(|w| w.is_truthy())
                    .unwrap_or(false);
                if writeable {
                    // numpy's borrow checker: `out=` shares memory with the frame.
                    simak_error(py, 0x407, "out= overlaps frame")
                } else {
                    simak_error(py, simak::error::BINDING_READONLY, "out= is not writeable")
                }
            })?;
            let dst = rw.as_slice_mut().map_err(|_| {
                simak_error(
                    py,
                    simak::error::BINDING_NOT_CONTIGUOUS,
                    "out= must be C-contiguous",
                )
            })?;
            let model = &self.inner;
            run_detached(py, stage.input_bytes, || {
                model.prepare_input(index, data, dst, threads)
            })
            .map_err(|e| model_error(py, &e))?;
            drop(rw);
            Ok(ifm)
        })
    }

    /// Runs every output stage on `ofm` (a 1-D `uint8` array or bytes-like object of
    /// exactly `ofm_size` bytes). Returns a `dict` of output name → NumPy array (shape and
    /// dtype as `outputs[i]`), in the manifest's order.
    #[pyo3(signature = (ofm, threads = 1))]
    fn postprocess<'py>(
        &self,
        py: Python<'py>,
        ofm: &Bound<'py, PyAny>,
        threads: i64,
    ) -> PyResult<Bound<'py, PyDict>> {
        guarded(py, || {
            let threads = check_threads(threads)?;
            let a = tiled_input(py, ofm, "ofm")?;
            let n = a.dtype().num();
            let bytes_like = n == num(NPY_TYPES::NPY_UBYTE) || n == num(NPY_TYPES::NPY_BYTE);
            if !bytes_like || a.ndim() != 1 {
                return Err(simak_error(
                    py,
                    5,
                    format!(
                        "ofm must be a 1-D uint8 (or int8) array or bytes-like object, not dtype {} \
                         of {} dimensions",
                        a.dtype().as_any().str()?,
                        a.ndim()
                    ),
                ));
            }
            if !a.is_c_contiguous() {
                return Err(simak_error(
                    py,
                    simak::error::BINDING_NOT_CONTIGUOUS,
                    "ofm must be C-contiguous; pass np.ascontiguousarray(ofm)",
                ));
            }
            // A misaligned buffer is copied once into an aligned one.
            let a = if data_address(&a).is_multiple_of(16) {
                a
            } else {
                let c = new_tiled(py, a.len() as u64)?;
                c.call_method1("__setitem__", (pyo3::types::PySlice::full(py), &a))?;
                c
            };
            let bytes = a
                .call_method1("view", (numpy::dtype::<u8>(py),))?
                .cast_into::<PyArray1<u8>>()?;
            let ro = bytes.readonly();
            let src = ro.as_slice()?;
            let outputs = self.inner.outputs();
            let arrays: Vec<Bound<'py, PyUntypedArray>> = outputs
                .iter()
                .map(|s| new_tiled(py, s.output_bytes))
                .collect::<PyResult<_>>()?;
            let typed: Vec<Bound<'py, PyArray1<u8>>> = arrays
                .iter()
                .map(|a| a.clone().cast_into::<PyArray1<u8>>())
                .collect::<Result<_, _>>()?;
            let mut guards: Vec<_> = typed.iter().map(|a| a.readwrite()).collect();
            let mut slices: Vec<&mut [u8]> = guards
                .iter_mut()
                .map(|g| g.as_slice_mut())
                .collect::<Result<_, _>>()?;
            let model = &self.inner;
            let total: u64 = outputs.iter().map(|s| s.output_bytes).sum();
            run_detached(py, total, || model.read_outputs(src, &mut slices, threads))
                .map_err(|e| model_error(py, &e))?;
            drop(slices);
            drop(guards);
            let d = PyDict::new(py);
            for (s, a) in outputs.iter().zip(arrays) {
                let shaped = a
                    .call_method1("view", (descr(py, s.dtype)?,))?
                    .call_method1("reshape", (PyTuple::new(py, &s.shape)?,))?;
                d.set_item(&s.name, shaped)?;
            }
            Ok(d)
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "Model(name={:?}, inputs={:?}, outputs={:?})",
            self.inner.name(),
            self.inner
                .inputs()
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>(),
            self.inner
                .outputs()
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
        )
    }
}
