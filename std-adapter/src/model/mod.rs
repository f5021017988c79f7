//! A model's whole boundary from its archive's manifest (SPEC §14, `docs/contract.md` §14):
//! [`Model::from_mpk_json`] reads a SiMa `*_mpk.json` into ordered input stages (a frame or a
//! float tensor → the IFM bytes the MLA reads) and output stages (the OFM buffer → one dense
//! tensor per head), each a prepared op of the existing ops; [`Model::prepare_input`] and
//! [`Model::read_outputs`] run them on the A65.
//!
//! Where SPEC §14 is silent, simak's choices (documented in `docs/contract.md` §14):
//! a plugin names its kernel under `kernel` and its parameters under `params`; the model's
//! own `input_nodes` and `output_nodes` name its inputs and its output tensors (in that
//! order); a plugin with k input nodes handles k tensors, tensor i going to output node i.
//!
//! ```
//! let text = r#"{
//!   "name": "tiny",
//!   "input_nodes": [{"name": "x"}],
//!   "output_nodes": [{"name": "y"}],
//!   "plugins": [
//!     {"name": "q", "sequence": 1, "kernel": "quantization_transform",
//!      "input_nodes": [{"name": "x"}], "output_nodes": [{"name": "ifm"}],
//!      "params": {"input_shapes": [[1, 4]], "q_scale": 2.0, "q_zp": 0, "rounding": "RT_EVEN"}},
//!     {"name": "mla", "sequence": 2, "kernel": "MLA",
//!      "input_nodes": [{"name": "ifm"}], "output_nodes": [{"name": "ofm", "size": 4}]},
//!     {"name": "dq", "sequence": 3, "kernel": "dequantization_transform",
//!      "input_nodes": [{"name": "ofm"}], "output_nodes": [{"name": "y"}],
//!      "params": {"in_dtype": "INT8", "input_shapes": [[1, 4]], "dq_scale": 2.0, "dq_zp": 0}}
//!   ]
//! }"#;
//! let model = simak::model::Model::from_mpk_json(text)?;
//! let x: Vec<u8> = [0.5f32, -1.0, 3.0, 0.25].iter().flat_map(|v| v.to_le_bytes()).collect();
//! let mut ifm = vec![0u8; model.inputs()[0].size as usize];
//! model.prepare_input(0, &x, &mut ifm, 1)?;
//! assert_eq!(ifm, [1, (-2i8) as u8, 6, 0]); // round(x · 2), nearest even
//! let outs = model.postprocess(&ifm, 1)?;
//! assert_eq!(outs[0].name, "y");
//! assert_eq!(outs[0].f32_values().unwrap(), [0.5, -1.0, 3.0, 0.0]);
//! # Ok::<(), simak::model::ModelError>(())
//! ```

mod error;
mod json;
mod params;
mod stage;

use std::collections::HashMap;
use std::path::Path;

pub use error::{ModelError, ModelErrorKind};
pub use params::ElementType;
pub use stage::{AlignedBytes, Backend, OutputTensor, StageInfo, StageOp};

use json::Json;
use params::{BATCH_COMPILED, BATCH_FRAMES, PluginParams};
use stage::{InputKernel, OutputKernel};

/// Largest manifest read (bytes): a manifest is a few KiB.
pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// A kernel of SPEC §14, by its canonical role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kernel {
    Preproc,
    Quant,
    Tess,
    Cast,
    QuantTess,
    CastTess,
    Unpack,
    Detess,
    Dequant,
    DetessDequant,
    Mla,
    PassThrough,
}

impl Kernel {
    fn parse(s: &str) -> Option<Kernel> {
        Some(match s {
            "preproc" => Kernel::Preproc,
            "quantization_transform" | "quant" => Kernel::Quant,
            "tessellation_transform" => Kernel::Tess,
            "cast_transform" | "cast" => Kernel::Cast,
            "quanttess" => Kernel::QuantTess,
            "casttess" => Kernel::CastTess,
            "unpack_transform" => Kernel::Unpack,
            "detessellation_transform" => Kernel::Detess,
            "dequantization_transform" => Kernel::Dequant,
            "detessdequant" => Kernel::DetessDequant,
            "MLA" | "mla" => Kernel::Mla,
            "pass_through" => Kernel::PassThrough,
            _ => return None,
        })
    }
}

/// A plugin of the manifest.
#[derive(Debug)]
pub(crate) struct Plugin<'a> {
    pub(crate) name: &'a str,
    pub(crate) kernel_name: &'a str,
    pub(crate) kernel: Kernel,
    pub(crate) params: &'a Json,
    pub(crate) inputs: Vec<Node<'a>>,
    pub(crate) outputs: Vec<Node<'a>>,
}

impl<'a> Plugin<'a> {
    pub(crate) fn params(&self) -> PluginParams<'a> {
        PluginParams {
            plugin: self.name,
            params: self.params,
            tensors: self.inputs.len().max(1),
        }
    }
}

