//! EV74 Detess, DetessCast and DetessDequant from the host: the codec of `simak-core` for
//! the three Detess-family entries (SPEC §7, §12; `check_inference`, `encode_relocatable`,
//! `bind`, `encode`, `decode`).
//!
//! The firmware of this release has no device kernel for them: it does not advertise
//! them, a Runtime that needs one fails closed at its capability probe, and there is no
//! `run_sim` here yet.

pub use simak_core::ev74::detess::*;
pub use simak_core::wire::detess::{
    CAST_CODES, Conversion, DEQUANT_CODES, DETESS_CODES, DetessCastRaw, DetessDequantRaw,
    DetessDescriptorV1, DetessFlags, DetessRaw, DetessRepr, FIELD_COUNT, SIZE,
};
