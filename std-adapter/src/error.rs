//! [`Error`]: one type every public error of simak converts into, carrying its stable
//! numeric code (`docs/errors.md`) and the original error, so that a caller's `?` chain needs
//! no `Box<dyn Error>`. The per-stage types stay for precise matching
//! ([`Error::source_error`]).
//!
//! Code ranges: 1–255 descriptor rules (a host rule with a descriptor twin takes the twin's
//! number), 0x100–0x1ff firmware status, 0x200 admission, 0x300 EV74 representability and
//! bind, 0x400 A65 execute and untile, 0x500 Runtime, transport and simulator memory, 0x600
//! the language bindings ([`BINDING_INVALID_ENUM`], [`BINDING_INTERNAL`],
//! [`BINDING_NULL_ARGUMENT`], [`BINDING_NEGATIVE_STRIDE`], [`BINDING_READONLY`],
//! [`BINDING_PLAN_STRIDES`], [`BINDING_NOT_CONTIGUOUS`], [`BINDING_OUT_OF_RANGE`],
//! [`BINDING_CAPACITY`]).
//!
//! ```
//! use simak::ops::quant::{check_inference, Params, Request};
//! use simak::{a65, DType, TensorSpec};
//!
//! fn run() -> Result<Vec<u8>, simak::Error> {
//!     let plan = check_inference(&Request {
//!         input: TensorSpec::contiguous([2], DType::F32),
//!         output: TensorSpec::contiguous([2], DType::I8),
//!         params: Params::new(-1.0), // not > 0
//!     })?;
//!     let mut out = vec![0u8; 2];
//!     a65::quant::execute(&a65::quant::prepare(&plan), &[0u8; 8], &mut out)?;
//!     Ok(out)
//! }
//! let e = run().unwrap_err();
//! assert_eq!(e.code(), 14); // the descriptor twin: MultiplierNotPositive
//! assert_eq!(e.to_string(), "multiplier 0xbf800000 is not > 0");
//! ```

use std::fmt;

pub use simak_core::error::{AdmissionError, Port};
use simak_core::ev74::{BindError, RepresentError};
use simak_core::layout::UntileError;
use simak_core::wire::DecodeError;
use simak_ev74_fw::FwError;

use crate::a65::ExecuteError;
use crate::ev74::SimError;
use crate::ev74::runtime::{RuntimeError, TransportError};
use crate::ev74::sim::MemoryError;

/// Code of a binding-layer error: an enum value (dtype, rounding mode, channel mode) outside
/// its set, given as an integer or string through a language binding.
pub const BINDING_INVALID_ENUM: u32 = 0x601;
/// Code of a binding-layer error: a panic caught at the binding boundary (a simak bug).
pub const BINDING_INTERNAL: u32 = 0x602;
/// Code of a binding-layer error: a required pointer argument other than a port's data
/// (a plan handle, a tensor, the parameters, a layout, a packet or an out-pointer) is null.
/// A null data pointer of a nonempty port is `ExecuteError::NullPointer` (0x409, 0x40a).
pub const BINDING_NULL_ARGUMENT: u32 = 0x603;
/// Code of a binding-layer error: an array view with a negative stride (a reversed view,
/// such as NumPy's `x[::-1]`), which the contract's unsigned byte strides cannot express
/// (SPEC §2).
pub const BINDING_NEGATIVE_STRIDE: u32 = 0x604;
/// Code of a binding-layer error: an output buffer (`out=`) that is not writeable.
pub const BINDING_READONLY: u32 = 0x605;
/// Code of a binding-layer error: an array given to a plan's `execute` has the plan's
/// extents but other byte strides (a plan is made for one memory layout).
pub const BINDING_PLAN_STRIDES: u32 = 0x606;
/// Code of a binding-layer error: a byte buffer (a tiled `out=` or a tiled input) is not
/// C-contiguous.
pub const BINDING_NOT_CONTIGUOUS: u32 = 0x607;
/// Code of a binding-layer error: an integer argument outside its range, given through a
/// binding: a negative extent or stride, or an index (a coordinate or byte plane of
/// `Layout.offset_of`) that is negative or outside the layout.
pub const BINDING_OUT_OF_RANGE: u32 = 0x608;
/// Code of a binding-layer error: a caller's output buffer given with its length (the
/// packet of `simak_ev74_*_encode_relocatable_into`) is shorter than what would be written;
/// nothing is written.
pub const BINDING_CAPACITY: u32 = 0x609;

/// The original error behind an [`Error`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ErrorSource {
    /// Request admission (`check_inference`).
    Admission(AdmissionError),
    /// EV74 representability.
    Represent(RepresentError),
    /// EV74 binding.
    Bind(BindError),
    /// Descriptor decoding.
    Decode(DecodeError),
    /// The firmware's status.
    Firmware(FwError),
    /// A65 execution.
    Execute(ExecuteError),
    /// Reading a tiled buffer back.
    Untile(UntileError),
    /// The Runtime.
    Runtime(RuntimeError),
    /// A transport.
    Transport(TransportError),
    /// The simulator's memory.
    Memory(MemoryError),
    /// A one-call simulated run.
    Sim(SimError),
}

/// Any simak error: its stable code and the original error.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    code: u32,
    source: ErrorSource,
}

impl Error {
    /// The stable numeric code (`docs/errors.md`).
    pub const fn code(&self) -> u32 {
        self.code
    }

    /// The original error, for precise matching.
    pub const fn source_error(&self) -> &ErrorSource {
        &self.source
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            ErrorSource::Admission(e) => e.fmt(f),
            ErrorSource::Represent(e) => e.fmt(f),
            ErrorSource::Bind(e) => e.fmt(f),
            ErrorSource::Decode(e) => e.fmt(f),
            ErrorSource::Firmware(e) => e.fmt(f),
            ErrorSource::Execute(e) => e.fmt(f),
            ErrorSource::Untile(e) => e.fmt(f),
            ErrorSource::Runtime(e) => e.fmt(f),
            ErrorSource::Transport(e) => e.fmt(f),
            ErrorSource::Memory(e) => e.fmt(f),
            ErrorSource::Sim(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(match &self.source {
            ErrorSource::Admission(e) => e,
            ErrorSource::Represent(e) => e,
            ErrorSource::Bind(e) => e,
            ErrorSource::Decode(e) => e,
            ErrorSource::Firmware(e) => e,
            ErrorSource::Execute(e) => e,
            ErrorSource::Untile(e) => e,
            ErrorSource::Runtime(e) => e,
            ErrorSource::Transport(e) => e,
            ErrorSource::Memory(e) => e,
            ErrorSource::Sim(e) => e,
        })
    }
}

/// `From` for each stage's error: the code is the error's own `code()`.
macro_rules! from_stage {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        $(
            impl From<$ty> for Error {
                fn from(e: $ty) -> Error {
                    Error {
                        code: e.code(),
                        source: ErrorSource::$variant(e),
                    }
                }
            }
        )*
    };
}

from_stage!(
    Admission(AdmissionError),
    Represent(RepresentError),
    Bind(BindError),
    Decode(DecodeError),
    Firmware(FwError),
    Execute(ExecuteError),
    Untile(UntileError),
    Runtime(RuntimeError),
    Transport(TransportError),
    Memory(MemoryError),
    Sim(SimError),
);
