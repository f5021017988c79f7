//! [`ModelError`]: why a manifest was refused or a model call failed (codes 0x700–0x7ff,
//! `docs/errors.md`).

use std::fmt;

use crate::Error;

/// Why a manifest could not be read into a [`Model`](super::Model), or why a model call
/// refused its buffers (SPEC §14). Names the plugin and the key where there is one. Every
/// error is found before anything is written.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelError {
    /// The plugin the error is about (its `name`), if any.
    pub plugin: Option<String>,
    /// The parameter key (or node) the error is about, if any.
    pub key: Option<String>,
    /// What went wrong.
    pub kind: ModelErrorKind,
}

/// What went wrong in a [`ModelError`].
#[derive(Debug, Clone, PartialEq)]
pub enum ModelErrorKind {
    /// The file could not be read (0x700).
    Io(String),
    /// Not JSON (`serde_json`'s message with line and column), or not a JSON object
    /// (0x701).
    Json(String),
    /// A key repeated in one JSON object (0x70f); `key` names it, `plugin` the plugin it
    /// is in (if any), the string where in the plugin or the manifest.
    RepeatedKey(String),
    /// A required key is missing (0x702).
    MissingKey,
    /// A value of the wrong JSON type or outside its set (0x703).
    BadValue {
        /// What the key needs.
        expected: String,
        /// What was found (compact JSON).
        found: String,
    },
    /// Two aliases of one key in one plugin with different values (0x704); `key` is the
    /// first, `other` the second.
    ConflictingAliases {
        /// The second alias.
        other: String,
    },
    /// A kernel simak does not know, a kernel sequence that is no op of SPEC §14 (a
    /// standalone cast, a tessellation of a non-BF16 input, `cblock` on an input-side
    /// tessellation) (0x705).
    UnsupportedKernel {
        /// The kernel, or the chain of kernels.
        kernel: String,
    },
    /// A key a `preproc` plugin does not have (0x706).
    UnknownKey,
    /// A per-tensor list whose length is neither one nor the plugin's tensor count (0x707).
    ListLength {
        /// The list's length.
        found: usize,
        /// The plugin's tensor count.
        tensors: usize,
    },
    /// Frames per call and the compiled batch differ (0x708); `key` names the first key.
    BatchMismatch {
        /// Frames per call.
        frames: u64,
        /// The second key.
        other: String,
        /// The batch the MLA program was compiled for.
        compiled: u64,
    },
    /// A size the archive declares differs from the one simak computes (0x709).
    SizeMismatch {
        /// Bytes declared.
        declared: u64,
        /// Bytes computed.
        computed: u64,
        /// How simak computed it.
        rule: String,
    },
    /// The plugins do not form chains (0x70a): a node consumed or produced twice, a node
    /// with no producer, an unconsumed output, no or several `MLA` plugins. `key` names
    /// the node.
    Graph(String),
    /// A shape that does not fit the rule of its key (rank, leading batch extent, the frame
    /// size) (0x70b).
    Shape(String),
    /// `input_range` outside what SPEC §14 accepts (0x70c).
    InputRange {
        /// Its low end.
        lo: f64,
        /// Its high end.
        hi: f64,
    },
    /// A stage's op refused the parameters (the op's own code, SPEC §2–§13).
    Stage(Error),
    /// A model call's buffer of the wrong length (0x70d).
    BufferSize {
        /// Which buffer.
        what: String,
        /// Bytes expected.
        expected: u64,
        /// Bytes given.
        found: u64,
    },
    /// A count of output buffers other than the model's outputs' (0x710).
    BufferCount {
        /// The model's outputs.
        expected: usize,
        /// Buffers given.
        found: usize,
    },
    /// An input or output index past the model's count (0x70e).
    Index {
        /// `"input"` or `"output"`.
        side: &'static str,
        /// The index given.
        index: usize,
        /// The count.
        count: usize,
    },
}

impl ModelError {
    pub(crate) fn new(kind: ModelErrorKind) -> ModelError {
        ModelError {
            plugin: None,
            key: None,
            kind,
        }
    }

    pub(crate) fn at(plugin: &str, key: &str, kind: ModelErrorKind) -> ModelError {
        ModelError {
            plugin: Some(plugin.to_owned()),
            key: (!key.is_empty()).then(|| key.to_owned()),
            kind,
        }
    }

