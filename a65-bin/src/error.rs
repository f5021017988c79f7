//! CLI failures and their exit codes.
//!
//! Two classes (CLI conventions): bad input or usage exits 2, internal failures exit 1;
//! and `simak-qualify`'s own verdict (it shares these types): a failed gate or correctness
//! check exits 3.
//! Every message is a single line; the library's short lowercase Display strings are
//! wrapped with file and tensor context here, never in the library.

use std::fmt::Display;
use std::path::Path;
use std::process::ExitCode;

use crate::engine::EngineError;

/// Why a command failed.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// Bad input: an unreadable or malformed file, an unsupported dtype, a parameter outside
    /// its rule, an unknown tensor name, an output path equal to the input. Exit code 2.
    #[error("{0}")]
    Input(String),
    /// Something that should not happen with any input (or an I/O failure while writing).
    /// Exit code 1.
    #[error("internal error: {0:#}")]
    Internal(anyhow::Error),
    /// The output could not be written (disk full, I/O error); nothing was replaced.
    /// Exit code 1.
    #[error("{0}")]
    Write(String),
    /// A check the command exists to make failed: the `simak-qualify` gate found an ID
    /// slower than its threshold, or `correctness` found a mismatch. The summary was
    /// printed in full before. Exit code 3.
    #[error("{0}")]
    Failed(String),
}

impl From<anyhow::Error> for CliError {
    fn from(error: anyhow::Error) -> Self {
        CliError::Internal(error)
    }
}

impl CliError {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Input(_) => ExitCode::from(2),
            CliError::Internal(_) | CliError::Write(_) => ExitCode::from(1),
            CliError::Failed(_) => ExitCode::from(3),
        }
    }

    /// The one line printed on stderr (without the trailing newline).
    pub fn line(&self) -> String {
        one_line(&format!("simak: error: {self}"))
    }
}

/// Bad input about a file as a whole: `<file>: <rule>`.
pub fn bad_file(file: &Path, rule: impl Display) -> CliError {
    CliError::Input(format!("{}: {rule}", file.display()))
}

/// Bad input about one tensor of a file: `<file>: tensor "<name>": <rule>`.
pub fn bad_tensor(file: &Path, tensor: &str, rule: impl Display) -> CliError {
    CliError::Input(format!("{}: tensor {tensor:?}: {rule}", file.display()))
}

/// What a failure about one input tensor names: its file, and the tensor when the file
/// holds several (safetensors).
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The input file.
    pub file: &'a Path,
    /// The tensor's name in a file of several tensors; `None` names the file alone.
    pub tensor: Option<&'a str>,
    /// What internal failures call the tensor (its name, the file name, or `tensor`).
    pub label: &'a str,
}

impl Subject<'_> {
    /// Bad input about the tensor ([`bad_tensor`], or [`bad_file`] for a file of one).
    pub fn bad(&self, rule: &dyn Display) -> CliError {
        match self.tensor {
            Some(name) => bad_tensor(self.file, name, rule),
            None => bad_file(self.file, rule),
        }
    }

    /// A library failure on the tensor: internal when the library refused the buffers this
    /// tool built or the simulated device failed, else bad input.
    pub fn engine(&self, e: EngineError) -> CliError {
        match e {
            EngineError::Execute(_) | EngineError::Sim(_) => CliError::Internal(anyhow::anyhow!(
                "{}: {}: {e}",
                self.file.display(),
                self.label
            )),
            other => self.bad(&other),
        }
    }
}

/// Collapses any line breaks so that an error is exactly one line.
fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim_end)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn messages_are_one_line_with_context() {
        let e = bad_tensor(Path::new("/x/a.safetensors"), "foo", "dtype I64 is\nbad");
        assert_eq!(
            e.line(),
            "simak: error: /x/a.safetensors: tensor \"foo\": dtype I64 is bad"
        );
        assert_eq!(e.exit_code(), ExitCode::from(2));
        let i = CliError::from(anyhow::anyhow!("boom"));
        assert_eq!(i.exit_code(), ExitCode::from(1));
        assert_eq!(i.line(), "simak: error: internal error: boom");
    }
}
