//! Helpers shared by the Runtime tests.
#![allow(dead_code)]

use std::time::Duration;

use simak::ev74::runtime::{Completion, DeviceBuffer, Executor, RuntimeError};
use simak::ev74::{self, DevicePlan, NativeEntry, Packet};
use simak::state::Encoded;
use simak_ev74_fw::Report;

/// Binds an encoded packet to two buffers and submits it, as a caller of the Runtime does
/// (the Runtime submits bound packets only).
pub trait SubmitEncoded {
    /// `bind(plan, packet, input.region(), output.region())`, then `submit`.
    fn submit_encoded<E: NativeEntry>(
        &self,
        plan: &DevicePlan<E>,
        packet: &Packet<E, Encoded>,
        input: &DeviceBuffer,
        output: &DeviceBuffer,
    ) -> Result<Completion, RuntimeError>;

    /// [`SubmitEncoded::submit_encoded`] then `wait(timeout)`.
    fn run_encoded<E: NativeEntry>(
        &self,
        plan: &DevicePlan<E>,
        packet: &Packet<E, Encoded>,
        input: &DeviceBuffer,
        output: &DeviceBuffer,
        timeout: Duration,
    ) -> Result<Option<Report>, RuntimeError> {
        self.submit_encoded(plan, packet, input, output)?
            .wait(timeout)
    }
}

impl SubmitEncoded for Executor {
    fn submit_encoded<E: NativeEntry>(
        &self,
        plan: &DevicePlan<E>,
        packet: &Packet<E, Encoded>,
        input: &DeviceBuffer,
        output: &DeviceBuffer,
    ) -> Result<Completion, RuntimeError> {
        let bound = ev74::bind(plan, packet, input.region(), output.region())?;
        self.submit(&bound, input, output)
    }
}
