//! Command-line parsing: the arguments become one [`Command`].
//!
//! Hand-written on purpose: xtask has no dependencies so that it compiles in seconds.

/// The usage message printed by `cargo xtask help` and after a parse error.
pub(crate) const USAGE: &str = "\
Usage: cargo xtask <subcommand> [options]

Subcommands:
  test [--require-all]  run the repository checks: fmt, clippy, test, doc, no_std.
                        A step whose tool is missing (a rustup target or component,
                        a binary on PATH) is SKIPPED with an install hint;
                        --require-all turns every skip into a failure (used by CI).
  help                  print this message
";

/// One xtask invocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// `cargo xtask help`, `-h` or `--help`.
    Help,
    /// `cargo xtask test [--require-all]`.
    Test(TestOptions),
}

/// Options of `cargo xtask test`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TestOptions {
    /// Count a step skipped for a missing tool as a failure.
    pub(crate) require_all: bool,
}

/// Parses the arguments after `cargo xtask`.
///
/// # Errors
///
/// A message naming the missing or unknown subcommand or option.
pub(crate) fn parse(args: &[String]) -> Result<Command, String> {
    let Some((subcommand, rest)) = args.split_first() else {
        return Err("no subcommand given".to_owned());
    };
    match subcommand.as_str() {
        "help" | "-h" | "--help" => Ok(Command::Help),
        "test" => {
            let mut options = TestOptions::default();
            for arg in rest {
                match arg.as_str() {
                    "--require-all" => options.require_all = true,
                    other => return Err(format!("unknown option `{other}` for `test`")),
                }
            }
            Ok(Command::Test(options))
        }
        other => Err(format!("unknown subcommand `{other}`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_strs(args: &[&str]) -> Result<Command, String> {
        let args: Vec<String> = args.iter().map(|s| (*s).to_owned()).collect();
        parse(&args)
    }

    #[test]
    fn parses_subcommands() {
        assert_eq!(parse_strs(&["help"]), Ok(Command::Help));
        assert_eq!(parse_strs(&["--help"]), Ok(Command::Help));
        assert_eq!(
            parse_strs(&["test"]),
            Ok(Command::Test(TestOptions { require_all: false }))
        );
        assert_eq!(
            parse_strs(&["test", "--require-all"]),
            Ok(Command::Test(TestOptions { require_all: true }))
        );
    }

    #[test]
    fn rejects_unknown_input() {
        assert_eq!(parse_strs(&[]), Err("no subcommand given".to_owned()));
        assert_eq!(
            parse_strs(&["bench"]),
            Err("unknown subcommand `bench`".to_owned())
        );
        assert_eq!(
            parse_strs(&["test", "--all"]),
            Err("unknown option `--all` for `test`".to_owned())
        );
    }
}