/// A node of the manifest (`input_nodes[]` / `output_nodes[]` entry).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Node<'a> {
    pub(crate) name: &'a str,
    pub(crate) size: Option<u64>,
    pub(crate) input_range: Option<(f64, f64)>,
}

/// One step of a chain: a plugin and the tensor it handles there.
pub(crate) type Step = (usize, usize);

/// A model read from its manifest: its input and output stages, prepared for the A65.
/// `Send + Sync`; a call allocates only the convenience results.
#[derive(Debug)]
pub struct Model {
    name: String,
    batch: u64,
    inputs: Vec<StageInfo>,
    input_kernels: Vec<InputKernel>,
    outputs: Vec<StageInfo>,
    output_kernels: Vec<OutputKernel>,
    ifm_size: u64,
    ofm_size: u64,
}

static EMPTY: Json = Json::Obj(Vec::new());

fn str_field<'a>(obj: &'a Json, what: &str, key: &str) -> Result<&'a str, ModelError> {
    match obj.get(key) {
        Some(Json::Str(s)) => Ok(s),
        Some(other) => Err(ModelError {
            plugin: Some(what.to_owned()),
            key: Some(key.to_owned()),
            kind: ModelErrorKind::BadValue {
                expected: "a string".into(),
                found: other.to_string(),
            },
        }),
        None => Err(ModelError {
            plugin: Some(what.to_owned()),
            key: Some(key.to_owned()),
            kind: ModelErrorKind::MissingKey,
        }),
    }
}

fn nodes<'a>(owner: &str, obj: &'a Json, key: &str) -> Result<Vec<Node<'a>>, ModelError> {
    let bad = |found: &Json, expected: &str| ModelError {
        plugin: Some(owner.to_owned()),
        key: Some(key.to_owned()),
        kind: ModelErrorKind::BadValue {
            expected: expected.to_owned(),
            found: found.to_string(),
        },
    };
    let Some(v) = obj.get(key) else {
        return Ok(Vec::new());
    };
    let Json::Arr(items) = v else {
        return Err(bad(v, "a list of nodes"));
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let name = match item {
            Json::Str(s) => {
                out.push(Node {
                    name: s,
                    size: None,
                    input_range: None,
                });
                continue;
            }
            Json::Obj(_) => match item.get("name") {
                Some(Json::Str(s)) => s.as_str(),
                _ => return Err(bad(item, "a node with a string `name`")),
            },
            _ => return Err(bad(item, "a node (an object with `name`)")),
        };
        let size = match item.get("size") {
            None => None,
            Some(Json::Num(n)) if n.as_u64().is_some() => n.as_u64(),
            Some(other) => return Err(bad(other, "a size in bytes")),
        };
        let input_range = match item.get("input_range") {
            None => None,
            Some(Json::Arr(r)) if r.len() == 2 => match (&r[0], &r[1]) {
                (Json::Num(a), Json::Num(b)) => Some((
                    a.as_f64().unwrap_or(f64::NAN),
                    b.as_f64().unwrap_or(f64::NAN),
                )),
                _ => return Err(bad(item, "`input_range` [lo, hi]")),
            },
            Some(other) => return Err(bad(other, "`input_range` [lo, hi]")),
        };
        out.push(Node {
            name,
            size,
            input_range,
        });
    }
    Ok(out)
}

/// The error of a key repeated in the object at `path`, naming the plugin it is in.
fn repeated(root: &Json, path: &[json::PathStep], key: String) -> ModelError {
    use json::PathStep;
    let plugin = match path {
        [PathStep::Key(p), PathStep::Index(i), ..] if p == "plugins" => match root.get("plugins") {
            Some(Json::Arr(items)) => Some(match items.get(*i).and_then(|p| p.get("name")) {
                Some(Json::Str(s)) => s.clone(),
                _ => format!("#{i}"),
            }),
            _ => None,
        },
        _ => None,
    };
    let inner = if plugin.is_some() { &path[2..] } else { path };
    let at = if inner.is_empty() {
        if plugin.is_some() {
            "the plugin".to_owned()
        } else {
            "the manifest's top level".to_owned()
        }
    } else {
        let steps: Vec<String> = inner
            .iter()
            .map(|s| match s {
                PathStep::Key(k) => k.clone(),
                PathStep::Index(i) => format!("[{i}]"),
            })
            .collect();
        format!("`{}`", steps.join("."))
    };
    ModelError {
        plugin,
        key: Some(key),
        kind: ModelErrorKind::RepeatedKey(at),
    }
}

fn graph_error(node: &str, message: &str) -> ModelError {
    ModelError {
        plugin: None,
        key: Some(node.to_owned()),
        kind: ModelErrorKind::Graph(message.to_owned()),
    }
}

