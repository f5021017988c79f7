//! Device descriptor wire formats: raw little-endian views and validated representations.
//!
//! Contract between layers (SPEC §7, STYLE §1, §3). Every descriptor is the 160-byte
//! [`prefix`] followed by its entry's tail, one file an idea:
//!
//! - [`prefix`]: the shared layout of bytes 0..160 — defined, asserted, parsed and listed
//!   once — and the parse order every entry follows, with the per-entry facts (magic, byte
//!   length, flag bits, the meaning of the span at offset 56) as a [`prefix::Format`];
//! - [`rules`]: the one [`DecodeError`] of every entry and its stable [`DecodeCode`]s;
//! - [`fields`]: the field listing of raw descriptors;
//! - [`quant`], [`casttess`], [`detess`], [`preproc`]: each entry's tail (raw struct, flags, validated `…Repr`,
//!   `parse` and `emit`).
//!
//! Each raw struct is `#[repr(C)]` of `zerocopy` little-endian integers and byte arrays
//! (alignment 1, no padding), its size and every field offset statically asserted; it only
//! reads and writes fields and tolerates any value. `parse` checks every semantic rule and
//! recomputes every derived field; `emit` cannot fail. The same structs are used verbatim by
//! the host codec (`crate::ev74`) and the firmware decoder. Nothing here reads past a
//! buffer: untrusted bytes are cast with `zerocopy::FromBytes::ref_from_bytes` and the code
//! denies indexing and unchecked arithmetic.

pub mod casttess;
pub mod detess;
pub mod fields;
pub mod prefix;
pub mod preproc;
pub mod quant;
pub mod rules;

pub use casttess::{CastTessDescriptorV1, CastTessFlags, CastTessRepr};
pub use fields::{Field, FieldValue, Fields};
pub use prefix::{Prefix, PrefixRepr};
pub use quant::{QuantDescriptorV1, QuantFlags, QuantRepr};
pub use rules::{DecodeCode, DecodeError};
