//! The manifest's JSON, read by `serde_json` into a tree that keeps every object member in
//! document order, repeated keys included, so that a repeated key is reported with the
//! plugin it is in (SPEC §14; `serde_json::Value` keeps the last of two silently).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};

/// Most nested arrays and objects accepted (`serde_json`'s own recursion limit is 128; a
/// manifest nests about 5 deep).
pub(crate) const MAX_DEPTH: usize = 64;

/// A JSON value with object keys in document order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number, as `serde_json` read it.
    Num(serde_json::Number),
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<Json>),
    /// An object, keys in document order (each once).
    Obj(Vec<(String, Json)>),
}

impl Json {
    /// Parses `text`: one JSON value (repeated keys kept: see
    /// [`repeated_key`](Json::repeated_key)).
    ///
    /// # Errors
    ///
    /// `serde_json`'s message with its line and column.
    pub(crate) fn parse(text: &str) -> Result<Json, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let value = Json::deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    }

    /// The first key repeated in one object, depth first in document order: the path of
    /// the object (member keys and array indices) and the key.
    pub(crate) fn repeated_key(&self) -> Option<(Vec<PathStep>, String)> {
        match self {
            Json::Obj(members) => {
                for (i, (k, _)) in members.iter().enumerate() {
                    if members[..i].iter().any(|(j, _)| j == k) {
                        return Some((Vec::new(), k.clone()));
                    }
                }
                for (k, v) in members {
                    if let Some((mut path, key)) = v.repeated_key() {
                        path.insert(0, PathStep::Key(k.clone()));
                        return Some((path, key));
                    }
                }
                None
            }
            Json::Arr(items) => {
                for (i, v) in items.iter().enumerate() {
                    if let Some((mut path, key)) = v.repeated_key() {
                        path.insert(0, PathStep::Index(i));
                        return Some((path, key));
                    }
                }
                None
            }
            _ => None,
        }
    }

    /// The member `key` of an object (`None` for a missing key or a non-object).
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// What kind of value this is, for messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Num(_) => "a number",
            Json::Str(_) => "a string",
            Json::Arr(_) => "an array",
            Json::Obj(_) => "an object",
        }
    }
}

/// One step of a path into a [`Json`] tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PathStep {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
}

impl fmt::Display for Json {
    /// Compact JSON text (for messages and `inspect`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Json::Null => f.write_str("null"),
            Json::Bool(b) => write!(f, "{b}"),
            Json::Num(n) => write!(f, "{n}"),
            Json::Str(s) => write!(f, "{}", serde_json::Value::String(s.clone())),
            Json::Arr(items) => {
                f.write_str("[")?;
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            Json::Obj(members) => {
                f.write_str("{")?;
                for (i, (k, v)) in members.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {v}", serde_json::Value::String(k.clone()))?;
                }
                f.write_str("}")
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor { depth: 0 })
    }
}

struct JsonVisitor {
    depth: usize,
}

/// A nested value, one level deeper.
struct Nested(usize);

impl<'de> de::DeserializeSeed<'de> for Nested {
    type Value = Json;
    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor { depth: self.0 })
    }
}

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Num(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Num(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(v)
            .map(Json::Num)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::Str(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::Str(v))
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(de::Error::custom(format!(
                "nested more than {MAX_DEPTH} levels deep"
            )));
        }
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(Nested(self.depth + 1))? {
            items.push(v);
        }
        Ok(Json::Arr(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        if self.depth >= MAX_DEPTH {
            return Err(de::Error::custom(format!(
                "nested more than {MAX_DEPTH} levels deep"
            )));
        }
        let mut members: Vec<(String, Json)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(Nested(self.depth + 1))?;
            members.push((key, value));
        }
        Ok(Json::Obj(members))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn repeated_keys_are_found_at_any_depth() {
        let v = Json::parse(r#"{"a": 1, "b": {"c": 2}}"#).unwrap();
        assert_eq!(v.repeated_key(), None);
        let v = Json::parse(r#"{"a": 1, "a": 1}"#).unwrap();
        assert_eq!(v.repeated_key(), Some((vec![], "a".to_owned())));
        let v = Json::parse(r#"{"p": [{"n": 0}, {"k": 1, "x": 0, "k": 2}]}"#).unwrap();
        assert_eq!(
            v.repeated_key(),
            Some((
                vec![PathStep::Key("p".into()), PathStep::Index(1)],
                "k".to_owned()
            ))
        );
    }

    #[test]
    fn keys_keep_document_order_and_deep_nesting_is_refused() {
        let v = Json::parse(r#"{"z": 1, "a": [true, null, "s", 2.5]}"#).unwrap();
        assert_eq!(v.to_string(), r#"{"z": 1, "a": [true, null, "s", 2.5]}"#);
        let deep = "[".repeat(100) + &"]".repeat(100);
        assert!(Json::parse(&deep).is_err());
        assert!(Json::parse("1 2").is_err());
    }
}
