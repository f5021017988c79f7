//! EV74 Quant from the host: the codec of `simak-core` for the Quant v1 entry and a one-call
//! simulated run.
//!
//! ```
//! use simak::ev74::quant::run_sim;
//! use simak::ops::quant::{check_inference, Params, Request};
//! use simak::{DType, TensorSpec};
//!
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([4], DType::F32),
//!     output: TensorSpec::contiguous([4], DType::I8),
//!     params: Params::new(0.5).with_zero_point(3),
//! })?;
//! let input: Vec<u8> = [1.0f32, -7.0, 300.0, f32::NAN]
//!     .iter()
//!     .flat_map(|x| x.to_le_bytes())
//!     .collect();
//! let mut output = [0u8; 4];
//! let run = run_sim(&plan, &input, &mut output, 2)?;
//! assert_eq!(output.map(|b| b as i8), [3, -1, 127, 3]);
//! assert_eq!(run.input_bytes_read, 16);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub use simak_core::ev74::quant::*;
pub use simak_core::wire::quant::{CODES, FIELD_COUNT, QuantDescriptorV1, QuantFlags, QuantRepr};

pub use super::{SimError, SimOptions, SimRun, run_sim, run_sim_to_vec, run_sim_with};
