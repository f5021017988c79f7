//! EV74 CastTess from the host: the codec of `simak-core` and a one-call simulated run
//! (SPEC §5–§8).
//!
//! ```
//! use simak::ev74::casttess::run_sim;
//! use simak::layout::{Channels, MlaTiled};
//! use simak::ops::casttess::{check_inference, Request};
//! use simak::{DType, TensorSpec};
//!
//! // SPEC §5 example: shape [W=2, C=3], one tile of two pixels, 12 bytes + 4 padding.
//! let plan = check_inference(&Request {
//!     input: TensorSpec::contiguous([2, 3], DType::F32),
//!     layout: MlaTiled::new([None, None, Some(0), Some(1)], [1, 1, 2, 3], Channels::Compact),
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

use simak_core::ops::casttess::Plan;
use simak_ev74_fw::Command;

pub use simak_core::ev74::casttess::{
    BindError, DecodeCode, DecodeError, DevicePlan, ENTRY, ENTRY_VERSION, MAX_SPAN, Packet, ROUTE,
    RepresentError, bind, check_inference, decode, encode, encode_relocatable,
};
pub use simak_core::wire::casttess::{
    CastTessDescriptorV1, CastTessFlags, CastTessRepr, FIELD_COUNT,
};
pub use simak_core::wire::quant::{Field, FieldValue};

pub use super::quant::{SimError, SimOptions, SimRun};

use super::DeviceRegion;
use super::quant::{Output, run_packet};

/// Runs `plan` on a fresh simulated EV74 with `workers` workers (1 to 4), the way the
/// Runtime would: `check_inference` → `encode` against device regions holding copies of
/// `input` and `output` → descriptor in device memory → firmware dispatch (CastTess v1,
/// route 0x30) → `output` copied back.
///
/// `input` holds the input port's storage from its first element (little-endian, at least
/// the accessed span in bytes); `output` the tiled buffer (at least the plan's capacity in
/// bytes; it is placed at a 16-byte aligned device address). Every byte of the first
/// `capacity` bytes is written, padding included; bytes past the capacity keep their
/// values. An empty plan runs nothing and writes nothing.
///
/// # Errors
///
/// [`SimError::Represent`] (a span beyond the 32-bit domain), [`SimError::Bind`] (e.g. an
/// output slice shorter than the capacity), [`SimError::Memory`] (also when the host cannot
/// hold the simulated memory), [`SimError::Firmware`].
pub fn run_sim(
    plan: &Plan,
    input: &[u8],
    output: &mut [u8],
    workers: usize,
) -> Result<SimRun, SimError> {
    run_sim_with(plan, input, output, &SimOptions::new(workers))
}

/// [`run_sim`] with explicit [`SimOptions`] (the output phase must keep 16-byte alignment;
/// `flush_to_zero` has no effect: CastTess is integer code).
///
/// # Errors
///
/// As [`run_sim`].
pub fn run_sim_with(
    plan: &Plan,
    input: &[u8],
    output: &mut [u8],
    options: &SimOptions,
) -> Result<SimRun, SimError> {
    let device_plan = check_inference(plan)?;
    if device_plan.is_empty() {
        return SimRun::nothing(output.len(), options.track_writes);
    }
    let (run, _) = run_packet(
        options,
        input,
        Output::Host(output),
        CastTessDescriptorV1::SIZE,
        Command::casttess_v1,
        |input: DeviceRegion, output: DeviceRegion| {
            Ok(encode(&device_plan, input, output)?.as_bytes().to_vec())
        },
    )?;
    Ok(run)
}
