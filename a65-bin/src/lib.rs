//! The modules of the `simak` command-line tool, as a library so that the fuzz targets
//! (`fuzz/fuzz_targets/read_*.rs`) can call the file readers directly. Each command module
//! owns its flags (`clap::Args`) and returns a summary with its staged outputs;
//! [`report::finish`] publishes and prints them. The binary (`src/main.rs`) is the
//! top-level parser and the dispatch on top of these modules. This library is an internal
//! seam with no stable API, hence not documented (`doc = false` in `Cargo.toml`).
#![forbid(unsafe_code)]

pub mod bench;
pub mod bench_detess;
pub mod bench_preproc;
pub mod bench_tess;
pub mod demo;
pub mod detess;
pub mod engine;
pub mod error;
pub mod layout;
pub mod model;
pub mod output;
pub mod packet;
pub mod params;
pub mod preproc;
pub mod qualify;
pub mod quant;
pub mod read;
pub mod report;
pub mod tess;
pub mod untile;
