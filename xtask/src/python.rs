//! The Python package (`bindings/python`) as wheels.
//!
//! - `cargo xtask wheels`: the abi3 wheels for x86-64 and AArch64 Linux, linked by
//!   `maturin --zig` against glibc 2.17 (`manylinux_2_17`, also named manylinux2014), each
//!   checked by `auditwheel show`; then the AArch64 wheel is installed for a Debian arm64
//!   CPython and imported (and run once) under `qemu-aarch64`.
//! - `cargo xtask python`: the x86-64 wheel as above, installed into a fresh virtual
//!   environment that has no Rust on its `PATH`, and the pytest suite run against it.
//!
//! Everything lives under `target/python`: the cargo target directory of the extension
//! (`CARGO_TARGET_DIR`), the build tools' environment `venv` (maturin, ziglang, auditwheel
//! from PyPI), the wheels in `wheels`, the test environment `test-venv` (made anew each run),
//! Zig's cache `zig-cache`, and for the AArch64 import `aarch64-python`: a private APT
//! state (arm64 package lists), the CPython packages unpacked into `root` and the wheel
//! installed with its dependencies into `site`. Nothing is installed on the machine itself.

use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

/// The build tools' environment: the build backend, Zig (the linker that targets an old
/// glibc from any machine) and auditwheel.
pub(crate) const BUILD_PACKAGES: &[&str] =
    &["maturin>=1.5,<2", "ziglang==0.17.1", "auditwheel>=6,<7"];

/// The test environment: the declared runtime dependencies and the test dependencies
/// (`[project.optional-dependencies] test`; mypy for the stub check; OpenCV for the
/// Preproc tests that compare with `cv2.cvtColor`). The wheel comes on top.
pub(crate) const TEST_PACKAGES: &[&str] = &[
    "numpy>=2",
    "ml_dtypes>=0.2",
    "pytest",
    "safetensors",
    "pillow",
    "mypy",
    "opencv-python-headless",
];

/// The glibc the wheels are linked against, as maturin's `--compatibility` and as the
/// platform tag `auditwheel show` must report (before `_<arch>`).
pub(crate) const COMPATIBILITY: &str = "manylinux2014";
/// The tag of [`COMPATIBILITY`] (PEP 600 spelling).
pub(crate) const MANYLINUX: &str = "manylinux_2_17";
/// The CPython ABI of the wheels: the stable ABI from 3.9 (`pyo3` feature `abi3-py39`,
/// `requires-python = ">=3.9"`).
pub(crate) const ABI_TAG: &str = "cp39-abi3";

/// One wheel target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WheelTarget {
    /// The Rust target triple.
    pub(crate) triple: &'static str,
    /// The machine name in wheel tags (`x86_64`, `aarch64`).
    pub(crate) arch: &'static str,
}

/// The x86-64 wheel (the development machines and CI).
pub(crate) const X86_64: WheelTarget = WheelTarget {
    triple: "x86_64-unknown-linux-gnu",
    arch: "x86_64",
};
/// The AArch64 wheel (the A65 host CPU of the board).
pub(crate) const AARCH64: WheelTarget = WheelTarget {
    triple: "aarch64-unknown-linux-gnu",
    arch: "aarch64",
};

/// The Debian (bookworm) arm64 packages of the CPython that imports the AArch64 wheel under
/// qemu: the interpreter, its standard library and the C libraries these need beyond the
/// AArch64 C library of `libc6-arm64-cross` (`/usr/aarch64-linux-gnu`, qemu's `-L`);
/// libstdc++ and libgcc_s for `ml_dtypes`.
pub(crate) const AARCH64_DEBS: &[&str] = &[
    "python3.11-minimal",
    "libpython3.11-minimal",
    "libpython3.11-stdlib",
    "libexpat1",
    "zlib1g",
    "libffi8",
    "libstdc++6",
    "libgcc-s1",
];
/// The interpreter inside the unpacked packages, and the CPython version pip installs for.
const AARCH64_PYTHON: &str = "usr/bin/python3.11";
const AARCH64_PYTHON_VERSION: &str = "3.11";
/// The AArch64 C library that qemu-user loads the interpreter with (libc6-arm64-cross).
const AARCH64_SYSROOT: &str = "/usr/aarch64-linux-gnu";

