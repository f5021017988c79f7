//! `simak qualify`: a shim kept for one release. The qualification programme moved to its
//! own binary, `simak-qualify` (the `qualify/` package, run by `cargo xtask qualify`), so
//! that this tool no longer links the test fixtures of `simak-tests`; its five flag-switched
//! modes became subcommands there. The shim translates the old flags into a subcommand
//! ([`translate`]) and runs that binary: the one beside this executable, else through
//! `cargo run --release -p simak-qualify` in the workspace this executable was built from.
//! It does not link the programme, and it exits as the programme does.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use clap::Args;

use crate::error::CliError;
use crate::report::{self, Context};

/// Qualify the kernels (moved: this runs `simak-qualify`, whose subcommands `measure`,
/// `list`, `compare`, `merge` and `correctness` replace the flags below; see
/// `simak-qualify --help` and docs/qualification.md).
#[derive(Debug, Args)]
#[command(
    disable_help_flag = true,
    after_help = "The old flags map to subcommands: --compare BASE CAND to `compare`, --merge \
                  to `merge`, --correctness-only to `correctness`, --list to `list`, anything \
                  else to `measure`; the other arguments pass through unchanged. This shim \
                  goes away in the next release: use `simak-qualify` or `cargo xtask qualify`."
)]
pub struct QualifyArgs {
    /// The arguments of the old `simak qualify` (`--list`, `--compare BASE CAND`, `--merge
    /// PART...`, `--correctness-only`, `--filter`, `--reps`, …).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<OsString>,
}

/// The mode flags of the old `simak qualify` and their subcommands, in precedence order
/// (the old flags conflicted, except `--list` with `--correctness-only`).
const MODES: [(&str, &str); 4] = [
    ("--compare", "compare"),
    ("--merge", "merge"),
    ("--correctness-only", "correctness"),
    ("--list", "list"),
];

/// The `simak-qualify` arguments for the old `simak qualify` arguments `old`: the
/// subcommand of the first mode flag present (`measure` without one) followed by the other
/// arguments in their order; `--list` stays with `--correctness-only` (`correctness
/// --list`). A lone `--help` or `-h` asks for the programme's own help.
pub fn translate(old: &[OsString]) -> Vec<OsString> {
    if let [only] = old
        && (only == "--help" || only == "-h")
    {
        return vec![only.clone()];
    }
    let has = |flag: &str| old.iter().any(|a| a == flag);
    let (flag, subcommand) = MODES
        .into_iter()
        .find(|(flag, _)| has(flag))
        .unwrap_or(("", "measure"));
    let mut new = vec![OsString::from(subcommand)];
    new.extend(
        old.iter()
            .filter(|a| flag.is_empty() || *a != flag)
            .cloned(),
    );
    new
}

/// The `simak-qualify` executable beside `exe`, if there is one.
fn beside(exe: &Path) -> Option<PathBuf> {
    let bin = exe
        .parent()?
        .join(format!("simak-qualify{}", std::env::consts::EXE_SUFFIX));
    bin.is_file().then_some(bin)
}

/// The command that runs `simak-qualify`: the binary beside this one, else cargo on the
/// workspace this binary was built from.
fn programme() -> Result<Command, CliError> {
    if let Some(bin) = std::env::current_exe().ok().as_deref().and_then(beside) {
        return Ok(Command::new(bin));
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let manifest = workspace.join("Cargo.toml");
    if !workspace.join("qualify").join("Cargo.toml").is_file() {
        return Err(CliError::Input(
            "qualify: `simak qualify` moved to the `simak-qualify` binary, which is not beside \
             this executable and cannot be built here (no simak workspace); build it with \
             `cargo build --release -p simak-qualify` or run `cargo xtask qualify`"
                .to_owned(),
        ));
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["run", "--quiet", "--release", "--manifest-path"])
        .arg(manifest)
        .args(["-p", "simak-qualify", "--"]);
    Ok(command)
}

/// Runs `simak qualify` through `simak-qualify` and exits with its status; returns only
/// when it succeeded.
///
/// # Errors
///
/// Bad input (exit 2) when the programme can be neither found nor built; internal (exit 1)
/// when it cannot be started.
pub fn run(args: QualifyArgs, ctx: &Context) -> Result<(), CliError> {
    let mut new = translate(&args.args);
    // The global flags, unless given after `qualify` (then they are in `args` already).
    for (on, flag) in [(ctx.quiet, "-q"), (ctx.json, "--json")] {
        let given = args
            .args
            .iter()
            .any(|a| a == flag || (flag == "-q" && a == "--quiet"));
        if on && !given {
            new.push(OsString::from(flag));
        }
    }
    let quiet = ctx.quiet || args.args.iter().any(|a| a == "-q" || a == "--quiet");
    if !quiet {
        report::emit_stderr(
            "simak: note: `simak qualify` is now `simak-qualify` (cargo xtask qualify); this \
             shim goes away in the next release",
        );
    }
    let mut command = programme()?;
    let status = command
        .args(&new)
        .status()
        .map_err(|e| CliError::Internal(anyhow::anyhow!("qualify: cannot run {command:?}: {e}")))?;
    match status.code() {
        Some(0) => Ok(()),
        // The programme printed its report and its error line already.
        Some(code) => std::process::exit(code),
        None => Err(CliError::Internal(anyhow::anyhow!(
            "qualify: {:?} was killed ({status})",
            command.get_program()
        ))),
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn tr(old: &[&str]) -> Vec<String> {
        let old: Vec<OsString> = old.iter().map(OsString::from).collect();
        translate(&old)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    #[test]
    fn the_old_flags_become_subcommands() {
        assert_eq!(tr(&["--list"]), ["list"]);
        assert_eq!(
            tr(&["--list", "--json", "--filter", "quant/"]),
            ["list", "--json", "--filter", "quant/"]
        );
        assert_eq!(
            tr(&["--correctness-only", "--list", "--json"]),
            ["correctness", "--list", "--json"]
        );
        assert_eq!(
            tr(&["-q", "--correctness-only", "--filter", "x"]),
            ["correctness", "-q", "--filter", "x"]
        );
        assert_eq!(
            tr(&["--compare", "a.json", "b.json", "--threshold", "1.1"]),
            ["compare", "a.json", "b.json", "--threshold", "1.1"]
        );
        assert_eq!(
            tr(&["-q", "--merge", "p1.json", "p2.json", "--output", "m.json"]),
            ["merge", "-q", "p1.json", "p2.json", "--output", "m.json"]
        );
        assert_eq!(
            tr(&[
                "-q", "--chunk", "2/8", "--output", "t/b.json", "--reps", "5"
            ]),
            [
                "measure", "-q", "--chunk", "2/8", "--output", "t/b.json", "--reps", "5"
            ]
        );
        assert_eq!(tr(&[]), ["measure"]);
        assert_eq!(tr(&["--help"]), ["--help"]);
    }

    #[test]
    fn the_programme_is_found_beside_the_executable() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("simak");
        assert_eq!(beside(&exe), None);
        let bin = dir
            .path()
            .join(format!("simak-qualify{}", std::env::consts::EXE_SUFFIX));
        std::fs::write(&bin, b"").unwrap();
        assert_eq!(beside(&exe), Some(bin));
    }
}
