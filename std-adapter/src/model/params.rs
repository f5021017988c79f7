//! Reading one plugin's parameters (SPEC §14): aliases, per-tensor lists, dtype and rounding
//! spellings.

use simak_core::DType;
use simak_core::ops::quant::Rounding;

use super::error::{ModelError, ModelErrorKind};
use super::json::Json;

/// Scale aliases.
pub(crate) const SCALE: &[&str] = &["q_scale", "quant_scale", "dq_scale"];
/// Zero-point aliases.
pub(crate) const ZERO_POINT: &[&str] = &["q_zp", "zero_point", "dq_zp"];
/// Rounding aliases.
pub(crate) const ROUNDING: &[&str] = &["rounding", "round_off"];
/// Input shape aliases.
pub(crate) const IN_SHAPES: &[&str] = &["input_shapes", "in_shapes", "input_shape"];
/// Output shape aliases.
pub(crate) const OUT_SHAPES: &[&str] = &[
    "output_shapes",
    "tensor_shapes",
    "out_shapes",
    "output_shape",
];
/// Input dtype aliases.
pub(crate) const IN_DTYPE: &[&str] = &["in_dtype", "input_dtype", "input_data_type"];
/// Output dtype aliases.
pub(crate) const OUT_DTYPE: &[&str] =
    &["out_dtype", "output_dtype", "output_data_type", "data_type"];
/// Frames per call.
pub(crate) const BATCH_FRAMES: &[&str] = &["batch_size", "desired_batch_size"];
/// The batch the MLA program was compiled for.
pub(crate) const BATCH_COMPILED: &[&str] =
    &["actual_batch_size", "batch_sz_model", "batch_size_model"];

/// A dtype of the manifest: a [`DType`] or `UINT8` (frames).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElementType {
    /// Unsigned 8-bit (camera frames).
    U8,
    /// One of the contract's dtypes.
    D(DType),
}

impl ElementType {
    /// NumPy's name: `uint8`, `float32`, `bfloat16`, `float16`, `int8`, `int16`, `int32`.
    pub const fn numpy_name(self) -> &'static str {
        match self {
            ElementType::U8 => "uint8",
            ElementType::D(DType::F32) => "float32",
            ElementType::D(DType::BF16) => "bfloat16",
            ElementType::D(DType::F16) => "float16",
            ElementType::D(DType::I8) => "int8",
            ElementType::D(DType::I16) => "int16",
            ElementType::D(DType::I32) => "int32",
        }
    }

    /// Bytes per element.
    pub const fn size(self) -> u64 {
        match self {
            ElementType::U8 => 1,
            ElementType::D(d) => d.size_u64(),
        }
    }
}

/// Parses a dtype spelling of SPEC §14 (case-insensitive).
pub(crate) fn element_type(s: &str) -> Option<ElementType> {
    Some(match s.to_ascii_uppercase().as_str() {
        "INT8" | "EVXX_INT8" => ElementType::D(DType::I8),
        "UINT8" => ElementType::U8,
        "INT16" => ElementType::D(DType::I16),
        "INT32" => ElementType::D(DType::I32),
        "FP32" | "FLOAT32" | "EVXX_FLOAT32" => ElementType::D(DType::F32),
        "BF16" | "BFLOAT16" | "EVXX_BFLOAT16" => ElementType::D(DType::BF16),
        "FP16" => ElementType::D(DType::F16),
        _ => return None,
    })
}

/// Parses a rounding spelling of SPEC §14.
pub(crate) fn rounding(s: &str) -> Option<Rounding> {
    Some(match s {
        "RT_ZERO" | "TOZERO" => Rounding::TowardZero,
        "RT_EVEN" | "TONEAREST" => Rounding::NearestEven,
        "RT_POSITVE_INFINITY" | "TOPOSITIVEINFINITY" => Rounding::TowardPositive,
        "RT_NEGATIVE_INFINITY" | "TONEGATIVEINFINITY" => Rounding::TowardNegative,
        _ => return None,
    })
}