/// Paths of one run.
pub(crate) struct Layout {
    /// The repository root.
    pub(crate) root: PathBuf,
    /// `target/python`: the cargo target directory of the extension.
    pub(crate) target: PathBuf,
    /// `target/python/venv`: the build tools.
    pub(crate) venv: PathBuf,
    /// `target/python/test-venv`: the wheel and the test dependencies, made anew each run.
    pub(crate) test_venv: PathBuf,
    /// `target/python/wheels`.
    pub(crate) wheels: PathBuf,
    /// `target/python/aarch64-python`.
    pub(crate) aarch64: PathBuf,
    /// `bindings/python`.
    pub(crate) package: PathBuf,
}

impl Layout {
    pub(crate) fn new(root: &Path) -> Layout {
        let target = root.join("target").join("python");
        Layout {
            root: root.to_owned(),
            venv: target.join("venv"),
            test_venv: target.join("test-venv"),
            wheels: target.join("wheels"),
            aarch64: target.join("aarch64-python"),
            target,
            package: root.join("bindings").join("python"),
        }
    }

    fn bin(&self, name: &str) -> PathBuf {
        self.venv.join("bin").join(name)
    }
}

/// The commands that make the build tools' environment (`python3 -m venv` only when it is
/// missing).
pub(crate) fn build_venv_commands(l: &Layout) -> Vec<Command> {
    let mut out = Vec::new();
    if !l.bin("python").exists() {
        let mut venv = Command::new("python3");
        venv.arg("-m").arg("venv").arg(&l.venv);
        out.push(venv);
    }
    let mut tools = Command::new(l.bin("python"));
    tools.args(PIP_INSTALL).args(BUILD_PACKAGES);
    out.push(tools);
    out
}

const PIP_INSTALL: &[&str] = &[
    "-m",
    "pip",
    "install",
    "--quiet",
    "--disable-pip-version-check",
];

/// What `zig cc` is told when it links: Rust brings its own compiler builtins and no C is
/// compiled, so Zig need not build its compiler-rt and UBSan runtime from source first
/// (about 100 s of this 2-core machine per target on a cold cache; with these flags Zig
/// builds only the glibc 2.17 stubs and libunwind, 1.5 MB of cache).
pub(crate) const ZIG_LINK_RUSTFLAGS: &str =
    "-C link-arg=-fno-sanitize=undefined -C link-arg=-rtlib=none";

/// `maturin build` of one wheel: release, `--zig` against glibc 2.17, into `wheels`.
/// Maturin runs Zig as `python3 -m ziglang`, so the tools' environment comes first on
/// `PATH`; Zig's cache stays under `target/python`. [`ZIG_LINK_RUSTFLAGS`] go to the
/// target's artifacts only (`CARGO_TARGET_<TRIPLE>_RUSTFLAGS`), not to build scripts.
pub(crate) fn maturin_command(l: &Layout, target: WheelTarget) -> Command {
    let rustflags_key = format!(
        "CARGO_TARGET_{}_RUSTFLAGS",
        target.triple.to_uppercase().replace('-', "_")
    );
    let mut build = Command::new(l.bin("maturin"));
    build
        .args([
            "build",
            "--release",
            "--zig",
            "--compatibility",
            COMPATIBILITY,
        ])
        .args(["--target", target.triple, "--out"])
        .arg(&l.wheels)
        .arg("--manifest-path")
        .arg(l.package.join("Cargo.toml"))
        .env("CARGO_TARGET_DIR", &l.target)
        .env("ZIG_GLOBAL_CACHE_DIR", l.target.join("zig-cache"))
        .env(rustflags_key, ZIG_LINK_RUSTFLAGS)
        .env("PATH", prepend_path(&l.venv.join("bin")))
        .current_dir(&l.root);
    build
}

fn prepend_path(dir: &Path) -> OsString {
    let mut dirs = vec![dir.to_owned()];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).unwrap_or_default()
}

/// The file name a wheel of `target` must have: abi3 from 3.9, manylinux_2_17.
pub(crate) fn wheel_name_ok(name: &str, target: WheelTarget) -> bool {
    name.starts_with("simak_py-")
        && name.ends_with(".whl")
        && name.contains(&format!("-{ABI_TAG}-"))
        && name.contains(&format!("{MANYLINUX}_{}", target.arch))
}

