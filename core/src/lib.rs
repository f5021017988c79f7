//! simak-core: the `no_std`, allocation-free heart of simak.
//!
//! This crate holds everything both backends share (SPEC §1):
//!
//! - [`dtype`]: the element types `F32`, `BF16`, `F16`, `I8` (SPEC §2);
//! - [`tensor`]: const-generic [`TensorSpec`] (rank ≤ 6), byte strides, and admission into
//!   the normalized [`View`] (spans, nonoverlap proof); [`View::offsets`], the strided
//!   element walk every layer uses;
//! - [`layout`]: the `MlaTiled` output layout of SPEC §5 (admission, capacity, offsets,
//!   tile classes and the tile walk, untile);
//! - [`ops`]: the sealed operation trait [`ops::Op`] with its marker types
//!   ([`ops::Quant`], [`ops::CastTess`], [`ops::QuantTess`]), and per operation its typed
//!   request and checked plan ([`ops::OpPlan`] names the plan's op) (SPEC §6);
//! - [`arith`]: the exact integer Quant arithmetic of SPEC §3 and the BF16 conversions of
//!   SPEC §4, independent of the FP environment, specialized per dtype × rounding mode;
//! - [`wire`] and [`ev74`]: the EV74 descriptors (SPEC §7), the host codec
//!   (check, encode, bind) and the device-side decoder, one struct definition for both;
//! - [`state`]: the sealed packet states [`state::Encoded`] and [`state::Bound`] of
//!   `ev74::Packet`; the earlier stages of the lifecycle (SPEC §6: request, checked plan,
//!   device plan) are types of their own, not markers.
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