/// A parameter's value with the key (alias) it was read under.
pub(crate) type Keyed<T> = Option<(&'static str, T)>;

/// One plugin's parameters as a stage reads them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PluginParams<'a> {
    /// The plugin's name.
    pub(crate) plugin: &'a str,
    /// Its `params` object (an empty object when absent).
    pub(crate) params: &'a Json,
    /// The tensors it handles (its input nodes).
    pub(crate) tensors: usize,
}

/// A value of `key` in `plugin` that is not `expected` (0x703).
pub(crate) fn bad(plugin: &str, key: &str, expected: &str, found: impl ToString) -> ModelError {
    ModelError::at(
        plugin,
        key,
        ModelErrorKind::BadValue {
            expected: expected.to_owned(),
            found: found.to_string(),
        },
    )
}

impl<'a> PluginParams<'a> {
    /// The value of a key given by any of `aliases` (the alias used, the value); two
    /// aliases with different values are an error.
    pub(crate) fn lookup(
        &self,
        aliases: &[&'static str],
    ) -> Result<Option<(&'static str, &'a Json)>, ModelError> {
        let mut found: Option<(&'static str, &'a Json)> = None;
        for &alias in aliases {
            if let Some(v) = self.params.get(alias) {
                match found {
                    Some((first, fv)) if fv != v => {
                        return Err(ModelError::at(
                            self.plugin,
                            first,
                            ModelErrorKind::ConflictingAliases {
                                other: alias.to_owned(),
                            },
                        ));
                    }
                    Some(_) => {}
                    None => found = Some((alias, v)),
                }
            }
        }
        Ok(found)
    }

    /// Entry `tensor` of a per-tensor value: a scalar (every tensor), or a list of one entry
    /// or one per tensor. `is_entry` tells an entry from a list of entries.
    pub(crate) fn entry(
        &self,
        key: &str,
        value: &'a Json,
        tensor: usize,
        is_entry: impl Fn(&Json) -> bool,
    ) -> Result<&'a Json, ModelError> {
        if is_entry(value) {
            return Ok(value);
        }
        let Json::Arr(items) = value else {
            return Ok(value);
        };
        if items.len() != 1 && items.len() != self.tensors {
            return Err(ModelError::at(
                self.plugin,
                key,
                ModelErrorKind::ListLength {
                    found: items.len(),
                    tensors: self.tensors,
                },
            ));
        }
        Ok(if items.len() == 1 {
            &items[0]
        } else {
            &items[tensor]
        })
    }