/// The platform tag in the output of `auditwheel show`: the first quoted word after
/// "is consistent with the following platform tag:" (auditwheel wraps its lines where the
/// wheel's name ends, so the words are matched across line breaks).
pub(crate) fn auditwheel_tag(output: &str) -> Option<String> {
    let flat = output.split_whitespace().collect::<Vec<_>>().join(" ");
    let start = flat.find("is consistent with the following platform tag")?;
    let rest = &flat[start..];
    let open = rest.find('"')? + 1;
    let len = rest[open..].find('"')?;
    Some(rest[open..open + len].to_owned())
}

/// Builds the wheel of `target`, checks its name and `auditwheel show`, and returns its
/// path. Older wheels of that machine in `wheels` are removed first, so that exactly one
/// is there.
fn build_wheel(l: &Layout, target: WheelTarget) -> Result<PathBuf, String> {
    let is_ours = |name: &str| {
        name.starts_with("simak_py-") && name.ends_with(&format!("_{}.whl", target.arch))
    };
    for name in wheel_names(&l.wheels) {
        if is_ours(&name) {
            fs::remove_file(l.wheels.join(&name)).map_err(|e| format!("remove {name}: {e}"))?;
        }
    }
    run(&mut maturin_command(l, target))?;
    let built: Vec<String> = wheel_names(&l.wheels)
        .into_iter()
        .filter(|n| is_ours(n))
        .collect();
    let [name] = built.as_slice() else {
        return Err(format!(
            "expected one {} wheel in {}, found {built:?}",
            target.arch,
            l.wheels.display()
        ));
    };
    if !wheel_name_ok(name, target) {
        return Err(format!(
            "{name} is not tagged {ABI_TAG} and {MANYLINUX}_{}",
            target.arch
        ));
    }
    let wheel = l.wheels.join(name);
    let mut show = Command::new(l.bin("auditwheel"));
    show.arg("show").arg(&wheel);
    let output = capture(&mut show)?;
    print!("{output}");
    let expected = format!("{MANYLINUX}_{}", target.arch);
    match auditwheel_tag(&output) {
        Some(tag) if tag == expected => {
            println!("<== {name}: auditwheel: {tag}");
            Ok(wheel)
        }
        other => Err(format!(
            "auditwheel show {name}: platform tag {other:?}, expected {expected}"
        )),
    }
}

fn wheel_names(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".whl"))
        .collect();
    names.sort();
    names
}

/// `PATH` without the directories that hold `cargo`, `rustc` or `rustup` (rustup's proxies
/// in `~/.cargo/bin` and the toolchain directory that rustup puts first for xtask).
pub(crate) fn path_without_rust(path: &std::ffi::OsStr) -> OsString {
    let kept = std::env::split_paths(path).filter(|dir| {
        !["cargo", "rustc", "rustup"]
            .iter()
            .any(|t| dir.join(t).exists())
    });
    std::env::join_paths(kept).unwrap_or_default()
}

/// A command with no Rust in reach: `PATH` without Rust and without the `CARGO*` and
/// `RUST*` variables that cargo and rustup set for xtask.
fn without_rust(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new(program);
    for (key, _) in std::env::vars_os() {
        let key_text = key.to_string_lossy();
        if key_text.starts_with("CARGO") || key_text.starts_with("RUST") {
            command.env_remove(&key);
        }
    }
    command.env(
        "PATH",
        path_without_rust(&std::env::var_os("PATH").unwrap_or_default()),
    );
    command
}

/// What the test environment checks before pytest: `simak` is the installed wheel and
/// neither cargo, rustc nor rustup can be found.
const NO_RUST_CHECK: &str = "\
import shutil, sys, sysconfig, simak
site = sysconfig.get_paths()['purelib']
assert simak._native.__file__.startswith(site), (simak._native.__file__, site)
found = [t for t in ('cargo', 'rustc', 'rustup') if shutil.which(t)]
assert not found, f'Rust tools on PATH: {found}'
print('simak from', simak._native.__file__, '(no cargo, rustc, rustup on PATH)')
";

/// The commands that test the x86-64 wheel: a fresh environment (without pip: the tools'
/// pip installs into it with `--python`) made without Rust on `PATH`, the wheel and the
/// test dependencies installed from wheels only (`--only-binary=:all:`, so nothing can
/// be compiled), the check above, pytest.
pub(crate) fn test_commands(l: &Layout, wheel: &Path) -> Vec<Command> {
    let python = l.test_venv.join("bin").join("python");
    let mut venv = without_rust("python3");
    venv.args(["-m", "venv", "--without-pip"]).arg(&l.test_venv);
    let mut install = without_rust(l.bin("python"));
    install
        .args(["-m", "pip", "--python"])
        .arg(&python)
        .args(&PIP_INSTALL[2..])
        .arg("--only-binary=:all:")
        .arg(wheel)
        .args(TEST_PACKAGES);
    let mut check = without_rust(&python);
    check.args(["-c", NO_RUST_CHECK]).current_dir(&l.root);
    let mut pytest = without_rust(&python);
    pytest
        .args(["-m", "pytest", "-p", "no:cacheprovider", "-q"])
        .arg(l.package.join("tests"))
        .current_dir(&l.root);
    vec![venv, install, check, pytest]
}

