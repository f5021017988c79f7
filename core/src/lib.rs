//! simak-core: the `no_std`, allocation-free heart of simak.
//!
//! This crate holds everything both backends share (SPEC §1):
//!
//! - [`dtype`]: the element types `F32`, `BF16`, `F16`, `I8` (SPEC §2);
//! - [`tensor`]: const-generic [`TensorSpec`] (rank ≤ 6), byte strides, and admission into
//!   the normalized [`View`] (spans, nonoverlap proof);
//! - [`layout`]: the `MlaTiled` output layout of SPEC §5 (admission, capacity, offsets,
//!   untile);
//! - [`ops`]: typed requests and checked plans per operation (SPEC §6);
//! - [`arith`]: the exact integer Quant arithmetic of SPEC §3 and the BF16 conversions of
//!   SPEC §4, independent of the FP environment, specialized per dtype × rounding mode;
//! - [`wire`] and [`ev74`]: the EV74 descriptors (SPEC §7), the host codec
//!   (check, encode, bind) and the device-side decoder, one struct definition for both;
//! - [`state`]: the sealed typestate markers `Unchecked → Checked → Encoded → Bound`.
//!
//! # Cargo features
//!
//! | feature | effect |
//! | --- | --- |
//! | `defmt` | derives `defmt::Format` on errors and domain types, for firmware logging |
//!
//! The crate never detects CPU features and never touches the FP environment: every
//! computation here is integer code.
#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod arith;
pub mod dtype;
pub mod error;
pub mod ev74;
pub mod layout;
pub mod ops;
pub mod state;
pub mod tensor;
pub mod wire;

pub use dtype::DType;
pub use error::{AdmissionError, Port};
pub use tensor::{DynSpec, Layout, MAX_RANK, TensorSpec, View};
