//! Output files: every target is checked before any work ([`Target::new`]), then written
//! in full to an unnamed temporary file in its folder and published over the target by one
//! link or rename ([`Target::stage`], [`commit_all`]). On any failure the target is
//! untouched and nothing is left behind.
//!
//! - **Unnamed staging.** On Linux the data goes to an `O_TMPFILE` file (no name until it is
//!   complete), linked into place on success, so even a killed run (`kill -9`) leaves no
//!   file. Where the filesystem cannot (no `O_TMPFILE`, no `/proc`), a named
//!   `.simak-*.tmp` file is used, removed on error and by the interrupt handler.
//! - **Modes.** A new output gets `0666` less the umask (the kernel applies it when the
//!   file is created); a replaced one keeps its mode exactly. Which of the two is decided
//!   once per file, so concurrent writers cannot mix them.
//! - **Names.** An output must be named by the user: a derived default name that exists is
//!   refused ([`Target::derived`]). Its extension must match the format written
//!   ([`Format`]). A symbolic link is written through to its target, never replaced.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;

use crate::error::{CliError, bad_file};

/// Prefix of the named temporary files this tool may create next to its outputs.
pub const TEMP_PREFIX: &str = ".simak-";

/// Temporary files being written or staged under a name, removed by the interrupt handler.
static PENDING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Held while outputs are published ([`commit_all`]); `true` once they have been. The
/// interrupt handler takes it first, so it never runs in the middle of a publication.
static PUBLISHED: Mutex<bool> = Mutex::new(false);

/// Installs the interrupt handler (SIGINT, SIGTERM, SIGHUP). Before the outputs are
/// published, an interrupt removes every named temporary file still pending, prints
/// `simak: interrupted, nothing written` on stderr and exits with status 130: nothing was
/// replaced (unnamed staging files vanish with the process). An
/// interrupt during publication waits for it to finish, and once the outputs are published
/// the run completes as usual, so a target set (a tiled buffer and its sidecar) is never
/// left half replaced. Call once, from `main`.
///
/// # Errors
///
/// When a handler is already installed or the signal cannot be hooked.
pub fn install_interrupt_cleanup() -> Result<(), ctrlc::Error> {
    ctrlc::set_handler(|| {
        let published = PUBLISHED.lock().unwrap_or_else(|e| e.into_inner());
        if *published {
            return;
        }
        let pending = PENDING.lock().unwrap_or_else(|e| e.into_inner());
        for path in pending.iter() {
            let _ = std::fs::remove_file(path);
        }
        eprintln!("simak: interrupted, nothing written");
        std::process::exit(130);
    })
}

/// Registers a named temporary file with the interrupt handler for as long as it lives.
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

/// The format of an output file, which its extension must match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A NumPy `.npy` file.
    Npy,
    /// A `.safetensors` file.
    Safetensors,
    /// A JSON file (`.json`).
    Json,
    /// An SVG drawing (`.svg`).
    Svg,
    /// Raw bytes (a tiled buffer, a descriptor): any extension but those of the formats
    /// above and of the image inputs, which would misname the content.
    Raw,
}

impl Format {
    /// The extension this format requires, if any.
    fn extension(self) -> Option<&'static str> {
        match self {
            Format::Npy => Some("npy"),
            Format::Safetensors => Some("safetensors"),
            Format::Json => Some("json"),
            Format::Svg => Some("svg"),
            Format::Raw => None,
        }
    }

    /// What the format is called in messages.
    fn name(self) -> &'static str {
        match self {
            Format::Npy => ".npy",
            Format::Safetensors => ".safetensors",
            Format::Json => "JSON",
            Format::Svg => "SVG",
            Format::Raw => "raw bytes",
        }
    }
}

/// The staging writer's buffer, in bytes ([`Target::stage`]).
const STAGE_BUFFER: usize = 1 << 20;

