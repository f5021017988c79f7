//! `cargo xtask qualify`: the qualification programme `simak-qualify` (the `qualify/`
//! package) and its live gate.
//!
//! `cargo xtask qualify ARGS` builds `simak-qualify` in release mode and runs it with ARGS
//! in the current folder (`measure`, `list`, `compare`, `merge`, `correctness`; see
//! `simak-qualify --help`); its exit status is the task's.
//!
//! `cargo xtask qualify --baseline REV` is the live gate between the working tree (the
//! candidate) and the commit REV (the baseline):
//!
//! 1. REV is checked out, detached, in a git worktree under `target/qualify/baseline/`
//!    (reused by later runs of the same commit) and built in release mode with its own
//!    target folder, `target/qualify/baseline-target` (shared by every baseline, so that a
//!    rebuild is incremental); the candidate is built in release mode as usual. Each tree
//!    is built and run as its commit has the programme ([`Programme`]): `simak-qualify`
//!    with subcommands, or, in commits from before it moved out of the CLI, `simak qualify`
//!    with the mode flags; so older baselines keep working.
//! 2. The selection is measured in `--chunks` parts (by default one per ID of the
//!    candidate's `list` with the same `--filter`), alternating the two builds per chunk
//!    (baseline first in odd chunks, candidate first in even ones), so that the paired
//!    samples of an ID are taken seconds apart at most and a slow phase of the machine
//!    falls on both; each build runs in its own tree, so its results file records its own
//!    commit. The parts go to `target/qualify/gate-<unix time>/`.
//! 3. The candidate merges each side's parts (`merge`) and applies the gate (`compare
//!    base.json cand.json`); its exit status is the task's.
//!
//! Arguments after `--` go to every measuring run (e.g. `--filter`, `--reps`, `--backend`).

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::flags::QualifyOptions;

/// Runs a command; an error names it.
fn run(command: &mut Command) -> Result<(), String> {
    let shown = format!("{command:?}");
    match command.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("{shown} failed ({s})")),
        Err(e) => Err(format!("cannot run {shown}: {e}")),
    }
}

/// A command's standard output, trimmed.
pub(crate) fn output(command: &mut Command) -> Result<String, String> {
    let shown = format!("{command:?}");
    let out = command
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{shown} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The target folder of the candidate build.
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from)
}

/// How a tree runs the qualification programme, by the layout of its commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Programme {
    /// `simak-qualify` (the `qualify/` package): one subcommand per mode.
    Binary,
    /// `simak qualify` of `simak-cli` with the mode flags (`--list`, `--merge`,
    /// `--compare`), in commits from before the programme moved out of the CLI.
    CliFlags,
}

impl Programme {
    /// The programme of the source tree at `tree`.
    pub(crate) fn of(tree: &Path) -> Programme {
        if tree.join("qualify").join("Cargo.toml").is_file() {
            Programme::Binary
        } else {
            Programme::CliFlags
        }
    }

    /// The package to build.
    pub(crate) fn package(self) -> &'static str {
        match self {
            Programme::Binary => "simak-qualify",
            Programme::CliFlags => "simak-cli",
        }
    }

    /// The executable's name in the target folder.
    pub(crate) fn binary(self) -> String {
        let name = match self {
            Programme::Binary => "simak-qualify",
            Programme::CliFlags => "simak",
        };
        format!("{name}{}", std::env::consts::EXE_SUFFIX)
    }

    /// The arguments that select `mode` (`measure`, `list`, `merge`, `compare` or `help`).
    pub(crate) fn mode(self, mode: &str) -> Vec<String> {
        let args: &[&str] = match (self, mode) {
            (Programme::Binary, "help") => &["--help"],
            (Programme::Binary, _) => &[mode],
            (Programme::CliFlags, "measure") => &["qualify"],
            (Programme::CliFlags, "help") => &["qualify", "--help"],
            (Programme::CliFlags, _) => return vec!["qualify".to_owned(), format!("--{mode}")],
        };
        args.iter().map(|a| (*a).to_owned()).collect()
    }
}

/// The arguments of chunk `index` of `count` writing `output`, for `programme`.
pub(crate) fn chunk_args(
    programme: Programme,
    index: u32,
    count: u32,
    output: &Path,
    extra: &[String],
) -> Vec<String> {
    let mut args = programme.mode("measure");
    args.extend([
        "-q".to_owned(),
        "--chunk".to_owned(),
        format!("{index}/{count}"),
        "--output".to_owned(),
        output.display().to_string(),
    ]);
    args.extend(extra.iter().cloned());
    args
}

