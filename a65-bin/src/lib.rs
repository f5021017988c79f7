//! The modules of the `simak` command-line tool, as a library so that the fuzz targets
//! (`fuzz/fuzz_targets/read_*.rs`) can call the file readers directly. The binary
//! (`src/main.rs`) is the command-line parsing on top of these modules; this library is an
//! internal seam with no stable API, hence hidden from the docs.
#![forbid(unsafe_code)]

#[doc(hidden)]
pub mod bench;
#[doc(hidden)]
pub mod demo;
#[doc(hidden)]
pub mod engine;
#[doc(hidden)]
pub mod error;
#[doc(hidden)]
pub mod layout;
#[doc(hidden)]
pub mod output;
#[doc(hidden)]
pub mod packet;
#[doc(hidden)]
pub mod params;
#[doc(hidden)]
pub mod quant;
#[doc(hidden)]
pub mod read;
#[doc(hidden)]
pub mod report;
#[doc(hidden)]
pub mod tess;
#[doc(hidden)]
pub mod untile;
