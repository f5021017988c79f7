//! EV74 Preproc from the host: the codec of `simak-core` for the Preproc v1 entry (SPEC §7,
//! §13; `check_inference`, `encode_relocatable`, `bind`, `encode`, `decode`) and a one-call
//! simulated run (`run_sim`, which infers the entry from the plan's op; the firmware's
//! kernel is `simak_ev74_fw::preproc`).

pub use simak_core::ev74::preproc::*;
pub use simak_core::wire::preproc::{
    CODES, FIELD_COUNT, MAGIC, OutputKind, PreprocDescriptorV1, PreprocFlags, PreprocRepr, SIZE,
    format_code, format_from_code,
};

pub use super::{SimError, SimOptions, SimRun, run_sim, run_sim_to_vec, run_sim_with};