/// The `--filter` arguments among the measuring arguments `extra` (what `list` takes).
pub(crate) fn filter_args(extra: &[String]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut args = extra.iter();
    while let Some(a) = args.next() {
        if a == "--filter" {
            kept.push(a.clone());
            kept.extend(args.next().cloned());
        } else if a.starts_with("--filter=") {
            kept.push(a.clone());
        }
    }
    kept
}

/// Which build runs first in chunk `index` (1-based): the baseline in odd chunks.
pub(crate) fn baseline_first(index: u32) -> bool {
    index % 2 == 1
}

fn gate(root: &Path, options: &QualifyOptions) -> Result<ExitCode, String> {
    let commit = output(
        Command::new("git")
            .args(["rev-parse", "--verify"])
            .arg(format!("{}^{{commit}}", options.baseline))
            .current_dir(root),
    )?;
    let qualify = root.join("target").join("qualify");
    let tree = qualify.join("baseline").join(&commit[..12]);
    if tree.exists() {
        let head = output(
            Command::new("git")
                .args(["rev-parse", "HEAD"])
                .current_dir(&tree),
        )?;
        if head != commit {
            return Err(format!(
                "{} holds {head}, not {commit}: remove it with `git worktree remove --force {}`",
                tree.display(),
                tree.display()
            ));
        }
    } else {
        std::fs::create_dir_all(qualify.join("baseline"))
            .map_err(|e| format!("cannot create {}: {e}", qualify.display()))?;
        run(Command::new("git")
            .args(["worktree", "add", "--detach"])
            .arg(&tree)
            .arg(&commit)
            .current_dir(root))?;
    }
    let baseline_target = qualify.join("baseline-target");
    let (base_prog, cand_prog) = (Programme::of(&tree), Programme::of(root));
    eprintln!(
        "xtask qualify: building the baseline {commit} in {}",
        tree.display()
    );
    run(Command::new(crate::cargo())
        .args(["build", "--release", "--quiet", "-p", base_prog.package()])
        .env("CARGO_TARGET_DIR", &baseline_target)
        .current_dir(&tree))?;
    eprintln!("xtask qualify: building the candidate (the working tree)");
    run(Command::new(crate::cargo())
        .args(["build", "--release", "--quiet", "-p", cand_prog.package()])
        .current_dir(root))?;
    let base_bin = baseline_target.join("release").join(base_prog.binary());
    let cand_bin = target_dir(root).join("release").join(cand_prog.binary());
    if output(Command::new(&base_bin).args(base_prog.mode("help"))).is_err() {
        return Err(format!(
            "the baseline {commit} has no `simak qualify`: pick a commit that has it"
        ));
    }
    let chunks = match options.chunks {
        Some(n) => n,
        None => {
            let list = output(
                Command::new(&cand_bin)
                    .args(cand_prog.mode("list"))
                    .args(filter_args(&options.passthrough))
                    .current_dir(root),
            )?;
            u32::try_from(list.lines().count().max(1)).unwrap_or(u32::MAX)
        }
    };
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let dir = qualify.join(format!("gate-{unix}"));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let rounds = options.rounds.max(1);
    // Every part in order taken (round by round); the chunks of a round hold distinct IDs,
    // so with rounds `merge --concat` pools each ID's samples of every round.
    let (mut base_parts, mut cand_parts) = (Vec::new(), Vec::new());
    for round in 1..=rounds {
        for index in 1..=chunks {
            // A single-round run keeps the names it always had.
            let name = |side: &str| {
                if rounds == 1 {
                    format!("{side}-{index}.json")
                } else {
                    format!("{side}-r{round}-{index}.json")
                }
            };
            let base = dir.join(name("base"));
            let cand = dir.join(name("cand"));
            let mut order = [
                ("baseline", base_prog, &base_bin, &tree, &base),
                (
                    "candidate",
                    cand_prog,
                    &cand_bin,
                    &root.to_path_buf(),
                    &cand,
                ),
            ];
            // Baseline first in odd chunks of odd rounds; the order flips per round.
            if baseline_first(index) != (round % 2 == 1) {
                order.reverse();
            }
            for (what, programme, bin, cwd, file) in order {
                if index == 1 || index % 50 == 0 || index == chunks {
                    eprintln!(
                        "xtask qualify: round {round}/{rounds}, chunk {index}/{chunks}: {what}"
                    );
                }
                run(Command::new(bin)
                    .args(chunk_args(
                        programme,
                        index,
                        chunks,
                        file,
                        &options.passthrough,
                    ))
                    .current_dir(cwd))?;
            }
            base_parts.push(base);
            cand_parts.push(cand);
        }
    }
    let (base, cand) = (dir.join("base.json"), dir.join("cand.json"));
    for (parts, merged) in [(&base_parts, &base), (&cand_parts, &cand)] {
        let mut command = Command::new(&cand_bin);
        command.args(cand_prog.mode("merge")).arg("-q");
        if rounds > 1 {
            command.arg("--concat");
        }
        run(command.args(parts.iter()).arg("--output").arg(merged))?;
    }
    eprintln!(
        "xtask qualify: results in {}; the gate (simak-qualify compare):",
        dir.display()
    );
    let mut compare = Command::new(&cand_bin);
    compare
        .args(cand_prog.mode("compare"))
        .arg(&base)
        .arg(&cand);
    if let Some(t) = &options.threshold {
        compare.args(["--threshold", t]);
    }
    let status = compare
        .status()
        .map_err(|e| format!("cannot run {}: {e}", cand_bin.display()))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(c) => ExitCode::from(c.clamp(1, 255) as u8),
        None => ExitCode::FAILURE,
    })
}

