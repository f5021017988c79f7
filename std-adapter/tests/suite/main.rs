//! The integration tests of `simak` (the std adapter): one test binary, one module per
//! subject. `no_alloc` (its own global allocator) and `miri_subset` (what Miri runs) are
//! separate binaries beside it.
//!
//! Shared helpers: [`support`] (the Runtime's bind-and-submit step) and [`tess_common`]
//! (the independent layout and conversion oracles of the tiled tests); the f64 Quant
//! oracle, test data and the fixed-seed generator are in the `simak-tests` crate.

mod support;
mod tess_common;

mod coalesce;
mod dequant_exact;
mod detess_blocks;
mod detess_cases;
mod detess_oracle;
mod dispatch_table;
mod ev74_casttess;
mod ev74_casttess_device;
mod ev74_casttess_runtime;
mod ev74_cost;
mod ev74_detess;
mod ev74_differential;
mod ev74_dma;
mod ev74_entries;
mod ev74_exhaustive;
mod ev74_faults;
mod ev74_oom;
mod ev74_partition;
mod ev74_preproc;
mod ev74_rejection;
mod ev74_relocation;
mod ev74_runtime;
mod ev74_tess_gathers;
mod ev74_tess_paths;
mod ev74_transpose;
mod fp_routes;
mod fuzz_regressions;
mod levels;
#[cfg(feature = "model")]
mod model;
mod preproc;
mod quanttess_exact;
mod raw_entry;
mod routes;
mod scalar_only;
mod send_sync;
mod short_runs;
mod tess_convert;
mod tess_golden;
mod tess_oracle;
mod tess_quant;
mod tess_split;
mod tess_stream;
mod threaded;