/// `cargo xtask python`.
pub(crate) fn run_python(root: &Path) -> ExitCode {
    report("python", python_steps(&Layout::new(root)))
}

fn python_steps(l: &Layout) -> Result<(), String> {
    for mut command in build_venv_commands(l) {
        run(&mut command)?;
    }
    let wheel = build_wheel(l, X86_64)?;
    if l.test_venv.exists() {
        fs::remove_dir_all(&l.test_venv)
            .map_err(|e| format!("remove {}: {e}", l.test_venv.display()))?;
    }
    for mut command in test_commands(l, &wheel) {
        run(&mut command)?;
    }
    Ok(())
}

/// `cargo xtask wheels`.
pub(crate) fn run_wheels(root: &Path) -> ExitCode {
    report("wheels", wheels_steps(&Layout::new(root)))
}

fn wheels_steps(l: &Layout) -> Result<(), String> {
    for mut command in build_venv_commands(l) {
        run(&mut command)?;
    }
    let mut built = Vec::new();
    for target in [X86_64, AARCH64] {
        built.push(build_wheel(l, target)?);
    }
    aarch64_import(l, &built[1])?;
    for wheel in &built {
        println!("<== wheel: {}", wheel.display());
    }
    Ok(())
}

/// Options that point APT at the private state under `aarch64-python/apt` with arm64 as
/// its only architecture, so that nothing of the machine's own APT state changes.
fn apt_command(l: &Layout) -> Command {
    let apt = l.aarch64.join("apt");
    let mut command = Command::new("apt-get");
    command
        .arg("-q")
        .arg(opt("Dir::State::Lists", &apt.join("lists")))
        .arg(opt("Dir::Cache", &apt.join("cache")))
        .args([
            "-o",
            "APT::Architecture=arm64",
            "-o",
            "APT::Architectures::=arm64",
            "-o",
            "Acquire::Languages=none",
            // The files go under target/, which APT's unprivileged `_apt` may not reach.
            "-o",
            "APT::Sandbox::User=root",
            "-o",
            "Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false",
            "-o",
            "Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false",
            "-o",
            "Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false",
        ]);
    command
}

fn opt(key: &str, path: &Path) -> OsString {
    let mut o = OsString::from(format!("-o{key}="));
    o.push(path);
    o
}

/// The smoke run under qemu: the quantized values of an oracle written here (round half
/// to even, saturate), on FP32 and on BF16 (`ml_dtypes`) input.
const AARCH64_SMOKE: &str = "\
import sys
sys.path.insert(0, sys.argv[1])
import platform, numpy as np, ml_dtypes, simak
assert platform.machine() == 'aarch64', platform.machine()
assert simak._native.__file__.startswith(sys.argv[1]), simak._native.__file__
x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 100.0, 1000.0, -1000.0], np.float32)
expected = np.clip(np.rint(x) + 3, -128, 127).astype(np.int8)
for tensor in (x, x.astype(ml_dtypes.bfloat16)):
    got = simak.quantize(tensor, 1.0, 3)
    assert np.array_equal(got, expected), (tensor.dtype, got, expected)
print('aarch64: import simak and quantize FP32, BF16 under qemu: ok', sys.version.split()[0])
";

