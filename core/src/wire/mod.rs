//! Device descriptor wire formats: raw little-endian views and validated representations.
//!
//! Contract between layers (SPEC §7, STYLE §1, §3): each descriptor has its own file with
//!
//! 1. a `#[repr(C)]` `zerocopy` struct of little-endian integers and byte arrays (alignment 1,
//!    no padding) whose size and every field offset are statically asserted, plus a `field`
//!    module of byte offsets matching the SPEC table — the **raw view**, which only reads and
//!    writes fields and tolerates any value (for pretty-printing);
//! 2. a **validated representation** (`…Repr`) holding real enums, flags, ranks and decoded
//!    parameters. `parse` checks every semantic rule of SPEC §7 and recomputes every derived
//!    field; `emit` cannot fail.
//!
//! The same structs are used verbatim by the host codec (`crate::ev74`) and the firmware
//! decoder. Nothing here reads past a buffer: untrusted bytes are cast with
//! `zerocopy::FromBytes::ref_from_bytes` and the code denies indexing and unchecked
//! arithmetic.

pub mod casttess;
pub mod quant;

pub use casttess::{CastTessDescriptorV1, CastTessFlags, CastTessRepr};
pub use quant::{QuantDescriptorV1, QuantFlags, QuantRepr};