    /// A per-tensor number (f64) under `aliases`.
    pub(crate) fn number(
        &self,
        aliases: &[&'static str],
        tensor: usize,
    ) -> Result<Option<(&'static str, f64)>, ModelError> {
        let Some((key, v)) = self.lookup(aliases)? else {
            return Ok(None);
        };
        let e = self.entry(key, v, tensor, |j| matches!(j, Json::Num(_)))?;
        match e {
            Json::Num(n) => Ok(Some((key, n.as_f64().unwrap_or(f64::NAN)))),
            other => Err(bad(
                self.plugin,
                key,
                "a number or a list of numbers",
                other,
            )),
        }
    }

    /// A per-tensor integer under `aliases`.
    pub(crate) fn integer(
        &self,
        aliases: &[&'static str],
        tensor: usize,
    ) -> Result<Option<(&'static str, i64)>, ModelError> {
        let Some((key, v)) = self.lookup(aliases)? else {
            return Ok(None);
        };
        let e = self.entry(key, v, tensor, |j| matches!(j, Json::Num(_)))?;
        match e {
            Json::Num(n) => match n.as_i64() {
                Some(i) => Ok(Some((key, i))),
                None => Err(bad(self.plugin, key, "an integer", e)),
            },
            other => Err(bad(
                self.plugin,
                key,
                "an integer or a list of integers",
                other,
            )),
        }
    }

    /// A per-tensor boolean under `aliases`.
    pub(crate) fn boolean(
        &self,
        aliases: &[&'static str],
        tensor: usize,
    ) -> Result<Option<(&'static str, bool)>, ModelError> {
        let Some((key, v)) = self.lookup(aliases)? else {
            return Ok(None);
        };
        match self.entry(key, v, tensor, |j| matches!(j, Json::Bool(_)))? {
            Json::Bool(b) => Ok(Some((key, *b))),
            other => Err(bad(
                self.plugin,
                key,
                "true, false or a list of them",
                other,
            )),
        }
    }

    /// A per-tensor string under `aliases`.
    pub(crate) fn string(
        &self,
        aliases: &[&'static str],
        tensor: usize,
    ) -> Result<Option<(&'static str, &'a str)>, ModelError> {
        let Some((key, v)) = self.lookup(aliases)? else {
            return Ok(None);
        };
        match self.entry(key, v, tensor, |j| matches!(j, Json::Str(_)))? {
            Json::Str(s) => Ok(Some((key, s.as_str()))),
            other => Err(bad(
                self.plugin,
                key,
                "a string or a list of strings",
                other,
            )),
        }
    }

    /// A per-tensor dtype under `aliases`.
    pub(crate) fn dtype(
        &self,
        aliases: &[&'static str],
        tensor: usize,
    ) -> Result<Option<(&'static str, ElementType)>, ModelError> {
        let Some((key, s)) = self.string(aliases, tensor)? else {
            return Ok(None);
        };
        match element_type(s) {
            Some(t) => Ok(Some((key, t))),
            None => Err(bad(
                self.plugin,
                key,
                "a dtype (INT8, UINT8, INT16, INT32, FP32, BF16, FP16 or an alias)",
                Json::Str(s.to_owned()),
            )),
        }
    }

    /// A per-tensor shape (a list of non-negative integers) under `aliases`: one shape for
    /// every tensor, or a list of one shape or one per tensor.
    pub(crate) fn shape(
        &self,
        aliases: &[&'static str],
        tensor: usize,
    ) -> Result<Option<(&'static str, Vec<u64>)>, ModelError> {
        let Some((key, v)) = self.lookup(aliases)? else {
            return Ok(None);
        };
        let is_shape = |j: &Json| match j {
            Json::Arr(items) => items.iter().all(|i| matches!(i, Json::Num(_))),
            _ => false,
        };
        let e = self.entry(key, v, tensor, is_shape)?;
        let Json::Arr(items) = e else {
            return Err(bad(self.plugin, key, "a shape or a list of shapes", e));
        };
        let mut shape = Vec::with_capacity(items.len());
        for i in items {
            match i {
                Json::Num(n) if n.as_u64().is_some() => shape.push(n.as_u64().unwrap_or(0)),
                _ => {
                    return Err(bad(self.plugin, key, "a shape of non-negative integers", e));
                }
            }
        }
        Ok(Some((key, shape)))
    }

    /// The scale and zero point of `tensor`: from the scale and zero-point aliases, or
    /// `channel_params: [[scale, zp], …]` (per tensor; both given: they must agree).
    pub(crate) fn scale_zp(&self, tensor: usize) -> Result<(Keyed<f64>, Keyed<i64>), ModelError> {
        let scale = self.number(SCALE, tensor)?;
        let zp = self.integer(ZERO_POINT, tensor)?;
        let Some(cp) = self.params.get("channel_params") else {
            return Ok((scale, zp));
        };
        let is_pair = |j: &Json| match j {
            Json::Arr(items) => items.len() == 2 && items.iter().all(|i| matches!(i, Json::Num(_))),
            _ => false,
        };
        let e = self.entry("channel_params", cp, tensor, is_pair)?;
        let pair = match e {
            Json::Arr(items) if is_pair(e) => items,
            _ => {
                return Err(bad(
                    self.plugin,
                    "channel_params",
                    "a list of [scale, zero point] pairs, one per tensor",
                    e,
                ));
            }
        };
        let (Json::Num(s), Json::Num(z)) = (&pair[0], &pair[1]) else {
            return Err(bad(self.plugin, "channel_params", "[scale, zero point]", e));
        };
        let s = s.as_f64().unwrap_or(f64::NAN);
        let Some(z) = z.as_i64() else {
            return Err(bad(
                self.plugin,
                "channel_params",
                "an integer zero point",
                e,
            ));
        };
        if let Some((k, v)) = scale
            && v != s
        {
            return Err(ModelError::at(
                self.plugin,
                k,
                ModelErrorKind::ConflictingAliases {
                    other: "channel_params".to_owned(),
                },
            ));
        }
        if let Some((k, v)) = zp
            && v != z
        {
            return Err(ModelError::at(
                self.plugin,
                k,
                ModelErrorKind::ConflictingAliases {
                    other: "channel_params".to_owned(),
                },
            ));
        }
        Ok((
            Some((scale.map_or("channel_params", |(k, _)| k), s)),
            Some((zp.map_or("channel_params", |(k, _)| k), z)),
        ))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn params(text: &str, tensors: usize) -> Json {
        let _ = tensors;
        Json::parse(text).unwrap()
    }

    #[test]
    fn aliases_agree_or_conflict() {
        let j = params(r#"{"q_scale": 2.0, "dq_scale": 2.0}"#, 1);
        let p = PluginParams {
            plugin: "p",
            params: &j,
            tensors: 1,
        };
        assert_eq!(p.number(SCALE, 0).unwrap(), Some(("q_scale", 2.0)));
        let j = params(r#"{"q_scale": 2.0, "quant_scale": 3.0}"#, 1);
        let p = PluginParams {
            plugin: "p",
            params: &j,
            tensors: 1,
        };
        let e = p.number(SCALE, 0).unwrap_err();
        assert_eq!(e.code(), 0x704);
        assert!(e.to_string().contains("`q_scale` and `quant_scale`"), "{e}");
    }

    #[test]
    fn lists_are_per_tensor() {
        let j = params(
            r#"{"q_scale": [1.0, 2.0, 3.0], "q_zp": [5], "x": [1, 2]}"#,
            3,
        );
        let p = PluginParams {
            plugin: "p",
            params: &j,
            tensors: 3,
        };
        assert_eq!(p.number(SCALE, 2).unwrap(), Some(("q_scale", 3.0)));
        assert_eq!(p.integer(ZERO_POINT, 2).unwrap(), Some(("q_zp", 5)));
        let e = p.integer(&["x"], 0).unwrap_err();
        assert_eq!(e.code(), 0x707);
        assert!(
            e.to_string().contains("2 entries") && e.to_string().contains("3 tensors: give 1 or 3"),
            "{e}"
        );
    }

    #[test]
    fn shapes_one_or_per_tensor() {
        let j = params(
            r#"{"a": [1, 2, 3], "b": [[1, 2], [3, 4]], "c": [[1, 2]]}"#,
            2,
        );
        let p = PluginParams {
            plugin: "p",
            params: &j,
            tensors: 2,
        };
        assert_eq!(p.shape(&["a"], 1).unwrap().unwrap().1, [1, 2, 3]);
        assert_eq!(p.shape(&["b"], 1).unwrap().unwrap().1, [3, 4]);
        assert_eq!(p.shape(&["c"], 1).unwrap().unwrap().1, [1, 2]);
    }

    #[test]
    fn dtype_and_rounding_spellings() {
        for (s, t) in [
            ("int8", ElementType::D(DType::I8)),
            ("EVXX_INT8", ElementType::D(DType::I8)),
            ("Float32", ElementType::D(DType::F32)),
            ("evxx_bfloat16", ElementType::D(DType::BF16)),
            ("UINT8", ElementType::U8),
            ("fp16", ElementType::D(DType::F16)),
        ] {
            assert_eq!(element_type(s), Some(t), "{s}");
        }
        assert_eq!(element_type("FP8"), None);
        assert_eq!(
            rounding("RT_POSITVE_INFINITY"),
            Some(Rounding::TowardPositive)
        );
        assert_eq!(rounding("TONEAREST"), Some(Rounding::NearestEven));
        assert_eq!(rounding("nearest"), None);
    }
}
