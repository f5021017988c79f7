//! EV74 Detess, DetessCast and DetessDequant from the host: the codec of `simak-core` for
//! the three Detess-family entries (SPEC §7, §12; `check_inference`, `encode_relocatable`,
//! `bind`, `encode`, `decode`) and a one-call simulated run (`run_sim`, which infers the
//! entry from the plan's op: one head per call).

pub use simak_core::ev74::detess::*;
pub use simak_core::wire::detess::{
    CAST_CODES, Conversion, DEQUANT_CODES, DETESS_CODES, DetessCastRaw, DetessDequantRaw,
    DetessDescriptorV1, DetessFlags, DetessRaw, DetessRepr, FIELD_COUNT, SIZE,
};

pub use super::{SimError, SimOptions, SimRun, run_sim, run_sim_to_vec, run_sim_with};
