//! Helpers shared by the EV74 tests: the Runtime's bind-and-submit step, and the staging
//! and nothing-written check of the device-side rejection suites.
#![allow(dead_code)]

use std::time::Duration;

use simak::ev74::runtime::{Completion, DeviceBuffer, Executor, RuntimeError};
use simak::ev74::sim::SimDevice;
use simak::ev74::{self, DevicePlan, DeviceRegion, NativeEntry, Packet};
use simak::state::Encoded;
use simak_ev74_fw::{Command, Firmware, FwError, Ieee, Report};

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

/// The byte the output region is filled with before a dispatch that must write nothing.
pub const PATTERN: u8 = 0xa5;

/// A bound packet of entry `E` and its input, output and descriptor regions in a fresh
/// simulated device (4 workers), for the device-side rejection suites.
pub struct Staged<E: NativeEntry> {
    /// The simulated device.
    pub device: SimDevice,
    /// Input region address.
    pub input: u32,
    /// Output region address (filled with [`PATTERN`]).
    pub output: u32,
    /// Descriptor region address (the packet is not yet written there).
    pub descriptor: u32,
    /// The valid bound packet.
    pub packet: E::Bytes,
    /// Output region length in bytes.
    pub out_len: usize,
}

/// Stages `plan` with `input` as the input bytes and an output region of `out_len` bytes.
pub fn stage<E: NativeEntry>(plan: &DevicePlan<E>, input: &[u8], out_len: usize) -> Staged<E> {
    let mut device = SimDevice::new(4);
    let mem = &mut device.memory;
    let in_addr = mem.allocate(input.len() as u64).unwrap();
    let out_addr = mem.allocate(out_len as u64).unwrap();
    let descriptor = mem.allocate(E::DESCRIPTOR_SIZE as u64).unwrap();
    mem.host_write(in_addr, input).unwrap();
    mem.host_write(out_addr, &vec![PATTERN; out_len]).unwrap();
    let packet = ev74::encode(
        plan,
        DeviceRegion::new(in_addr, input.len() as u64),
        DeviceRegion::new(out_addr, out_len as u64),
    )
    .unwrap();
    Staged {
        device,
        input: in_addr,
        output: out_addr,
        descriptor,
        packet: *packet.as_bytes(),
        out_len,
    }
}

/// Writes `packet` into the descriptor region of `s`, dispatches it to `fw` with a command
/// for entry `E` edited by `command`, and checks that it was rejected before anything was
/// written or moved: no byte written, no DMA, no traffic on the input or output region,
/// the output still [`PATTERN`]. Returns the error.
pub fn rejected<E: NativeEntry>(
    mut s: Staged<E>,
    packet: &[u8],
    command: impl FnOnce(&mut Command),
    fw: Firmware<Ieee>,
) -> FwError {
    s.device.memory.host_write(s.descriptor, packet).unwrap();
    s.device.memory.reset_stats();
    let mut cmd = Command::of::<E>(s.descriptor);
    command(&mut cmd);
    let err = fw.dispatch(&mut s.device, &cmd).expect_err("rejected");
    let stats = s.device.memory.stats();
    assert_eq!(stats.bytes_written(), 0, "{err}: bytes written");
    assert_eq!(stats.dma_bytes_in, 0, "{err}: dma before decode");
    assert_eq!(stats.commands, 0);
    for region in [s.input, s.output] {
        assert_eq!(s.device.memory.region_traffic(region).unwrap(), (0, 0));
    }
    let mut out = vec![0u8; s.out_len];
    s.device.memory.host_read(s.output, &mut out).unwrap();
    assert!(out.iter().all(|&b| b == PATTERN), "{err}: output changed");
    err
}

/// Overwrites `bytes[offset..]` with `value`.
pub fn put(bytes: &mut [u8], offset: usize, value: &[u8]) {
    bytes[offset..offset + value.len()].copy_from_slice(value);
}

/// Inside an `impl Transport for T`, the listed methods forwarded to `self.$inner`, so a
/// test transport writes only the methods it changes:
/// `forward!(inner: capabilities, allocate, read);`.
macro_rules! forward {
    ($inner:tt: $($method:ident),+ $(,)?) => {
        $(forward!(@one $inner $method);)+
    };
    (@one $inner:tt capabilities) => {
        fn capabilities(
            &self,
        ) -> Result<Vec<simak_ev74_fw::Capability>, simak::ev74::runtime::TransportError> {
            self.$inner.capabilities()
        }
    };
    (@one $inner:tt allocate) => {
        fn allocate(&self, len: u64) -> Result<u32, simak::ev74::runtime::TransportError> {
            self.$inner.allocate(len)
        }
    };
    (@one $inner:tt free) => {
        fn free(&self, address: u32) {
            self.$inner.free(address)
        }
    };
    (@one $inner:tt read) => {
        fn read(
            &self,
            address: u32,
            out: &mut [u8],
        ) -> Result<(), simak::ev74::runtime::TransportError> {
            self.$inner.read(address, out)
        }
    };
    (@one $inner:tt write) => {
        fn write(&self, address: u32, data: &[u8]) -> Result<(), simak::ev74::runtime::TransportError> {
            self.$inner.write(address, data)
        }
    };
    (@one $inner:tt abort) => {
        fn abort(&self) {
            self.$inner.abort()
        }
    };
    (@one $inner:tt wait_idle) => {
        fn wait_idle(&self, timeout: std::time::Duration) -> bool {
            self.$inner.wait_idle(timeout)
        }
    };
}

pub(crate) use forward;
