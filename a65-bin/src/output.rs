//! Atomic output: a temporary file in the output's folder, renamed over the target on
//! success. On any failure the temporary file is removed and the target is untouched.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;

use crate::error::{CliError, bad_file};

/// Prefix of the temporary files this tool creates next to its outputs.
pub const TEMP_PREFIX: &str = ".simak-";

/// Temporary files being written or staged, removed by the interrupt handler.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Installs the interrupt handler (SIGINT, SIGTERM, SIGHUP): every temporary output file
/// still pending is removed, then the process exits with status 130, so an interrupted run
/// leaves neither a partial output nor a temporary file (targets are only ever replaced by
/// a completed rename). Call once, from `main`.
///
/// # Errors
///
/// When a handler is already installed or the signal cannot be hooked.
pub fn install_interrupt_cleanup() -> Result<(), ctrlc::Error> {
    ctrlc::set_handler(|| {
        let pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        for path in pending.iter() {
            let _ = std::fs::remove_file(path);
        }
        std::process::exit(130);
    })
}

/// Registers a temporary file with the interrupt handler for as long as it lives.
#[derive(Debug)]
struct Pending(PathBuf);

impl Pending {
    fn new(path: &Path) -> Pending {
        PENDING
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(path.to_path_buf());
        Pending(path.to_path_buf())
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        let mut pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = pending.iter().position(|p| *p == self.0) {
            pending.swap_remove(k);
        }
    }
}

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

/// Checks that `output` can be a file target of `--output`: see [`check_target_of`].
///
/// # Errors
///
/// As [`check_target_of`].
pub fn check_target(output: &Path) -> Result<(), CliError> {
    check_target_of("--output", output)
}

/// Checks that `path`, given by `flag`, can be a file target: not `-` (standard output is
/// not written: outputs are replaced atomically by rename), not a directory, not an existing
/// device, FIFO or socket (a rename would replace the node itself), and its folder exists.
///
/// # Errors
///
/// Bad input (exit 2) naming `path` and `flag`.
pub fn check_target_of(flag: &str, path: &Path) -> Result<(), CliError> {
    if path.as_os_str() == "-" {
        return Err(bad_file(
            path,
            format!("{flag} - (standard output) is not supported: give a file path"),
        ));
    }
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(bad_file(
                path,
                format!("{flag} names a directory, not a file"),
            ));
        }
        Ok(meta) if !meta.is_file() => {
            return Err(bad_file(
                path,
                format!(
                    "{flag} names a device or other special file; simak writes regular files only (replaced atomically by rename)"
                ),
            ));
        }
        _ => {}
    }
    let folder = folder_of(path);
    if !folder.is_dir() {
        return Err(bad_file(
            path,
            format!("{flag} folder {} does not exist", folder.display()),
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
    _pending: Pending,
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
    let pending = Pending::new(temp.path());
    {
        let file: &File = temp.as_file();
        let mut buffered = BufWriter::with_capacity(1 << 20, file);
        write(&mut buffered)
            .and_then(|()| buffered.flush())
            .map_err(|e| write_failed(output, &e))?;
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
        .map_err(|e| write_failed(output, &e))?;
    Ok(Staged {
        temp,
        output: output.to_path_buf(),
        _pending: pending,
    })
}

/// An I/O failure while writing the temporary file of `output` (exit 1; the temporary file
/// is removed when the error drops it).
fn write_failed(output: &Path, e: &io::Error) -> CliError {
    CliError::Write(format!("{}: cannot write: {e}", output.display()))
}

/// Rewrites the JSON header of a serialized `.safetensors` file with its top-level keys and
/// its `__metadata__` keys in sorted order, so that the same content always gives the same
/// bytes (the `safetensors` crate serializes metadata from a `HashMap`, in random order).
/// The header keeps its length (the same keys and values, reordered, padded with spaces as
/// before), so the data section is untouched. Returns the input unchanged if the header is
/// not what `safetensors::serialize` writes.
pub fn sorted_safetensors_header(mut bytes: Vec<u8>) -> Vec<u8> {
    use std::collections::BTreeMap;
    let Some(len) = bytes
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .and_then(|n| usize::try_from(n).ok())
    else {
        return bytes;
    };
    let Some(header) = bytes.get(8..8usize.saturating_add(len)) else {
        return bytes;
    };
    let Ok(top) = serde_json::from_slice::<BTreeMap<String, serde_json::Value>>(header) else {
        return bytes;
    };
    let mut sorted: BTreeMap<String, serde_json::Value> = BTreeMap::new();
    for (key, value) in top {
        let value = match value {
            serde_json::Value::Object(map) if key == "__metadata__" => {
                let inner: BTreeMap<String, serde_json::Value> = map.into_iter().collect();
                match serde_json::to_value(inner) {
                    Ok(v) => v,
                    Err(_) => return bytes,
                }
            }
            other => other,
        };
        sorted.insert(key, value);
    }
    let Ok(mut text) = serde_json::to_vec(&sorted) else {
        return bytes;
    };
    if text.len() > len {
        return bytes;
    }
    text.resize(len, b' ');
    bytes[8..8 + len].copy_from_slice(&text);
    bytes
}

/// One tensor of an output safetensors file: data converted by the command (owned, with
/// its dtype) or passed through unchanged from the input file (borrowed).
pub enum StOut<'a> {
    /// Converted data: `dtype` elements of the row-major `shape`, little-endian.
    Converted {
        /// The output dtype (I8 for `quant`, F32 for `dequant`).
        dtype: safetensors::Dtype,
        /// Logical extents.
        shape: Vec<usize>,
        /// The element bytes.
        data: Vec<u8>,
    },
    /// A tensor copied from the input as it was.
    Copied(safetensors::tensor::TensorView<'a>),
}

impl safetensors::tensor::View for StOut<'_> {
    fn dtype(&self) -> safetensors::Dtype {
        match self {
            StOut::Converted { dtype, .. } => *dtype,
            StOut::Copied(v) => v.dtype(),
        }
    }
    fn shape(&self) -> &[usize] {
        match self {
            StOut::Converted { shape, .. } => shape,
            StOut::Copied(v) => v.shape(),
        }
    }
    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        std::borrow::Cow::Borrowed(match self {
            StOut::Converted { data, .. } => data,
            StOut::Copied(v) => v.data(),
        })
    }
    fn data_len(&self) -> usize {
        match self {
            StOut::Converted { data, .. } => data.len(),
            StOut::Copied(v) => v.data().len(),
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn safetensors_headers_are_sorted_in_place() {
        let mut meta = std::collections::HashMap::new();
        for k in ["zeta", "alpha", "mid", "beta", "omega"] {
            meta.insert(k.to_owned(), format!("value of {k}"));
        }
        let data = vec![0u8; 8];
        let view =
            safetensors::tensor::TensorView::new(safetensors::tensor::Dtype::F32, vec![2], &data)
                .unwrap();
        let a = safetensors::serialize([("b", view.clone()), ("a", view)], Some(meta)).unwrap();
        let sorted = sorted_safetensors_header(a.clone());
        assert_eq!(sorted.len(), a.len());
        let st = safetensors::SafeTensors::deserialize(&sorted).unwrap();
        assert_eq!(st.tensor("a").unwrap().data(), &data[..]);
        let text = String::from_utf8_lossy(&sorted[8..]).into_owned();
        let pos: Vec<usize> = ["alpha", "beta", "mid", "omega", "zeta"]
            .iter()
            .map(|k| text.find(&format!("\"{k}\"")).unwrap())
            .collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "{text}");
        assert_eq!(sorted_safetensors_header(b"junk".to_vec()), b"junk");
    }
}