/// The command that builds `simak-qualify` in release mode and runs it with `args` in the
/// current folder.
pub(crate) fn programme_command(root: &Path, args: &[String]) -> Command {
    let mut command = Command::new(crate::cargo());
    command
        .args(["run", "--quiet", "--release", "--manifest-path"])
        .arg(root.join("Cargo.toml"))
        .args(["-p", "simak-qualify", "--"])
        .args(args);
    command
}

/// Runs `cargo xtask qualify ARGS` and forwards the programme's exit status.
pub(crate) fn run_programme(root: &Path, args: &[String]) -> ExitCode {
    match programme_command(root, args).status() {
        Ok(status) if status.success() => ExitCode::SUCCESS,
        Ok(status) => ExitCode::from(status.code().map_or(1, |c| c.clamp(1, 255) as u8)),
        Err(e) => {
            eprintln!("error: cannot run cargo: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `cargo xtask qualify --baseline REV`.
pub(crate) fn run_gate(root: &Path, options: &QualifyOptions) -> ExitCode {
    match gate(root, options) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: xtask qualify: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_alternate_and_pass_the_arguments_through() {
        assert!(baseline_first(1));
        assert!(!baseline_first(2));
        assert!(baseline_first(3));
        let args = chunk_args(
            Programme::CliFlags,
            2,
            8,
            Path::new("t/b.json"),
            &["--reps".to_owned(), "5".to_owned()],
        );
        assert_eq!(
            args.join(" "),
            "qualify -q --chunk 2/8 --output t/b.json --reps 5"
        );
        let args = chunk_args(
            Programme::Binary,
            2,
            8,
            Path::new("t/b.json"),
            &["--reps".to_owned(), "5".to_owned()],
        );
        assert_eq!(
            args.join(" "),
            "measure -q --chunk 2/8 --output t/b.json --reps 5"
        );
    }

    #[test]
    fn each_layout_gets_its_own_protocol() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        assert_eq!(Programme::of(&root), Programme::Binary);
        assert_eq!(
            Programme::of(Path::new(env!("CARGO_MANIFEST_DIR"))),
            Programme::CliFlags
        );
        assert_eq!(Programme::Binary.package(), "simak-qualify");
        assert_eq!(Programme::CliFlags.package(), "simak-cli");
        for (mode, binary, flags) in [
            ("list", "list", "qualify --list"),
            ("merge", "merge", "qualify --merge"),
            ("compare", "compare", "qualify --compare"),
            ("measure", "measure", "qualify"),
            ("help", "--help", "qualify --help"),
        ] {
            assert_eq!(Programme::Binary.mode(mode).join(" "), binary);
            assert_eq!(Programme::CliFlags.mode(mode).join(" "), flags);
        }
        let extra: Vec<String> = ["--reps", "5", "--filter", "quant/", "--backend", "a65"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        assert_eq!(filter_args(&extra), ["--filter", "quant/"]);
        assert_eq!(
            filter_args(&["--filter=x".to_owned()]),
            ["--filter=x".to_owned()]
        );
    }

    #[test]
    fn the_programme_runs_in_release_from_the_workspace() {
        let command = programme_command(Path::new("/r"), &["list".to_owned()]);
        let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy()).collect();
        assert_eq!(
            args.join(" "),
            "run --quiet --release --manifest-path /r/Cargo.toml -p simak-qualify -- list"
        );
    }
}