/// Installs the AArch64 wheel for Debian's arm64 CPython and imports it under qemu.
fn aarch64_import(l: &Layout, wheel: &Path) -> Result<(), String> {
    let root = l.aarch64.join("root");
    let python = root.join(AARCH64_PYTHON);
    if !python.exists() {
        let apt = l.aarch64.join("apt");
        for dir in [
            apt.join("lists/partial"),
            apt.join("cache/archives/partial"),
        ] {
            fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        }
        let debs = l.aarch64.join("debs");
        if debs.exists() {
            fs::remove_dir_all(&debs).map_err(|e| format!("remove {}: {e}", debs.display()))?;
        }
        fs::create_dir_all(&debs).map_err(|e| format!("create {}: {e}", debs.display()))?;
        run(apt_command(l).arg("update"))?;
        run(apt_command(l)
            .arg("download")
            .args(AARCH64_DEBS)
            .current_dir(&debs))?;
        for name in fs::read_dir(&debs).map_err(|e| format!("{}: {e}", debs.display()))? {
            let deb = name.map_err(|e| e.to_string())?.path();
            run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root))?;
        }
        // The package lists and the .deb files are not needed once unpacked.
        for dir in [&debs, &apt] {
            fs::remove_dir_all(dir).map_err(|e| format!("remove {}: {e}", dir.display()))?;
        }
    }
    let site = l.aarch64.join("site");
    if site.exists() {
        fs::remove_dir_all(&site).map_err(|e| format!("remove {}: {e}", site.display()))?;
    }
    let mut install = Command::new(l.bin("python"));
    install
        .args(PIP_INSTALL)
        .arg("--only-binary=:all:")
        .args(["--platform", &format!("{MANYLINUX}_aarch64")])
        .args(["--python-version", AARCH64_PYTHON_VERSION])
        .args(["--implementation", "cp", "--target"])
        .arg(&site)
        .arg(wheel);
    run(&mut install)?;
    let mut libs = OsString::from("LD_LIBRARY_PATH=");
    libs.push(root.join("usr/lib/aarch64-linux-gnu"));
    libs.push(":");
    libs.push(root.join("lib/aarch64-linux-gnu"));
    let mut smoke = Command::new("qemu-aarch64");
    smoke
        .args(["-L", AARCH64_SYSROOT, "-E"])
        .arg(libs)
        .arg(&python)
        .args(["-I", "-c", AARCH64_SMOKE])
        .arg(&site);
    run(&mut smoke)
}

fn shown(command: &Command) -> String {
    let mut words = vec![command.get_program().to_string_lossy().into_owned()];
    words.extend(command.get_args().map(|a| a.to_string_lossy().into_owned()));
    words.join(" ")
}

fn run(command: &mut Command) -> Result<(), String> {
    println!("==> {}", shown(command));
    match command.status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(format!("{status}: {}", shown(command))),
        Err(e) => Err(format!("cannot run {}: {e}", shown(command))),
    }
}

