//! Field listings of raw descriptors, for tools such as `simak packet decode`: every field
//! with its byte offset, name and raw value, whatever the value is (nothing is validated).
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use core::fmt;

use zerocopy::little_endian::{U32, U64};

/// Most fields a descriptor lists (Preproc v1 has 68).
pub const MAX_FIELDS: usize = 72;

/// A descriptor's fields in wire order.
pub type Fields = heapless::Vec<Field, MAX_FIELDS>;

/// One descriptor field for listings: byte offset, name and raw value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// Byte offset in the descriptor.
    pub offset: usize,
    /// Field name (`extents[2]` for array slots).
    pub name: &'static str,
    /// Raw value.
    pub value: FieldValue,
}

/// A raw field value, with how it is best shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValue {
    /// Four magic bytes.
    Magic([u8; 4]),
    /// `u16`, decimal.
    U16(u16),
    /// `u32`, decimal.
    U32(u32),
    /// `u32`, hexadecimal (flags, reserved words, multiplier bits).
    Hex32(u32),
    /// `i32`, decimal.
    I32(i32),
    /// `u64`, decimal.
    U64(u64),
    /// `u64`, hexadecimal (address slots).
    Hex64(u64),
}

impl FieldValue {
    /// The value widened to `i128` (magic bytes read little-endian), for JSON output.
    pub fn as_i128(&self) -> i128 {
        match *self {
            FieldValue::Magic(m) => i128::from(u32::from_le_bytes(m)),
            FieldValue::U16(v) => i128::from(v),
            FieldValue::U32(v) | FieldValue::Hex32(v) => i128::from(v),
            FieldValue::I32(v) => i128::from(v),
            FieldValue::U64(v) | FieldValue::Hex64(v) => i128::from(v),
        }
    }
}

impl fmt::Display for FieldValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            FieldValue::Magic(m) => {
                f.write_str("\"")?;
                for b in m {
                    if b.is_ascii_graphic() {
                        write!(f, "{}", char::from(b))?;
                    } else {
                        write!(f, "\\x{b:02x}")?;
                    }
                }
                f.write_str("\"")
            }
            FieldValue::U16(v) => write!(f, "{v}"),
            FieldValue::U32(v) => write!(f, "{v}"),
            FieldValue::Hex32(v) => write!(f, "0x{v:08x}"),
            FieldValue::I32(v) => write!(f, "{v}"),
            FieldValue::U64(v) => write!(f, "{v}"),
            FieldValue::Hex64(v) => write!(f, "0x{v:x}"),
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>3}  {:<18} {}", self.offset, self.name, self.value)
    }
}

/// Pushes one field.
pub(crate) fn push(out: &mut Fields, offset: usize, name: &'static str, value: FieldValue) {
    // `Fields` holds every field of the largest descriptor.
    let _ = out.push(Field {
        offset,
        name,
        value,
    });
}

/// Pushes an array of `u64` slots from `base`, 8 bytes apart, named by `names`.
pub(crate) fn push_u64s(out: &mut Fields, base: usize, names: &[&'static str], values: &[U64]) {
    for (k, (name, v)) in names.iter().zip(values.iter()).enumerate() {
        push(
            out,
            base.saturating_add(k.saturating_mul(8)),
            name,
            FieldValue::U64(v.get()),
        );
    }
}

/// Pushes an array of `u32` slots from `base`, 4 bytes apart, named by `names`.
pub(crate) fn push_u32s(out: &mut Fields, base: usize, names: &[&'static str], values: &[U32]) {
    for (k, (name, v)) in names.iter().zip(values.iter()).enumerate() {
        push(
            out,
            base.saturating_add(k.saturating_mul(4)),
            name,
            FieldValue::U32(v.get()),
        );
    }
}

/// Lists `fields`, one per line: offset, name, raw value.
pub(crate) fn write_listing(f: &mut fmt::Formatter<'_>, fields: &Fields) -> fmt::Result {
    for field in fields {
        writeln!(f, "{field}")?;
    }
    Ok(())
}
