//! The integration tests of the `simak` CLI: one test binary, one module per subject. They
//! run the built binary (`CARGO_BIN_EXE_simak`) on the repository's own data in temporary
//! folders; [`common`] holds the shared helpers (running the binary, the photo as `.npy`,
//! temporary files).

mod common;

mod bench;
mod bounded_reads;
mod cli;
mod detess;
mod docs;
mod ev74;
mod fuzz_regressions;
mod fuzz_seeds;
mod hostile;
mod jpeg;
mod messages;
mod model;
mod oom;
mod output_order;
mod outputs;
mod preproc;
mod tess;
