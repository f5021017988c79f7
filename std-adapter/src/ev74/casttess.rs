//! EV74 CastTess from the host: the codec of `simak-core` for the CastTess v1 entry and a
//! one-call simulated run (SPEC §5–§8).
//!
//! ```
//! use simak::ev74::casttess::run_sim;
//! use simak::layout::{Channels, MlaTiled};
//! use simak::ops::casttess::{check_inference, Request, TiledTensorSpec};
//! use simak::{DType, TensorSpec};
//!
//! // SPEC §5 example: shape [W=2, C=3], one tile of two pixels, 12 bytes + 4 padding.
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([2, 3], DType::F32),
//!     output: TiledTensorSpec::new(
//!         [2, 3],
//!         DType::BF16,
//!         MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 3], Channels::Compact),
//!     ),
//! })?;
//! let input: Vec<u8> = [1.0f32, 2.0, 3.0, -1.0, -2.0, -3.0]
//!     .iter()
//!     .flat_map(|x| x.to_le_bytes())
//!     .collect();
//! let mut output = [0xee; 16];
//! let run = run_sim(&plan, &input, &mut output, 2)?;
//! assert_eq!(
//!     output,
//!     [0x80, 0x00, 0x40, 0x3f, 0x40, 0x40, 0x80, 0x00, 0x40, 0xbf, 0xc0, 0xc0, 0, 0, 0, 0]
//! );
//! assert_eq!(run.input_bytes_read, 24);
//! assert_eq!(run.output_bytes_written, 16);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use simak_core::ev74::casttess::*;
pub use simak_core::wire::casttess::{
    CODES, CastTessDescriptorV1, CastTessFlags, CastTessRepr, FIELD_COUNT,
};

pub use super::{SimError, SimOptions, SimRun, run_sim, run_sim_to_vec, run_sim_with};