impl Model {
    /// Reads the manifest at `path` ([`from_mpk_json`](Model::from_mpk_json)). At most
    /// [`MAX_MANIFEST_BYTES`] are read, whatever the file is (a device or a pipe has no
    /// length to check first).
    ///
    /// # Errors
    ///
    /// [`ModelErrorKind::Io`] when the file cannot be read or holds more than
    /// [`MAX_MANIFEST_BYTES`]; [`ModelErrorKind::Json`] when its bytes are not UTF-8; then
    /// as [`from_mpk_json`](Model::from_mpk_json).
    pub fn from_mpk(path: impl AsRef<Path>) -> Result<Model, ModelError> {
        use std::io::Read;
        let path = path.as_ref();
        let io = |e: String| ModelError::new(ModelErrorKind::Io(format!("{path:?}: {e}")));
        let file = std::fs::File::open(path).map_err(|e| io(e.to_string()))?;
        let mut bytes = Vec::new();
        file.take(MAX_MANIFEST_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| io(e.to_string()))?;
        if bytes.len() as u64 > MAX_MANIFEST_BYTES {
            return Err(io(format!(
                "more than the {MAX_MANIFEST_BYTES} bytes a manifest may have"
            )));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            ModelError::new(ModelErrorKind::Json(format!(
                "the manifest is not UTF-8 text: {}",
                e.utf8_error()
            )))
        })?;
        Model::from_mpk_json(&text)
    }

    /// Reads a manifest's JSON text into a model (SPEC §14): its plugins in `sequence`
    /// order, wired by node names into chains from the model's inputs to the `MLA` and from
    /// the `MLA`'s output to the model's outputs; each chain becomes one op, admitted and
    /// prepared for the A65.
    ///
    /// # Errors
    ///
    /// A [`ModelError`] naming the plugin and the key: JSON errors (0x701), repeated keys
    /// (0x70f), missing keys (0x702), bad values (0x703), conflicting aliases (0x704),
    /// unknown kernels and kernel chains that are no op (0x705), unknown `preproc` keys
    /// (0x706), per-tensor lists of the wrong length (0x707), unequal batch keys (0x708),
    /// declared sizes that differ from the computed ones (0x709), a graph that is not a set
    /// of chains (0x70a), shapes (0x70b), `input_range` (0x70c), and the admission errors of
    /// the ops (their own codes).
    pub fn from_mpk_json(text: &str) -> Result<Model, ModelError> {
        // A byte-order mark, as some editors save UTF-8, is not part of the JSON text.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let root = Json::parse(text).map_err(|e| {
            ModelError::new(ModelErrorKind::Json(format!(
                "the manifest is not valid JSON: {e}"
            )))
        })?;
        if !matches!(root, Json::Obj(_)) {
            return Err(ModelError::new(ModelErrorKind::Json(format!(
                "the manifest is {}, not an object",
                root.kind()
            ))));
        }
        if let Some((path, key)) = root.repeated_key() {
            return Err(repeated(&root, &path, key));
        }
        let name = match root.get("name") {
            Some(Json::Str(s)) => s.clone(),
            _ => String::new(),
        };
        let Some(Json::Arr(plugin_values)) = root.get("plugins") else {
            return Err(ModelError {
                plugin: None,
                key: Some("plugins".into()),
                kind: match root.get("plugins") {
                    None => ModelErrorKind::MissingKey,
                    Some(other) => ModelErrorKind::BadValue {
                        expected: "a list of plugins".into(),
                        found: other.to_string(),
                    },
                },
            });
        };
        // Plugins in `sequence` order (listed order for equal or missing sequences).
        let mut plugins = Vec::with_capacity(plugin_values.len());
        for (i, p) in plugin_values.iter().enumerate() {
            if !matches!(p, Json::Obj(_)) {
                return Err(ModelError {
                    plugin: Some(format!("#{i}")),
                    key: None,
                    kind: ModelErrorKind::BadValue {
                        expected: "a plugin object".into(),
                        found: p.kind().into(),
                    },
                });
            }
            let pname = str_field(p, &format!("#{i}"), "name")?;
            let kernel_name = str_field(p, pname, "kernel")?;
            let Some(kernel) = Kernel::parse(kernel_name) else {
                return Err(ModelError::at(
                    pname,
                    "kernel",
                    ModelErrorKind::UnsupportedKernel {
                        kernel: format!("{kernel_name:?}"),
                    },
                ));
            };
            let sequence = match p.get("sequence") {
                None => i as u64,
                Some(Json::Num(n)) if n.as_u64().is_some() => n.as_u64().unwrap_or(0),
                Some(other) => {
                    return Err(ModelError::at(
                        pname,
                        "sequence",
                        ModelErrorKind::BadValue {
                            expected: "a non-negative integer".into(),
                            found: other.to_string(),
                        },
                    ));
                }
            };
            let params = match p.get("params") {
                None => &EMPTY,
                Some(v @ Json::Obj(_)) => v,
                Some(other) => {
                    return Err(ModelError::at(
                        pname,
                        "params",
                        ModelErrorKind::BadValue {
                            expected: "an object".into(),
                            found: other.to_string(),
                        },
                    ));
                }
            };
            plugins.push((
                sequence,
                Plugin {
                    name: pname,
                    kernel_name,
                    kernel,
                    params,
                    inputs: nodes(pname, p, "input_nodes")?,
                    outputs: nodes(pname, p, "output_nodes")?,
                },
            ));
        }
        plugins.sort_by_key(|(s, _)| *s);
        let plugins: Vec<Plugin<'_>> = plugins.into_iter().map(|(_, p)| p).collect();
        for (i, p) in plugins.iter().enumerate() {
            if plugins[..i].iter().any(|q| q.name == p.name) {
                return Err(ModelError::at(
                    p.name,
                    "name",
                    ModelErrorKind::Graph("two plugins have this name".into()),
                ));
            }
        }
        let model_inputs = nodes("model", &root, "input_nodes")?;
        let model_outputs = nodes("model", &root, "output_nodes")?;
        if model_inputs.is_empty() {
            return Err(ModelError {
                plugin: None,
                key: Some("input_nodes".into()),
                kind: ModelErrorKind::MissingKey,
            });
        }
        if model_outputs.is_empty() {
            return Err(ModelError {
                plugin: None,
                key: Some("output_nodes".into()),
                kind: ModelErrorKind::MissingKey,
            });
        }
        let batch = batch(&root, &plugins)?;
        let wiring = Wiring::new(&plugins, &model_inputs, &model_outputs)?;
        let ctx = stage::Context {
            plugins: &plugins,
            batch,
        };

        // Input stages, in the model's input order; IFM offsets in the MLA's input order.
        let mla = &plugins[wiring.mla];
        let mut ifm_offsets = Vec::with_capacity(mla.inputs.len());
        let mut built_inputs = Vec::with_capacity(model_inputs.len());
        for model_input in &model_inputs {
            let (chain, ifm_index) = wiring.input_chain(&plugins, model_input.name)?;
            let (mut info, kernel) = stage::input_stage(&ctx, model_input, &chain)?;
            let ifm = &mla.inputs[ifm_index];
            if let Some(declared) = ifm.size {
                check_size(
                    mla.name,
                    ifm.name,
                    declared,
                    info.size,
                    "the IFM's bytes per call",
                )?;
            }
            info.name = model_input.name.to_owned();
            built_inputs.push((ifm_index, info, kernel));
        }
        let mut ifm_size = 0u64;
        for k in 0..mla.inputs.len() {
            ifm_offsets.push(ifm_size);
            if let Some((_, info, _)) = built_inputs.iter().find(|(i, _, _)| *i == k) {
                ifm_size = ifm_size.saturating_add(info.size);
            }
        }
        let mut inputs = Vec::new();
        let mut input_kernels = Vec::new();
        for (ifm_index, mut info, kernel) in built_inputs {
            info.offset = ifm_offsets[ifm_index];
            inputs.push(info);
            input_kernels.push(kernel);
        }

        // Output stages, in the model's output order, at their heads' offsets.
        let (heads, unpack) = wiring.heads(&plugins)?;
        let mut built = Vec::with_capacity(heads.len());
        for head in &heads {
            let chain = wiring.output_chain(&plugins, head)?;
            let last = chain.last().copied();
            let out_node = match last {
                Some((p, t)) => plugins[p].outputs[t].name,
                None => head,
            };
            built.push((out_node, stage::output_stage(&ctx, &chain)?));
        }
        let mut offset = 0u64;
        for (_, (info, _)) in built.iter_mut() {
            info.offset = offset;
            offset = offset.saturating_add(info.size);
        }
        let ofm_size = offset;
        if let Some(u) = unpack {
            stage::check_unpack(
                &ctx,
                u,
                &built.iter().map(|(_, (i, _))| i.size).collect::<Vec<_>>(),
            )?;
        }
        if let Some(ofm) = mla.outputs.first()
            && let Some(declared) = ofm.size
        {
            check_size(
                mla.name,
                ofm.name,
                declared,
                ofm_size,
                "the sum of the heads' spans",
            )?;
        }
        let mut outputs = Vec::with_capacity(model_outputs.len());
        let mut output_kernels = Vec::with_capacity(model_outputs.len());
        for node in &model_outputs {
            let Some(k) = built.iter().position(|(n, _)| *n == node.name) else {
                return Err(graph_error(
                    node.name,
                    "no output stage produces this model output",
                ));
            };
            let (_, (mut info, kernel)) = built.swap_remove(k);
            info.name = node.name.to_owned();
            outputs.push(info);
            output_kernels.push(kernel);
        }
        Ok(Model {
            name,
            batch,
            inputs,
            input_kernels,
            outputs,
            output_kernels,
            ifm_size,
            ofm_size,
        })
    }

    /// The model with its Quant and QuantTess input stages prepared on the exact integer
    /// path of SPEC §3 (`a65::quant::prepare_exact`): the same bytes, slower, in any FP
    /// environment. For a program that runs with flush-to-zero (built with `-ffast-math`),
    /// where those stages' SIMD routes refuse the call (0x408). The other stages are
    /// integer code either way.
    #[must_use]
    pub fn with_exact_paths(mut self) -> Model {
        for k in &mut self.input_kernels {
            k.make_exact();
        }
        self
    }

    /// The manifest's `name` (empty when it has none).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Frames per call (SPEC §14's batch keys; 1 when the manifest gives none).
    pub fn batch(&self) -> u64 {
        self.batch
    }

    /// The input stages, in the model's `input_nodes` order: `shape` and `dtype` of what the
    /// caller gives (a frame: `[N, H, W, C]` `uint8`), `size` and `offset` of its IFM bytes.
    pub fn inputs(&self) -> &[StageInfo] {
        &self.inputs
    }

    /// The output stages, in the model's `output_nodes` order: `shape` and `dtype` of the
    /// dense tensor, `size` and `offset` of its head in the OFM buffer.
    pub fn outputs(&self) -> &[StageInfo] {
        &self.outputs
    }

    /// Bytes of all IFMs, back to back in the MLA's input order.
    pub fn ifm_size(&self) -> u64 {
        self.ifm_size
    }

    /// Bytes of the OFM buffer (every head).
    pub fn ofm_size(&self) -> u64 {
        self.ofm_size
    }

    /// Runs input stage `index` on the A65: `input` (the frame or tensor bytes, exactly
    /// `inputs()[index].input_bytes`, row-major) → `ifm` (exactly `inputs()[index].size`
    /// bytes, aligned as the op needs: 16 bytes for a tiled IFM), on up to `threads`
    /// threads. Nothing is written when a check fails.
    ///
    /// # Errors
    ///
    /// [`ModelErrorKind::Index`], [`ModelErrorKind::BufferSize`], or the op's execute error
    /// ([`ModelErrorKind::Stage`]: a misaligned buffer).
    pub fn prepare_input(
        &self,
        index: usize,
        input: &[u8],
        ifm: &mut [u8],
        threads: usize,
    ) -> Result<(), ModelError> {
        self.prepare_input_on(index, input, ifm, Backend::A65 { threads })
    }

    /// [`prepare_input`](Model::prepare_input) on `backend`.
    ///
    /// # Errors
    ///
    /// As [`prepare_input`](Model::prepare_input); on the EV74, a stage whose op has no EV74
    /// entry is refused with the Runtime's missing-capability error (0x501, in
    /// [`ModelErrorKind::Stage`], naming the plugin), and the simulator's errors.
    pub fn prepare_input_on(
        &self,
        index: usize,
        input: &[u8],
        ifm: &mut [u8],
        backend: Backend,
    ) -> Result<(), ModelError> {
        let (info, kernel) = self.input(index)?;
        check_len(
            &format!("input {:?}", info.name),
            info.input_bytes,
            input.len(),
        )?;
        check_len(
            &format!("the IFM of input {:?}", info.name),
            info.size,
            ifm.len(),
        )?;
        kernel
            .run(input, ifm, backend)
            .map_err(|e| stage_error(&info.plugins, e))
    }

    /// [`prepare_input`](Model::prepare_input) into a new buffer aligned to 16 bytes.
    ///
    /// # Errors
    ///
    /// As [`prepare_input`](Model::prepare_input).
    pub fn preprocess(
        &self,
        index: usize,
        input: &[u8],
        threads: usize,
    ) -> Result<AlignedBytes, ModelError> {
        self.preprocess_on(index, input, Backend::A65 { threads })
    }

    /// [`preprocess`](Model::preprocess) on `backend`.
    ///
    /// # Errors
    ///
    /// As [`prepare_input_on`](Model::prepare_input_on).
    pub fn preprocess_on(
        &self,
        index: usize,
        input: &[u8],
        backend: Backend,
    ) -> Result<AlignedBytes, ModelError> {
        let (info, _) = self.input(index)?;
        let mut ifm = AlignedBytes::zeroed(info.size as usize, 16);
        self.prepare_input_on(index, input, ifm.as_mut_slice(), backend)?;
        Ok(ifm)
    }

    /// Checks that every stage can run on `backend` (on the EV74: that its op has an EV74
    /// entry, [`StageOp::backends`]).
    ///
    /// # Errors
    ///
    /// [`ModelErrorKind::Stage`] with the Runtime's missing-capability error (0x501),
    /// naming the plugin of the first stage whose op has no EV74 entry.
    pub fn check_backend(&self, backend: Backend) -> Result<(), ModelError> {
        self.check_stages(self.inputs.iter().chain(&self.outputs), backend)
    }

    fn check_stages<'a>(
        &self,
        mut stages: impl Iterator<Item = &'a StageInfo>,
        backend: Backend,
    ) -> Result<(), ModelError> {
        if let Backend::Ev74Sim { .. } = backend
            && let Some(info) = stages.find(|i| !i.op.backends().contains(&"ev74"))
        {
            return Err(stage_error(&info.plugins, stage::missing_entry(info.op)));
        }
        Ok(())
    }

    fn input(&self, index: usize) -> Result<(&StageInfo, &InputKernel), ModelError> {
        match (self.inputs.get(index), self.input_kernels.get(index)) {
            (Some(i), Some(k)) => Ok((i, k)),
            _ => Err(ModelError::new(ModelErrorKind::Index {
                side: "input",
                index,
                count: self.inputs.len(),
            })),
        }
    }

    /// Runs every output stage on the A65: `ofm` (exactly [`ofm_size`](Model::ofm_size)
    /// bytes, aligned to 16 when a head has tile alignment 16, else to the heads' element
    /// size) → `outputs[i]` (exactly `outputs()[i].output_bytes`, the dense row-major
    /// tensor, at any address), on up to `threads` threads. Every buffer is checked before
    /// anything is written.
    ///
    /// # Errors
    ///
    /// [`ModelErrorKind::BufferSize`], [`ModelErrorKind::BufferCount`],
    /// or the op's execute error ([`ModelErrorKind::Stage`]: a misaligned buffer).
    pub fn read_outputs(
        &self,
        ofm: &[u8],
        outputs: &mut [&mut [u8]],
        threads: usize,
    ) -> Result<(), ModelError> {
        self.read_outputs_on(ofm, outputs, Backend::A65 { threads })
    }

    /// [`read_outputs`](Model::read_outputs) on `backend`; on the EV74 every output stage
    /// is checked to have an EV74 entry before anything is written.
    ///
    /// # Errors
    ///
    /// As [`read_outputs`](Model::read_outputs) and [`check_backend`](Model::check_backend)
    /// for the output stages, and the simulator's errors.
    pub fn read_outputs_on(
        &self,
        ofm: &[u8],
        outputs: &mut [&mut [u8]],
        backend: Backend,
    ) -> Result<(), ModelError> {
        self.check_stages(self.outputs.iter(), backend)?;
        check_len("the OFM buffer", self.ofm_size, ofm.len())?;
        if outputs.len() != self.outputs.len() {
            return Err(ModelError::new(ModelErrorKind::BufferCount {
                expected: self.outputs.len(),
                found: outputs.len(),
            }));
        }
        for (info, out) in self.outputs.iter().zip(outputs.iter()) {
            check_len(
                &format!("output {:?}", info.name),
                info.output_bytes,
                out.len(),
            )?;
        }
        for ((info, kernel), out) in self
            .outputs
            .iter()
            .zip(&self.output_kernels)
            .zip(outputs.iter_mut())
        {
            kernel
                .check(ofm, info, out)
                .map_err(|e| stage_error(&info.plugins, e))?;
        }
        for ((info, kernel), out) in self
            .outputs
            .iter()
            .zip(&self.output_kernels)
            .zip(outputs.iter_mut())
        {
            let head = &ofm[info.offset as usize..(info.offset + info.size) as usize];
            kernel
                .run(head, out, backend)
                .map_err(|e| stage_error(&info.plugins, e))?;
        }
        Ok(())
    }

    /// [`read_outputs`](Model::read_outputs) into new tensors, in the model's output order.
    /// A misaligned `ofm` is copied once into an aligned buffer.
    ///
    /// # Errors
    ///
    /// As [`read_outputs`](Model::read_outputs).
    pub fn postprocess(&self, ofm: &[u8], threads: usize) -> Result<Vec<OutputTensor>, ModelError> {
        self.postprocess_on(ofm, Backend::A65 { threads })
    }

    /// [`postprocess`](Model::postprocess) on `backend`.
    ///
    /// # Errors
    ///
    /// As [`read_outputs_on`](Model::read_outputs_on).
    pub fn postprocess_on(
        &self,
        ofm: &[u8],
        backend: Backend,
    ) -> Result<Vec<OutputTensor>, ModelError> {
        check_len("the OFM buffer", self.ofm_size, ofm.len())?;
        let copy;
        let ofm = if (ofm.as_ptr() as usize).is_multiple_of(16) {
            ofm
        } else {
            let mut c = AlignedBytes::zeroed(ofm.len(), 16);
            c.as_mut_slice().copy_from_slice(ofm);
            copy = c;
            copy.as_slice()
        };
        let mut tensors: Vec<OutputTensor> = self
            .outputs
            .iter()
            .map(|info| OutputTensor {
                name: info.name.clone(),
                shape: info.shape.clone(),
                dtype: info.dtype,
                data: AlignedBytes::zeroed(info.output_bytes as usize, 16),
            })
            .collect();
        let mut bufs: Vec<&mut [u8]> = tensors.iter_mut().map(|t| t.data.as_mut_slice()).collect();
        self.read_outputs_on(ofm, &mut bufs, backend)?;
        Ok(tensors)
    }
}