fn capture(command: &mut Command) -> Result<String, String> {
    println!("==> {}", shown(command));
    let output = command
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", shown(command)))?;
    if !output.status.success() {
        print!("{}", String::from_utf8_lossy(&output.stdout));
        return Err(format!("{}: {}", output.status, shown(command)));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn report(what: &str, result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("<== {what} FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `auditwheel show` 6.8.2 on the x86-64 wheel, as printed.
    const AUDITWHEEL_X86_64: &str = "
simak_py-0.1.0-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
is consistent with the following platform tag:
\"manylinux_2_17_x86_64\".

The wheel references external versioned symbols in these
system-provided shared libraries: libc.so.6 with versions
{'GLIBC_2.2.5', 'GLIBC_2.3.4', 'GLIBC_2.14', 'GLIBC_2.3'},
libpthread.so.0 with versions {'GLIBC_2.2.5', 'GLIBC_2.12'},
libdl.so.2 with versions {'GLIBC_2.2.5'}

This constrains the platform tag to \"manylinux_2_17_x86_64\". In order
to achieve a more compatible tag, you would need to recompile a new
wheel from source on a system with earlier versions of these
libraries, such as a recent manylinux image.
";

    /// `auditwheel show` 6.8.2 on a wheel linked by Debian 12's gcc (glibc 2.36): the
    /// sentence wraps after "with the".
    const AUDITWHEEL_NATIVE: &str = "
simak_py-0.1.0-cp39-abi3-linux_x86_64.whl is consistent with the
following platform tag: \"manylinux_2_34_x86_64\".

The wheel references external versioned symbols in these
system-provided shared libraries: libgcc_s.so.1 with versions
{'GCC_3.3', 'GCC_3.0', 'GCC_4.2.0'}, libc.so.6 with versions
{'GLIBC_2.33', 'GLIBC_2.14', 'GLIBC_2.3', 'GLIBC_2.30', 'GLIBC_2.34',
'GLIBC_2.25', 'GLIBC_2.18', 'GLIBC_2.28', 'GLIBC_2.3.4',
'GLIBC_2.2.5'}
";

    #[test]
    fn reads_the_platform_tag_of_auditwheel_show() {
        assert_eq!(
            auditwheel_tag(AUDITWHEEL_X86_64).as_deref(),
            Some("manylinux_2_17_x86_64")
        );
        assert_eq!(
            auditwheel_tag(AUDITWHEEL_NATIVE).as_deref(),
            Some("manylinux_2_34_x86_64")
        );
        // A wheel auditwheel cannot place has no such sentence.
        assert_eq!(
            auditwheel_tag("x.whl is consistent with no platform tag\n"),
            None
        );
    }

    #[test]
    fn wheel_names_must_be_abi3_and_manylinux_2_17() {
        let ok = "simak_py-0.1.0-cp39-abi3-manylinux2014_aarch64.manylinux_2_17_aarch64.whl";
        assert!(wheel_name_ok(ok, AARCH64));
        assert!(!wheel_name_ok(ok, X86_64));
        assert!(!wheel_name_ok(
            "simak_py-0.1.0-cp39-abi3-linux_x86_64.whl",
            X86_64
        ));
        assert!(!wheel_name_ok(
            "simak_py-0.1.0-cp311-cp311-manylinux_2_17_x86_64.whl",
            X86_64
        ));
    }

    #[test]
    fn maturin_builds_with_zig_for_glibc_2_17_under_target_python() {
        let l = Layout::new(Path::new("/repo"));
        let command = maturin_command(&l, AARCH64);
        assert_eq!(
            shown(&command),
            "/repo/target/python/venv/bin/maturin build --release --zig --compatibility \
             manylinux2014 --target aarch64-unknown-linux-gnu --out /repo/target/python/wheels \
             --manifest-path /repo/bindings/python/Cargo.toml"
        );
        let env: Vec<_> = command.get_envs().collect();
        assert!(env.iter().any(|(k, v)| *k == "CARGO_TARGET_DIR"
            && v.is_some_and(|v| v == Path::new("/repo/target/python"))));
        assert!(env.iter().any(
            |(k, v)| *k == "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS"
                && v.is_some_and(|v| v == ZIG_LINK_RUSTFLAGS)
        ));
        let path = env
            .iter()
            .find(|(k, _)| *k == "PATH")
            .and_then(|(_, v)| *v)
            .expect("PATH set");
        assert!(
            std::env::split_paths(path)
                .next()
                .is_some_and(|first| first == Path::new("/repo/target/python/venv/bin"))
        );
    }

    #[test]
    fn the_test_environment_has_no_rust_and_runs_pytest() {
        let l = Layout::new(Path::new("/repo"));
        let wheel = Path::new("/repo/target/python/wheels/w.whl");
        let commands = test_commands(&l, wheel);
        let lines: Vec<String> = commands.iter().map(shown).collect();
        assert_eq!(
            lines[0],
            "python3 -m venv --without-pip /repo/target/python/test-venv"
        );
        assert!(lines[1].starts_with(
            "/repo/target/python/venv/bin/python -m pip --python \
             /repo/target/python/test-venv/bin/python install --quiet \
             --disable-pip-version-check --only-binary=:all: /repo/target/python/wheels/w.whl"
        ));
        assert!(!lines[1].contains("maturin"));
        assert_eq!(
            lines[3],
            "/repo/target/python/test-venv/bin/python -m pytest -p no:cacheprovider -q \
             /repo/bindings/python/tests"
        );
        for command in &commands {
            let envs: Vec<_> = command.get_envs().collect();
            let path = envs
                .iter()
                .find(|(k, _)| *k == "PATH")
                .and_then(|(_, v)| *v)
                .expect("PATH set");
            assert!(
                !std::env::split_paths(path).any(|d| d.join("cargo").exists()),
                "cargo on {path:?}"
            );
        }
    }

    #[test]
    fn path_without_rust_drops_the_directories_with_cargo() {
        let dir = std::env::temp_dir().join(format!("xtask-no-rust-{}", std::process::id()));
        let rust = dir.join("rust-bin");
        let other = dir.join("other-bin");
        fs::create_dir_all(&rust).expect("mkdir");
        fs::create_dir_all(&other).expect("mkdir");
        fs::write(rust.join("cargo"), "").expect("write");
        let path = std::env::join_paths([&rust, &other]).expect("join");
        let kept = path_without_rust(&path);
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(
            std::env::split_paths(&kept).collect::<Vec<_>>(),
            vec![other]
        );
    }
}
