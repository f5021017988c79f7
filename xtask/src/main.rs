//! `cargo xtask`: simak's developer tasks.
//!
//! Run through the alias in `.cargo/config.toml` (`cargo xtask <subcommand>`). The arguments
//! are parsed into one [`flags::Command`] and handed to the matching module's `run`.

mod dist;
mod flags;
mod fresh;
mod fuzz;
mod miri;
mod neon_cost;
mod python;
mod qualify;
mod sweep;
mod test;
#[cfg(test)]
mod tidy;
mod time;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match flags::parse(&args) {
        Ok(flags::Command::Help) => {
            print!("{}", flags::USAGE);
            ExitCode::SUCCESS
        }
        Ok(flags::Command::Test(options)) => test::run(&project_root(), &options),
        Ok(flags::Command::TestHelp) => {
            print!("{}", test::help());
            ExitCode::SUCCESS
        }
        Ok(flags::Command::FreshClone) => fresh::run(&project_root()),
        Ok(flags::Command::Fuzz(options)) => fuzz::run(&project_root(), &options),
        Ok(flags::Command::Sweep(args)) => sweep::run(&project_root(), &args),
        Ok(flags::Command::Miri) => miri::run(&project_root()),
        Ok(flags::Command::Dist { target }) => dist::run(&project_root(), target.as_deref()),
        Ok(flags::Command::Capi) => dist::run_capi(&project_root()),
        Ok(flags::Command::Python) => python::run_python(&project_root()),
        Ok(flags::Command::Wheels) => python::run_wheels(&project_root()),
        Ok(flags::Command::Qualify(options)) => qualify::run_gate(&project_root(), &options),
        Ok(flags::Command::QualifyRun(args)) => qualify::run_programme(&project_root(), &args),
        Ok(flags::Command::NeonCost(options)) => neon_cost::run(&project_root(), &options),
        Err(message) => {
            eprintln!("error: {message}\n");
            eprint!("{}", flags::USAGE);
            ExitCode::from(2)
        }
    }
}

/// The workspace root: the parent of xtask's manifest directory.
pub(crate) fn project_root() -> PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest_dir
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or(manifest_dir)
}

/// The cargo to invoke: `$CARGO` (set by `cargo run`), else `cargo` from `PATH`.
pub(crate) fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}
