//! A65 host-CPU execution.
//!
//! Contract (SPEC §6, §10): `prepare(&plan)` selects the numerical route once;
//! `execute(&prepared, input, output)` rechecks the borrowed byte slices (capacity,
//! alignment, address overflow, overlap) before any write, then runs synchronously with no
//! heap allocation.
//!
//! Every op is written once over the [`HostOp`] trait (implemented by the op markers of
//! `simak::ops`); [`execute`], [`split`], [`execute_threaded`] and [`execute_raw`] are
//! generic over it, and the per-op modules keep their names as thin aliases.

/// The seeds' one-call convenience for `a65::<op>`: `check_inference` (admission and
/// preparation together) for a const-generic request and `check_inference_dyn` for one of
/// run-time rank, each `prepare(&ops::<op>::check_inference…(request)?)`.
macro_rules! one_call {
    ($op:ident) => {
        /// Admission and preparation in one call:
        #[doc = concat!("`prepare(&simak::ops::", stringify!($op), "::check_inference(request)?)`.")]
        ///
        /// # Errors
        ///
        /// The admission error.
        pub fn check_inference<const R: usize>(
            request: &simak_core::ops::$op::Request<R>,
        ) -> Result<Prepared, simak_core::AdmissionError> {
            Ok(prepare(&simak_core::ops::$op::check_inference(request)?))
        }

        /// [`check_inference`] for a request of run-time rank (extents and strides as
        /// slices).
        ///
        /// # Errors
        ///
        /// The admission error.
        pub fn check_inference_dyn(
            request: &simak_core::ops::$op::DynRequest<'_>,
        ) -> Result<Prepared, simak_core::AdmissionError> {
            Ok(prepare(&simak_core::ops::$op::check_inference_dyn(
                request,
            )?))
        }
    };
}

/// The public names of an output-side op's module `a65::<op>` (SPEC §12), aliases of the
/// generic ones for the op marker `$marker` (titled `$title` in the docs): `Prepared`,
/// `Piece`, `prepare`, `prepare_at` and `execute`, the last documented by the attributes
/// given (which buffers it takes). Expects `Plan` in scope.
macro_rules! output_side_api {
    ($marker:ident, $title:literal, $(#[$execute:meta])*) => {
        #[doc = concat!("A ", $title, " plan prepared for the A65.")]
        pub type Prepared = super::Prepared<$marker>;

        #[doc = concat!("One piece of a split ", $title, " call ([`split`](super::split)): ")]
        /// a disjoint range of the output, along its slowest axis.
        pub type Piece<'a> = super::Piece<'a, $marker>;

        /// Prepares `plan` at the fastest level this CPU offers (a dequantizing op builds
        /// its table of every code here). Reads no tensor data.
        pub fn prepare(plan: &Plan) -> Prepared {
            Prepared::new(plan)
        }

        /// Prepares `plan` at a forced [`Level`](super::Level) (the same bytes at every
        /// level).
        ///
        /// # Errors
        ///
        /// [`LevelError::NotDetected`](super::LevelError::NotDetected);
        /// [`LevelError::NoKernel`](super::LevelError::NoKernel) at `x86_64-avx512vbmi`
        /// and `aarch64-neon-fp16`.
        pub fn prepare_at(
            plan: &Plan,
            level: super::Level,
        ) -> Result<Prepared, super::LevelError> {
            Prepared::at(plan, level)
        }

        $(#[$execute])*
        #[inline]
        pub fn execute(
            prepared: &Prepared,
            input: &[u8],
            output: &mut [u8],
        ) -> Result<(), super::ExecuteError> {
            super::execute(prepared, input, output)
        }
    };
}

mod arch;
pub mod casttess;
pub mod dequant;
pub mod detess;
pub mod detesscast;
pub mod detessdequant;
pub mod level;
mod op;
pub mod preproc;
pub mod quant;
pub mod quanttess;
mod raw;
mod tess;
mod untess;
mod walk;

pub use arch::SCALAR_ONLY;
#[doc(hidden)]
pub use arch::reference;
pub use level::{Level, LevelError, UnknownLevel};
#[doc(hidden)]
pub use op::execute_with_fp_control;
pub use op::{HostOp, Piece, Prepared, execute, execute_threaded, split};
pub use raw::execute_raw;

use core::fmt;

use simak_core::Port;

/// Why `execute` refused borrowed buffers. Nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecuteError {
    /// A buffer is shorter than the port's accessed span.
    Capacity {
        /// Port checked.
        port: Port,
        /// The accessed span in bytes.
        required: u64,
        /// The buffer length in bytes.
        found: u64,
    },
    /// The buffer address is not aligned to what the port requires.
    Misaligned {
        /// Port checked.
        port: Port,
        /// The buffer address.
        address: usize,
        /// Required alignment in bytes.
        align: usize,
    },
    /// The buffer address plus the accessed span overflows the address space.
    AddressOverflow {
        /// Port checked.
        port: Port,
    },
    /// The input and output accessed ranges overlap.
    Overlap,
    /// A raw-pointer entry (`execute_raw`, the C ABI) was given a null pointer for a
    /// nonempty port.
    NullPointer {
        /// Port checked.
        port: Port,
    },
    /// The calling thread's FP control register (MXCSR on x86-64, FPCR on AArch64) is not
    /// the default an FP route needs: round-to-nearest, no flush-to-zero, no
    /// denormals-are-zero, traps masked (SPEC §10). The register was not changed.
    FpEnvironment {
        /// The register value read.
        control: u64,
    },
}

impl fmt::Display for ExecuteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ExecuteError::Capacity {
                port,
                required,
                found,
            } => write!(
                f,
                "{port} buffer holds {found} bytes but the accessed span is {required} bytes"
            ),
            ExecuteError::Misaligned {
                port,
                address,
                align,
            } => write!(
                f,
                "{port} buffer address 0x{address:x} is not aligned to {align} bytes"
            ),
            ExecuteError::AddressOverflow { port } => {
                write!(f, "{port} address plus span overflows the address space")
            }
            ExecuteError::Overlap => f.write_str("input and output accessed ranges overlap"),
            ExecuteError::NullPointer { port } => write!(f, "{port} pointer is null"),
            ExecuteError::FpEnvironment { control } => write!(
                f,
                "FP control register 0x{control:x} is not round-to-nearest with gradual underflow and masked traps"
            ),
        }
    }
}

