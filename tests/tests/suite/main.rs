//! The cross-crate qualification tests of simak: one test binary, one module per subject.
//! The oracle, the test data, the edge-value profiles and the fixed-seed generator they
//! share are the `simak-tests` library (`tests/src/lib.rs`).

mod admission;
mod broke_others;
mod exhaustive16;
mod fp32;
mod layouts;
mod peer;