fn stage_error(plugins: &[String], e: crate::Error) -> ModelError {
    ModelError {
        plugin: plugins.first().cloned(),
        key: None,
        kind: ModelErrorKind::Stage(e),
    }
}

fn check_len(what: &str, expected: u64, found: usize) -> Result<(), ModelError> {
    if found as u64 != expected {
        return Err(ModelError::new(ModelErrorKind::BufferSize {
            what: what.to_owned(),
            expected,
            found: found as u64,
        }));
    }
    Ok(())
}

pub(crate) fn check_size(
    plugin: &str,
    key: &str,
    declared: u64,
    computed: u64,
    rule: &str,
) -> Result<(), ModelError> {
    if declared != computed {
        return Err(ModelError::at(
            plugin,
            key,
            ModelErrorKind::SizeMismatch {
                declared,
                computed,
                rule: rule.to_owned(),
            },
        ));
    }
    Ok(())
}

/// Frames per call (SPEC §14): the batch keys of the manifest's top level and of every
/// plugin's `params` must agree; frames per call and the compiled batch must be equal.
fn batch(root: &Json, plugins: &[Plugin<'_>]) -> Result<u64, ModelError> {
    let mut frames: Option<(String, &'static str, u64)> = None;
    let mut compiled: Option<(String, &'static str, u64)> = None;
    let mut owners: Vec<(&str, &Json)> = vec![("model", root)];
    owners.extend(plugins.iter().map(|p| (p.name, p.params)));
    for (owner, obj) in owners {
        for (keys, slot) in [(BATCH_FRAMES, &mut frames), (BATCH_COMPILED, &mut compiled)] {
            for &key in keys {
                let Some(v) = obj.get(key) else { continue };
                let Some(n) = (match v {
                    Json::Num(n) => n.as_u64().filter(|&n| n > 0),
                    _ => None,
                }) else {
                    return Err(ModelError::at(
                        owner,
                        key,
                        ModelErrorKind::BadValue {
                            expected: "a positive integer".into(),
                            found: v.to_string(),
                        },
                    ));
                };
                match slot {
                    Some((_, first, m)) if *m != n => {
                        return Err(ModelError::at(
                            owner,
                            first,
                            ModelErrorKind::BatchMismatch {
                                frames: *m,
                                other: key.to_owned(),
                                compiled: n,
                            },
                        ));
                    }
                    Some(_) => {}
                    None => *slot = Some((owner.to_owned(), key, n)),
                }
            }
        }
    }
    match (frames, compiled) {
        (Some((owner, fk, f)), Some((_, ck, c))) if f != c => Err(ModelError::at(
            &owner,
            fk,
            ModelErrorKind::BatchMismatch {
                frames: f,
                other: ck.to_owned(),
                compiled: c,
            },
        )),
        (Some((_, _, f)), _) => Ok(f),
        (None, Some((_, _, c))) => Ok(c),
        (None, None) => Ok(1),
    }
}

/// How the plugins connect (SPEC §14 wiring).
struct Wiring<'a> {
    /// Node → (plugin, output index).
    producer: HashMap<&'a str, Step>,
    /// Node → (plugin, input index).
    consumer: HashMap<&'a str, Step>,
    /// The model's inputs and outputs.
    model_inputs: Vec<&'a str>,
    model_outputs: Vec<&'a str>,
    /// The `MLA` plugin.
    mla: usize,
}

impl<'a> Wiring<'a> {
    fn new(
        plugins: &[Plugin<'a>],
        inputs: &[Node<'a>],
        outputs: &[Node<'a>],
    ) -> Result<Wiring<'a>, ModelError> {
        let mut producer = HashMap::new();
        let mut consumer = HashMap::new();
        let mut mla = None;
        for (pi, p) in plugins.iter().enumerate() {
            if p.kernel == Kernel::Mla {
                if mla.is_some() {
                    return Err(ModelError::at(
                        p.name,
                        "kernel",
                        ModelErrorKind::Graph("a second MLA plugin (a model has one)".into()),
                    ));
                }
                mla = Some(pi);
            }
            for (k, n) in p.outputs.iter().enumerate() {
                if producer.insert(n.name, (pi, k)).is_some() {
                    return Err(graph_error(n.name, "produced by two plugins"));
                }
            }
            for (k, n) in p.inputs.iter().enumerate() {
                if consumer.insert(n.name, (pi, k)).is_some() {
                    return Err(graph_error(n.name, "consumed twice"));
                }
            }
        }
        let Some(mla) = mla else {
            return Err(ModelError::new(ModelErrorKind::Graph(
                "no MLA plugin (the accelerator's place in the chain)".into(),
            )));
        };
        let model_inputs: Vec<&str> = inputs.iter().map(|n| n.name).collect();
        let model_outputs: Vec<&str> = outputs.iter().map(|n| n.name).collect();
        for p in plugins {
            for n in &p.inputs {
                if !producer.contains_key(n.name) && !model_inputs.contains(&n.name) {
                    return Err(graph_error(
                        n.name,
                        &format!("consumed by plugin {:?} but produced by none", p.name),
                    ));
                }
            }
            for n in &p.outputs {
                if !consumer.contains_key(n.name) && !model_outputs.contains(&n.name) {
                    return Err(graph_error(
                        n.name,
                        &format!("produced by plugin {:?} but consumed by none", p.name),
                    ));
                }
            }
        }
        for n in &model_inputs {
            if !consumer.contains_key(n) {
                return Err(graph_error(n, "a model input no plugin consumes"));
            }
            if producer.contains_key(n) {
                return Err(graph_error(n, "a model input that a plugin produces"));
            }
        }
        for n in &model_outputs {
            if !producer.contains_key(n) {
                return Err(graph_error(n, "a model output no plugin produces"));
            }
            if consumer.contains_key(n) {
                return Err(graph_error(n, "a model output that a plugin consumes"));
            }
        }
        if plugins[mla].outputs.len() != 1 {
            return Err(ModelError::at(
                plugins[mla].name,
                "output_nodes",
                ModelErrorKind::Graph(format!(
                    "the MLA has {} output nodes; it writes one OFM buffer",
                    plugins[mla].outputs.len()
                )),
            ));
        }
        Ok(Wiring {
            producer,
            consumer,
            model_inputs,
            model_outputs,
            mla,
        })
    }

    /// The steps from model input `node` to the MLA, and which MLA input it feeds.
    fn input_chain(
        &self,
        plugins: &[Plugin<'a>],
        node: &'a str,
    ) -> Result<(Vec<Step>, usize), ModelError> {
        let mut chain = Vec::new();
        let mut at = node;
        for _ in 0..=plugins.len() {
            let Some(&(p, k)) = self.consumer.get(at) else {
                return Err(graph_error(at, "consumed by no plugin"));
            };
            if p == self.mla {
                return Ok((chain, k));
            }
            let plugin = &plugins[p];
            if plugin.outputs.len() != plugin.inputs.len() || chain.len() > plugins.len() {
                return Err(ModelError::at(
                    plugin.name,
                    "output_nodes",
                    ModelErrorKind::Graph(format!(
                        "an input-side plugin with {} input and {} output nodes (tensor i goes to output i)",
                        plugin.inputs.len(),
                        plugin.outputs.len()
                    )),
                ));
            }
            if plugin.kernel != Kernel::PassThrough {
                chain.push((p, k));
            }
            at = plugin.outputs[k].name;
            if self.model_outputs.contains(&at) {
                return Err(graph_error(at, "an input chain that ends before the MLA"));
            }
        }
        // Each node has one producer, so a chain visits each plugin at most once per tensor.
        Err(graph_error(at, "a chain longer than the plugins (a cycle)"))
    }

    /// The heads of the OFM (the unpack's outputs, or the OFM node itself) and the unpack.
    fn heads(&self, plugins: &[Plugin<'a>]) -> Result<(Vec<&'a str>, Option<usize>), ModelError> {
        let ofm = plugins[self.mla].outputs[0].name;
        let Some(&(p, _)) = self.consumer.get(ofm) else {
            return Ok((vec![ofm], None));
        };
        if plugins[p].kernel == Kernel::Unpack {
            if plugins[p].inputs.len() != 1 {
                return Err(ModelError::at(
                    plugins[p].name,
                    "input_nodes",
                    ModelErrorKind::Graph("an unpack_transform reads one OFM node".into()),
                ));
            }
            return Ok((plugins[p].outputs.iter().map(|n| n.name).collect(), Some(p)));
        }
        Ok((vec![ofm], None))
    }

    /// The steps from `head` to a model output.
    fn output_chain(&self, plugins: &[Plugin<'a>], head: &'a str) -> Result<Vec<Step>, ModelError> {
        let mut chain = Vec::new();
        let mut at = head;
        let mut steps = 0;
        while !self.model_outputs.contains(&at) {
            steps += 1;
            if steps > plugins.len() + 1 {
                return Err(graph_error(at, "a chain longer than the plugins (a cycle)"));
            }
            let Some(&(p, k)) = self.consumer.get(at) else {
                return Err(graph_error(at, "consumed by no plugin"));
            };
            let plugin = &plugins[p];
            if plugin.outputs.len() != plugin.inputs.len()
                || chain.len() > plugins.len()
                || p == self.mla
            {
                return Err(ModelError::at(
                    plugin.name,
                    "output_nodes",
                    ModelErrorKind::Graph(format!(
                        "an output-side plugin with {} input and {} output nodes (tensor i goes to output i)",
                        plugin.inputs.len(),
                        plugin.outputs.len()
                    )),
                ));
            }
            if plugin.kernel != Kernel::PassThrough {
                chain.push((p, k));
            }
            at = plugin.outputs[k].name;
            if self.model_inputs.contains(&at) {
                return Err(graph_error(at, "an output chain that feeds a model input"));
            }
        }
        let _ = &self.producer;
        Ok(chain)
    }
}