    /// The stable numeric code (`docs/errors.md`): 0x700–0x7ff, or the op's own code for
    /// [`ModelErrorKind::Stage`].
    pub fn code(&self) -> u32 {
        match &self.kind {
            ModelErrorKind::Io(_) => 0x700,
            ModelErrorKind::Json(_) => 0x701,
            ModelErrorKind::MissingKey => 0x702,
            ModelErrorKind::BadValue { .. } => 0x703,
            ModelErrorKind::ConflictingAliases { .. } => 0x704,
            ModelErrorKind::UnsupportedKernel { .. } => 0x705,
            ModelErrorKind::UnknownKey => 0x706,
            ModelErrorKind::ListLength { .. } => 0x707,
            ModelErrorKind::BatchMismatch { .. } => 0x708,
            ModelErrorKind::SizeMismatch { .. } => 0x709,
            ModelErrorKind::Graph(_) => 0x70a,
            ModelErrorKind::Shape(_) => 0x70b,
            ModelErrorKind::InputRange { .. } => 0x70c,
            ModelErrorKind::BufferSize { .. } => 0x70d,
            ModelErrorKind::Index { .. } => 0x70e,
            ModelErrorKind::RepeatedKey(_) => 0x70f,
            ModelErrorKind::BufferCount { .. } => 0x710,
            ModelErrorKind::Stage(e) => e.code(),
        }
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.plugin {
            write!(f, "plugin {p:?}: ")?;
        }
        let key = self.key.as_deref().unwrap_or("");
        match &self.kind {
            ModelErrorKind::Io(m) => write!(f, "cannot read the manifest: {m}"),
            ModelErrorKind::Json(m) => write!(f, "{m}"),
            ModelErrorKind::MissingKey => write!(f, "missing key `{key}`"),
            ModelErrorKind::RepeatedKey(at) => write!(
                f,
                "key `{key}` is repeated in {at} (a JSON object names each key once)"
            ),
            ModelErrorKind::BadValue { expected, found } => {
                write!(f, "key `{key}`: expected {expected}, found {found}")
            }
            ModelErrorKind::ConflictingAliases { other } => write!(
                f,
                "keys `{key}` and `{other}` are aliases of one parameter and give different values"
            ),
            ModelErrorKind::UnsupportedKernel { kernel } => {
                write!(f, "kernel {kernel} is not supported (SPEC §14 kernels)")
            }
            ModelErrorKind::UnknownKey => write!(f, "key `{key}` is not a preproc key"),
            ModelErrorKind::ListLength { found, tensors } if *tensors == 1 => write!(
                f,
                "key `{key}`: a list of {found} entries, but lists are per tensor (never per \
                 channel) and this plugin has one tensor: give one entry"
            ),
            ModelErrorKind::ListLength { found, tensors } => write!(
                f,
                "key `{key}`: a list of {found} entries, but lists are per tensor (never per \
                 channel) and this plugin has {tensors} tensors: give 1 or {tensors}"
            ),
            ModelErrorKind::BatchMismatch {
                frames,
                other,
                compiled,
            } => write!(
                f,
                "`{key}` = {frames} frames per call but `{other}` = {compiled} (the compiled \
                 batch); they must be equal"
            ),
            ModelErrorKind::SizeMismatch {
                declared,
                computed,
                rule,
            } => write!(
                f,
                "`{key}` declares {declared} bytes, simak computes {computed} ({rule})"
            ),
            ModelErrorKind::Graph(m) => {
                if key.is_empty() {
                    write!(f, "{m}")
                } else {
                    write!(f, "node {key:?}: {m}")
                }
            }
            ModelErrorKind::Shape(m) => write!(f, "key `{key}`: {m}"),
            ModelErrorKind::InputRange { lo, hi } => write!(
                f,
                "`input_range` [{lo}, {hi}] gives a mean outside [0, 1] or a std outside \
                 (0, 1] (SPEC §14)"
            ),
            ModelErrorKind::Stage(e) => write!(f, "{e}"),
            ModelErrorKind::BufferSize {
                what,
                expected,
                found,
            } => write!(f, "{what}: {found} bytes, the model needs {expected}"),
            ModelErrorKind::BufferCount { expected, found } => write!(
                f,
                "{found} output buffers given, but the model has {expected} outputs (one buffer \
                 each)"
            ),
            ModelErrorKind::Index { side, index, count } => write!(
                f,
                "{side} index {index} is past the model's {side}s (it has {count})"
            ),
        }
    }
}

impl std::error::Error for ModelError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            ModelErrorKind::Stage(e) => Some(e),
            _ => None,
        }
    }
}