impl ExecuteError {
    /// The stable numeric code (`docs/errors.md`, 0x400..=0x40f).
    pub const fn code(&self) -> u32 {
        match *self {
            ExecuteError::Capacity {
                port: Port::Input, ..
            } => 0x401,
            ExecuteError::Capacity {
                port: Port::Output, ..
            } => 0x402,
            ExecuteError::Misaligned {
                port: Port::Input, ..
            } => 0x403,
            ExecuteError::Misaligned {
                port: Port::Output, ..
            } => 0x404,
            ExecuteError::AddressOverflow { port: Port::Input } => 0x405,
            ExecuteError::AddressOverflow { port: Port::Output } => 0x406,
            ExecuteError::Overlap => 0x407,
            ExecuteError::FpEnvironment { .. } => 0x408,
            ExecuteError::NullPointer { port: Port::Input } => 0x409,
            ExecuteError::NullPointer { port: Port::Output } => 0x40a,
        }
    }
}

impl std::error::Error for ExecuteError {}

/// What one port's buffer must provide (SPEC §6): the accessed span in bytes (the
/// capacity for a tiled output) and the address alignment in bytes ([`HostOp::needs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortNeed {
    /// Bytes from the buffer's start that the call accesses.
    pub span: u64,
    /// Required address alignment in bytes (a power of two).
    pub align: usize,
}

/// Checks both ports' buffers, given as address and length, before any write (SPEC §6):
/// capacity, alignment and address overflow of the input, then of the output, then that
/// the two accessed ranges are disjoint. The one implementation of these rules, for the
/// slice entries (`execute`) and the raw-pointer entries (`execute_raw`) alike.
#[inline]
pub(crate) fn check_ports_at(
    input: (usize, usize),
    output: (usize, usize),
    need_in: PortNeed,
    need_out: PortNeed,
) -> Result<(), ExecuteError> {
    let (in_lo, in_hi) = check_buffer(Port::Input, input.0, input.1, need_in)?;
    let (out_lo, out_hi) = check_buffer(Port::Output, output.0, output.1, need_out)?;
    if in_lo < out_hi && out_lo < in_hi {
        return Err(ExecuteError::Overlap);
    }
    Ok(())
}

/// Checks one port's buffer against its accessed span and alignment; returns its address
/// range.
#[inline]
fn check_buffer(
    port: Port,
    address: usize,
    len: usize,
    need: PortNeed,
) -> Result<(usize, usize), ExecuteError> {
    let PortNeed { span, align } = need;
    if (len as u64) < span {
        return Err(ExecuteError::Capacity {
            port,
            required: span,
            found: len as u64,
        });
    }
    if !address.is_multiple_of(align) {
        return Err(ExecuteError::Misaligned {
            port,
            address,
            align,
        });
    }
    let end = usize::try_from(span)
        .ok()
        .and_then(|s| address.checked_add(s))
        .ok_or(ExecuteError::AddressOverflow { port })?;
    Ok((address, end))
}
