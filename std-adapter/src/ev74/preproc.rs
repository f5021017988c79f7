//! EV74 Preproc from the host: the codec of `simak-core` for the Preproc v1 entry (SPEC §7,
//! §13; `check_inference`, `encode_relocatable`, `bind`, `encode`, `decode`). No firmware
//! implements the entry yet: a submission fails closed with the missing capability
//! (0x102), never falling back to the A65.

pub use simak_core::ev74::preproc::*;
pub use simak_core::wire::preproc::{
    CODES, FIELD_COUNT, MAGIC, OutputKind, PreprocDescriptorV1, PreprocFlags, PreprocRepr, SIZE,
    format_code, format_from_code,
};