/// Extensions that name a structured format, which raw bytes must not be given.
const STRUCTURED: &[&str] = &["npy", "safetensors", "json", "svg", "png", "jpg", "jpeg"];

/// Checks that the extension of `path` matches `format`.
fn check_extension(flag: &str, path: &Path, format: Format) -> Result<(), CliError> {
    let ext = path
        .extension()
        .and_then(OsStr::to_str)
        .map(str::to_ascii_lowercase);
    match (format.extension(), ext.as_deref()) {
        (Some(want), Some(have)) if want == have => Ok(()),
        (Some(want), _) => Err(bad_file(
            path,
            format!(
                "{flag} must end in .{want}: the file written is {}",
                format.name()
            ),
        )),
        (None, Some(have)) if STRUCTURED.contains(&have) => Err(bad_file(
            path,
            format!(
                "{flag} ends in .{have}, but the file written is raw bytes, not that format; choose another name (for example .bin)"
            ),
        )),
        (None, _) => Ok(()),
    }
}

/// Follows `path` through symbolic links (up to 40, as the kernel does) to the file that
/// would be written: an existing file, or the not-yet-existing target of a dangling link.
fn resolve_links(flag: &str, path: &Path) -> Result<PathBuf, CliError> {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&current).map_err(|e| {
                    bad_file(path, format!("{flag}: cannot read the symbolic link: {e}"))
                })?;
                current = if target.is_absolute() {
                    target
                } else {
                    folder_of(&current).join(target)
                };
            }
            _ => return Ok(current),
        }
    }
    Err(bad_file(
        path,
        format!("{flag}: too many levels of symbolic links"),
    ))
}

/// An output file, checked before any work is done; [`Target::stage`] writes it.
#[derive(Debug, Clone)]
pub struct Target {
    /// The path as the user gave it (for messages).
    shown: PathBuf,
    /// The file actually written: `shown` with symbolic links followed.
    path: PathBuf,
    /// The folder of `path`.
    folder: PathBuf,
}

