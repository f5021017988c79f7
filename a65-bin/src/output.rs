//! Atomic output: a temporary file in the output's folder, renamed over the target on
//! success. On any failure the temporary file is removed and the target is untouched.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::error::{CliError, bad_file};

/// Prefix of the temporary files this tool creates next to its outputs.
pub const TEMP_PREFIX: &str = ".simak-";

/// Whether `a` and `b` name the same existing file (canonical paths or, on Unix, the same
/// device and inode, which also catches hard links).
pub fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if ma.dev() == mb.dev() && ma.ino() == mb.ino() {
            return true;
        }
    }
    let _ = (ma, mb);
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(ca), Ok(cb)) => ca == cb,
        _ => false,
    }
}

/// The folder a path's file lives in (`.` for a bare file name).
fn folder_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Checks that `output` can be a file target: not a directory, folder exists.
///
/// # Errors
///
/// Bad input (exit 2) naming `output`.
pub fn check_target(output: &Path) -> Result<(), CliError> {
    if output.is_dir() {
        return Err(bad_file(output, "--output names a directory, not a file"));
    }
    let folder = folder_of(output);
    if !folder.is_dir() {
        return Err(bad_file(
            output,
            format!("--output folder {} does not exist", folder.display()),
        ));
    }
    Ok(())
}

/// Writes `output` atomically: `write` fills a temporary file in the same folder, which is
/// flushed, synced and renamed over `output`. An existing `output` keeps its permissions;
/// a new one gets `0666` less the umask.
///
/// # Errors
///
/// Bad input (exit 2) when the temporary file cannot be created in the output's folder;
/// internal (exit 1) when writing or renaming fails.
pub fn write_atomic(
    output: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<(), CliError> {
    stage(output, write)?.commit()
}

/// Writes several outputs, each atomically, as one unit: every file is first written in
/// full to its own temporary file (any failure removes them all and leaves every target
/// untouched), then the temporary files are renamed over their targets in order.
///
/// # Errors
///
/// As [`write_atomic`].
pub fn write_atomic_all(staged: Vec<Staged>) -> Result<(), CliError> {
    for file in staged {
        file.commit()?;
    }
    Ok(())
}

/// A fully written and synced temporary file, not yet renamed over its target. Dropping
/// it removes the temporary file.
#[derive(Debug)]
pub struct Staged {
    temp: tempfile::NamedTempFile,
    output: PathBuf,
}

impl Staged {
    /// Renames the temporary file over the target.
    ///
    /// # Errors
    ///
    /// Internal (exit 1) when the rename fails.
    pub fn commit(self) -> Result<(), CliError> {
        let output = self.output;
        self.temp
            .persist(&output)
            .map_err(|e| e.error)
            .with_context(|| format!("renaming the temporary file to {}", output.display()))?;
        Ok(())
    }
}

/// Writes the future content of `output` to a synced temporary file in its folder (see
/// [`write_atomic`]); [`Staged::commit`] renames it over `output`.
///
/// # Errors
///
/// As [`write_atomic`].
pub fn stage(
    output: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
) -> Result<Staged, CliError> {
    let folder = folder_of(output);
    let mut builder = tempfile::Builder::new();
    builder.prefix(TEMP_PREFIX).suffix(".tmp");
    #[cfg(unix)]
    let permissions = match std::fs::metadata(output) {
        Ok(existing) => existing.permissions(),
        Err(_) => {
            use std::os::unix::fs::PermissionsExt;
            std::fs::Permissions::from_mode(0o666)
        }
    };
    #[cfg(unix)]
    builder.permissions(permissions.clone());
    let temp = builder.tempfile_in(&folder).map_err(|e| {
        bad_file(
            output,
            format!("cannot create a file in {}: {e}", folder.display()),
        )
    })?;
    {
        let file: &File = temp.as_file();
        let mut buffered = BufWriter::with_capacity(1 << 20, file);
        write(&mut buffered)
            .and_then(|()| buffered.flush())
            .with_context(|| format!("writing {}", temp.path().display()))?;
    }
    // An existing target's mode is not subject to the umask: set it exactly.
    #[cfg(unix)]
    if output.exists() {
        temp.as_file()
            .set_permissions(permissions)
            .with_context(|| format!("setting permissions of {}", temp.path().display()))?;
    }
    temp.as_file()
        .sync_all()
        .with_context(|| format!("syncing {}", temp.path().display()))?;
    Ok(Staged {
        temp,
        output: output.to_path_buf(),
    })
}
