//! The integration tests of `simak-qualify`: one test binary, one module per subject. They
//! run the built binary (`CARGO_BIN_EXE_simak-qualify`) in temporary folders; [`common`]
//! holds the shared helpers.

mod common;

mod qualify;
mod readme;