impl Target {
    /// Checks a path the user named with `flag` as a target for `format`, before any work:
    ///
    /// - not `-` (standard output is not written: outputs are published by link or rename);
    /// - not ending in `/` (a folder);
    /// - a symbolic link is followed: its target is written;
    /// - not an existing directory, device, FIFO or socket;
    /// - its extension matches `format`;
    /// - the file name fits the filesystem's name limit, and the folder exists and takes a
    ///   new file (checked by creating and dropping an unnamed file there).
    ///
    /// # Errors
    ///
    /// Bad input (exit 2) naming the path and `flag`.
    pub fn new(flag: &str, path: &Path, format: Format) -> Result<Target, CliError> {
        let raw = path.as_os_str();
        if raw == "-" {
            return Err(bad_file(
                path,
                format!("{flag} - (standard output) is not supported: give a file path"),
            ));
        }
        if raw.is_empty() {
            return Err(CliError::Input(format!(
                "{flag} is empty: give a file path"
            )));
        }
        let bytes = raw.as_encoded_bytes();
        if bytes.ends_with(b"/") || path.file_name().is_none() {
            return Err(bad_file(
                path,
                format!("{flag} names a folder (it ends in a separator), not a file"),
            ));
        }
        let resolved = resolve_links(flag, path)?;
        match std::fs::metadata(&resolved) {
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
                        "{flag} names a device or other special file; simak writes regular files only (published by link or rename)"
                    ),
                ));
            }
            _ => {}
        }
        check_extension(flag, path, format)?;
        let folder = folder_of(&resolved);
        match std::fs::metadata(&folder) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(bad_file(
                    path,
                    format!("{flag} folder {} is not a directory", folder.display()),
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(bad_file(
                    path,
                    format!("{flag} folder {} does not exist", folder.display()),
                ));
            }
            Err(e) => {
                return Err(bad_file(
                    path,
                    format!("{flag} folder {} cannot be used: {e}", folder.display()),
                ));
            }
        }
        let target = Target {
            shown: path.to_path_buf(),
            path: resolved,
            folder,
        };
        target.check_name_length(flag)?;
        target.check_replaceable(flag)?;
        // Probe: a file can be created in the folder (permissions, read-only filesystems).
        drop(target.create(flag)?);
        Ok(target)
    }

    /// A default output name the tool derived itself (`what` says how, `flag` is the option
    /// that names it instead): as [`Target::new`], and it must not exist, since no command
    /// replaces a file the user did not name.
    ///
    /// # Errors
    ///
    /// Bad input (exit 2) naming the path, when it exists or [`Target::new`] refuses it.
    pub fn derived(
        what: &str,
        flag: &str,
        path: &Path,
        format: Format,
    ) -> Result<Target, CliError> {
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(bad_file(
                path,
                format!(
                    "exists, and {what} would replace it; simak only replaces files named on the command line: pass {flag} PATH"
                ),
            ));
        }
        Target::new(what, path, format)
    }

    /// The file name must fit the folder's filesystem (`NAME_MAX`, usually 255 bytes).
    fn check_name_length(&self, flag: &str) -> Result<(), CliError> {
        let name_len = self
            .path
            .file_name()
            .map_or(0, |n| n.as_encoded_bytes().len());
        #[cfg(unix)]
        let limit = rustix::fs::statvfs(&self.folder).map_or(255, |v| v.f_namemax);
        #[cfg(not(unix))]
        let limit = 255;
        if name_len as u64 > limit {
            return Err(bad_file(
                &self.shown,
                format!(
                    "{flag}: the file name is {name_len} bytes long, above this filesystem's limit of {limit}"
                ),
            ));
        }
        Ok(())
    }

    /// An existing target in a sticky folder (mode `+t`, as `/tmp`) can only be replaced by
    /// its owner, the folder's owner or root: the kernel refuses the final rename otherwise,
    /// which would be found only after all the work.
    fn check_replaceable(&self, flag: &str) -> Result<(), CliError> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let (Ok(file), Ok(folder)) = (
                std::fs::metadata(&self.path),
                std::fs::metadata(&self.folder),
            ) else {
                return Ok(());
            };
            let me = rustix::process::geteuid().as_raw();
            let sticky = folder.mode() & 0o1000 != 0;
            if sticky && me != 0 && file.uid() != me && folder.uid() != me {
                return Err(bad_file(
                    &self.shown,
                    format!(
                        "{flag}: the file belongs to another user (uid {}) and its folder {} is sticky (mode +t): only its owner can replace it",
                        file.uid(),
                        self.folder.display()
                    ),
                ));
            }
        }
        let _ = flag;
        Ok(())
    }

    /// Creates the staging file for this target in its folder.
    fn create(&self, flag: &str) -> Result<Staging, CliError> {
        let refused = |e: &dyn std::fmt::Display| {
            // tempfile names its own temporary path; the user named the output.
            let text = e.to_string();
            let reason = text.split(" at path ").next().unwrap_or(&text);
            bad_file(
                &self.shown,
                format!(
                    "{flag}: cannot create a file in {}: {reason}",
                    self.folder.display()
                ),
            )
        };
        #[cfg(target_os = "linux")]
        {
            use rustix::fs::{Mode, OFlags};
            let flags = OFlags::TMPFILE | OFlags::WRONLY | OFlags::CLOEXEC;
            match rustix::fs::open(&self.folder, flags, Mode::from_raw_mode(0o666)) {
                Ok(fd) if Path::new("/proc/self/fd").is_dir() => {
                    return Ok(Staging::Unnamed(File::from(fd)));
                }
                Ok(_) => {}
                // The filesystem has no O_TMPFILE: fall back to a named file below.
                Err(e)
                    if e == rustix::io::Errno::OPNOTSUPP
                        || e == rustix::io::Errno::ISDIR
                        || e == rustix::io::Errno::INVAL
                        || e == rustix::io::Errno::NOSYS => {}
                Err(e) => return Err(refused(&io::Error::from(e))),
            }
        }
        let mut builder = tempfile::Builder::new();
        builder.prefix(TEMP_PREFIX).suffix(".tmp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // Subject to the umask at creation, as any new file.
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let temp = builder.tempfile_in(&self.folder).map_err(|e| refused(&e))?;
        let pending = Pending::new(temp.path());
        Ok(Staging::Named(temp, pending))
    }

    /// Writes the future content of the target to a staging file in its folder, flushed
    /// and synced; [`commit_all`] publishes it. The mode is settled here: an existing
    /// target's mode is copied exactly, a new one keeps the creation mode (`0666` less the
    /// umask).
    ///
    /// # Errors
    ///
    /// Bad input (exit 2) when no file can be created in the folder any more;
    /// [`CliError::Write`] (exit 1) when writing fails (disk full, I/O error).
    pub fn stage(
        &self,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<Staged, CliError> {
        let staging = self.create("output")?;
        {
            let file = staging.file();
            // The buffer only gathers a header's small writes; the payloads are large writes,
            // which go past it. Under a memory limit (`ulimit -v`) there may be no room for
            // it after the computation: then the file is written unbuffered rather than the
            // process aborting. (The probe is freed just before `BufWriter` asks for the
            // same size, with nothing allocating in between.)
            let mut probe: Vec<u8> = Vec::new();
            let room = probe.try_reserve_exact(STAGE_BUFFER).is_ok();
            drop(probe);
            let capacity = if room { STAGE_BUFFER } else { 0 };
            let mut buffered = BufWriter::with_capacity(capacity, file);
            write(&mut buffered)
                .and_then(|()| buffered.flush())
                .map_err(|e| self.write_failed(&e))?;
        }
        #[cfg(unix)]
        if let Ok(existing) = std::fs::metadata(&self.path) {
            staging
                .file()
                .set_permissions(existing.permissions())
                .with_context(|| format!("setting the mode of {}", self.shown.display()))?;
        }
        staging
            .file()
            .sync_all()
            .map_err(|e| self.write_failed(&e))?;
        Ok(Staged {
            staging,
            target: self.clone(),
        })
    }

    /// Refuses a target that is the command's input file `input` (the same file by path,
    /// link or inode); `flag` names the option in the message.
    ///
    /// # Errors
    ///
    /// Bad input (exit 2) naming the input.
    pub fn not_input(&self, flag: &str, input: &Path) -> Result<(), CliError> {
        if same_file(input, &self.shown) {
            return Err(bad_file(
                input,
                format!(
                    "{flag} {} is the input file itself; choose another path",
                    self.shown.display()
                ),
            ));
        }
        Ok(())
    }

    /// Stages a `.npy` file of `T` elements ([`Target::stage`]): the header of `shape` in
    /// `order`, then what `body` writes (the elements, little-endian).
    ///
    /// # Errors
    ///
    /// As [`Target::stage`].
    pub fn stage_npy<T: npyz::AutoSerialize>(
        &self,
        shape: &[u64],
        order: npyz::Order,
        body: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<Staged, CliError> {
        use npyz::WriterBuilder;
        self.stage(|w| {
            let w = npyz::WriteOptions::<T>::new()
                .default_dtype()
                .shape(shape)
                .order(order)
                .writer(w)
                .write_header_only()?;
            body(w)
        })
    }

    /// Stages the `.safetensors` file of `tensors` and `metadata` ([`Target::stage`]), its
    /// header sorted ([`sorted_safetensors_header`]) so that the same content always gives
    /// the same bytes.
    ///
    /// # Errors
    ///
    /// Internal when the tensors cannot be serialized; as [`Target::stage`].
    pub fn stage_safetensors(
        &self,
        tensors: Vec<(String, StOut<'_>)>,
        metadata: std::collections::HashMap<String, String>,
    ) -> Result<Staged, CliError> {
        let serialized = safetensors::serialize(tensors, Some(metadata))
            .map_err(|e| CliError::Internal(anyhow::anyhow!("serializing the output: {e}")))?;
        let serialized = sorted_safetensors_header(serialized);
        self.stage(|w| w.write_all(&serialized))
    }

    /// An I/O failure while writing the staging file of the target (exit 1; the staging
    /// file goes when the error drops it).
    fn write_failed(&self, e: &io::Error) -> CliError {
        CliError::Write(format!("{}: cannot write: {e}", self.shown.display()))
    }
}

/// Where a target's content is staged.
#[derive(Debug)]
enum Staging {
    /// An `O_TMPFILE` file: no name until it is linked.
    Unnamed(File),
    /// A named temporary file in the target's folder.
    Named(tempfile::NamedTempFile, Pending),
}

impl Staging {
    fn file(&self) -> &File {
        match self {
            Staging::Unnamed(file) => file,
            Staging::Named(temp, _) => temp.as_file(),
        }
    }
}

/// A fully written and synced staging file, not yet published. Dropping it discards it.
#[derive(Debug)]
pub struct Staged {
    staging: Staging,
    target: Target,
}

impl Staged {
    /// Publishes the staged file as the target: linked into place when the target does not
    /// exist, else linked under a temporary name and renamed over it (one atomic step for a
    /// reader).
    ///
    /// # Errors
    ///
    /// [`CliError::Write`] (exit 1) when the link or rename fails; the target is untouched.
    fn commit(self) -> Result<(), CliError> {
        let target = &self.target;
        let failed = |e: &dyn std::fmt::Display| {
            CliError::Write(format!(
                "{}: cannot publish the output: {e}",
                target.shown.display()
            ))
        };
        match self.staging {
            Staging::Named(temp, _pending) => temp
                .persist(&target.path)
                .map(drop)
                .map_err(|e| failed(&e.error)),
            #[cfg(target_os = "linux")]
            Staging::Unnamed(file) => {
                use std::os::fd::AsRawFd;
                let source = format!("/proc/self/fd/{}", file.as_raw_fd());
                let link = |to: &Path| {
                    rustix::fs::linkat(
                        rustix::fs::CWD,
                        source.as_str(),
                        rustix::fs::CWD,
                        to,
                        rustix::fs::AtFlags::SYMLINK_FOLLOW,
                    )
                };
                match link(&target.path) {
                    Ok(()) => return Ok(()),
                    Err(e) if e == rustix::io::Errno::EXIST => {}
                    Err(e) => return Err(failed(&io::Error::from(e))),
                }
                // The target exists: link under a fresh temporary name (tempfile picks it
                // and retries on a clash), then rename it over the target.
                let linked = tempfile::Builder::new()
                    .prefix(TEMP_PREFIX)
                    .suffix(".tmp")
                    .make_in(&target.folder, |temp| link(temp).map_err(io::Error::from))
                    .map_err(|e| failed(&e))?;
                let _pending = Pending::new(linked.path());
                linked
                    .persist(&target.path)
                    .map(drop)
                    .map_err(|e| failed(&e.error))
            }
            #[cfg(not(target_os = "linux"))]
            Staging::Unnamed(_) => Err(failed(&"unnamed staging is Linux-only")),
        }
    }
}

/// Publishes several staged files in order (each atomically): everything was written in
/// full before the first is published, and no interrupt lands between two of them (see
/// [`install_interrupt_cleanup`]).
///
/// # Errors
///
/// [`CliError::Write`] (exit 1) when a link or rename fails; that target is untouched (those
/// before it are published).
pub fn commit_all(staged: Vec<Staged>) -> Result<(), CliError> {
    let mut published = PUBLISHED.lock().unwrap_or_else(|e| e.into_inner());
    for file in staged {
        file.commit()?;
        *published = true;
    }
    Ok(())
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
