//! `cargo xtask dist [--target T]`: builds the C ABI (`bindings/c`, release) and installs it
//! under `target/dist/` (for another target: `target/dist/<target>/`):
//!
//! ```text
//! include/simak/simak.h, simak.hpp
//! lib/libsimak.so.0.1.0 (SONAME libsimak.so.0), libsimak.so.0 -> libsimak.so.0.1.0,
//!     libsimak.so -> libsimak.so.0, libsimak.a
//! lib/pkgconfig/simak.pc                      (Libs.private from --print native-static-libs)
//! lib/cmake/simak/simakConfig.cmake, simakConfigVersion.cmake
//!     (targets simak::shared, simak::static; simak::simak is the shared one unless
//!      SIMAK_USE_STATIC_LIBS is ON before find_package)
//! ```
//!
//! Every file is relocatable (`${pcfiledir}`, `CMAKE_CURRENT_LIST_DIR`), so the folder can
//! be copied anywhere. `cargo xtask capi` is the `capi` step of `cargo xtask test`: it runs
//! `dist`, then the C and C++ checks of `bindings/c/tests` (see [`run_capi`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

/// The library version (the workspace's), from which the file names derive.
const VERSION: &str = "0.1.0";
/// The ABI major version: the SONAME's number.
const SOVERSION: &str = "0";
/// The AArch64 target of the A65 and its cross tools.
pub(crate) const AARCH64: &str = "aarch64-unknown-linux-gnu";

/// Where `dist` installs for `target` (`None`: the host).
pub(crate) fn dist_dir(root: &Path, target: Option<&str>) -> PathBuf {
    let base = root.join("target").join("dist");
    match target {
        Some(t) => base.join(t),
        None => base,
    }
}

/// `cargo xtask dist [--target T]`.
pub(crate) fn run(root: &Path, target: Option<&str>) -> ExitCode {
    match dist(root, target) {
        Ok(dir) => {
            println!("dist: installed into {}", dir.display());
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("dist: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The environment a cross build of `target` needs (the cross linker).
fn cross_env(target: Option<&str>) -> Vec<(&'static str, &'static str)> {
    match target {
        Some(AARCH64) => vec![(
            "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER",
            "aarch64-linux-gnu-gcc",
        )],
        _ => Vec::new(),
    }
}

/// Builds and installs; returns the folder.
pub(crate) fn dist(root: &Path, target: Option<&str>) -> Result<PathBuf, String> {
    // `cargo rustc` so that rustc's note with the native libraries of the static library
    // is printed; cargo replays it when the build is fresh.
    let mut cargo = Command::new(crate::cargo());
    cargo
        .current_dir(root)
        .args(["rustc", "--release", "-p", "simak-capi", "--lib"]);
    if let Some(t) = target {
        cargo.args(["--target", t]);
    }
    cargo.args(["--", "--print", "native-static-libs"]);
    cargo.envs(cross_env(target));
    println!("dist: {cargo:?}");
    let output = cargo
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprint!("{stderr}");
    if !output.status.success() {
        return Err(format!("cargo rustc failed ({})", output.status));
    }
    let native = stderr
        .lines()
        .find_map(|l| l.split("native-static-libs: ").nth(1))
        .map(str::trim)
        .ok_or("rustc printed no native-static-libs note")?
        .to_owned();

    let built = match target {
        Some(t) => root.join("target").join(t).join("release"),
        None => root.join("target").join("release"),
    };
    let dir = dist_dir(root, target);
    let include = dir.join("include").join("simak");
    let lib = dir.join("lib");
    for old in [dir.join("include"), lib.clone()] {
        if old.exists() {
            std::fs::remove_dir_all(&old).map_err(|e| format!("{}: {e}", old.display()))?;
        }
    }
    let pkgconfig = lib.join("pkgconfig");
    let cmake = lib.join("cmake").join("simak");
    for d in [&include, &pkgconfig, &cmake] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let headers = root
        .join("bindings")
        .join("c")
        .join("include")
        .join("simak");
    for name in ["simak.h", "simak.hpp"] {
        copy(&headers.join(name), &include.join(name))?;
    }
    let real = format!("libsimak.so.{VERSION}");
    let soname = format!("libsimak.so.{SOVERSION}");
    copy(&built.join("libsimak_capi.so"), &lib.join(&real))?;
    copy(&built.join("libsimak_capi.a"), &lib.join("libsimak.a"))?;
    symlink(&real, &lib.join(&soname))?;
    symlink(&soname, &lib.join("libsimak.so"))?;
    write(&pkgconfig.join("simak.pc"), &pkg_config(&native))?;
    write(&cmake.join("simakConfig.cmake"), &cmake_config(&native))?;
    write(&cmake.join("simakConfigVersion.cmake"), &cmake_version())?;
    Ok(dir)
}

fn copy(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::copy(from, to)
        .map(|_| ())
        .map_err(|e| format!("copy {} to {}: {e}", from.display(), to.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn symlink(target: &str, link: &Path) -> Result<(), String> {
    std::os::unix::fs::symlink(target, link)
        .map_err(|e| format!("link {} -> {target}: {e}", link.display()))
}

/// `lib/pkgconfig/simak.pc`: relocatable through `${pcfiledir}`.
fn pkg_config(native: &str) -> String {
    format!(
        "prefix=${{pcfiledir}}/../..\n\
         includedir=${{prefix}}/include\n\
         libdir=${{prefix}}/lib\n\
         \n\
         Name: simak\n\
         Description: FP32/BF16/FP16 tensors into what the ML accelerator reads (Quant, CastTess, QuantTess; EV74 codec)\n\
         Version: {VERSION}\n\
         Libs: -L${{libdir}} -lsimak\n\
         Libs.private: {native}\n\
         Cflags: -I${{includedir}}\n"
    )
}

/// `lib/cmake/simak/simakConfig.cmake`: imported targets, relocatable through
/// `CMAKE_CURRENT_LIST_DIR`.
fn cmake_config(native: &str) -> String {
    let libs: Vec<&str> = native
        .split_whitespace()
        .map(|l| l.strip_prefix("-l").unwrap_or(l))
        .collect();
    let mut text = String::new();
    let _ = write!(
        text,
        "# simak {VERSION}: the C ABI (include/simak/simak.h) and the header-only C++17 wrapper\n\
         # (include/simak/simak.hpp). Targets: simak::shared (libsimak.so, SONAME libsimak.so.{SOVERSION}),\n\
         # simak::static (libsimak.a and the system libraries it needs) and simak::simak, the\n\
         # shared one unless SIMAK_USE_STATIC_LIBS is ON before find_package(simak).\n\
         # Generated by cargo xtask dist.\n\
         get_filename_component(_simak_prefix \"${{CMAKE_CURRENT_LIST_DIR}}/../../..\" ABSOLUTE)\n\
         if(NOT TARGET simak::simak)\n\
         \x20 add_library(simak::shared SHARED IMPORTED)\n\
         \x20 set_target_properties(simak::shared PROPERTIES\n\
         \x20   IMPORTED_LOCATION \"${{_simak_prefix}}/lib/libsimak.so.{VERSION}\"\n\
         \x20   IMPORTED_SONAME \"libsimak.so.{SOVERSION}\"\n\
         \x20   INTERFACE_INCLUDE_DIRECTORIES \"${{_simak_prefix}}/include\")\n\
         \x20 add_library(simak::static STATIC IMPORTED)\n\
         \x20 set_target_properties(simak::static PROPERTIES\n\
         \x20   IMPORTED_LOCATION \"${{_simak_prefix}}/lib/libsimak.a\"\n\
         \x20   IMPORTED_LINK_INTERFACE_LANGUAGES \"C\"\n\
         \x20   INTERFACE_INCLUDE_DIRECTORIES \"${{_simak_prefix}}/include\"\n\
         \x20   INTERFACE_LINK_LIBRARIES \"{}\")\n\
         \x20 add_library(simak::simak INTERFACE IMPORTED)\n\
         \x20 if(SIMAK_USE_STATIC_LIBS)\n\
         \x20   set_target_properties(simak::simak PROPERTIES INTERFACE_LINK_LIBRARIES simak::static)\n\
         \x20 else()\n\
         \x20   set_target_properties(simak::simak PROPERTIES INTERFACE_LINK_LIBRARIES simak::shared)\n\
         \x20 endif()\n\
         endif()\n\
         unset(_simak_prefix)\n",
        libs.join(";")
    );
    text
}

/// `simakConfigVersion.cmake`: a request for 0.1 or older 0.1.x is met; another minor
/// version of 0.x is not (before 1.0 the minor version is the ABI's).
fn cmake_version() -> String {
    format!(
        "set(PACKAGE_VERSION \"{VERSION}\")\n\
         if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)\n\
         \x20 set(PACKAGE_VERSION_COMPATIBLE FALSE)\n\
         elseif(NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL \"0\" OR NOT PACKAGE_FIND_VERSION_MINOR STREQUAL \"1\")\n\
         \x20 set(PACKAGE_VERSION_COMPATIBLE FALSE)\n\
         else()\n\
         \x20 set(PACKAGE_VERSION_COMPATIBLE TRUE)\n\
         \x20 if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)\n\
         \x20   set(PACKAGE_VERSION_EXACT TRUE)\n\
         \x20 endif()\n\
         endif()\n"
    )
}

/// One check of the `capi` step: a name and the command, or a comparison of a raw INT8
/// file with the I8 tensor of a safetensors file.
struct Check {
    name: String,
    command: Command,
    compare: Option<(PathBuf, PathBuf, &'static str)>,
}

impl Check {
    fn new(name: &str, program: &str, args: &[&str]) -> Check {
        let mut command = Command::new(program);
        command.args(args);
        Check {
            name: name.to_owned(),
            command,
            compare: None,
        }
    }

    fn compare(name: &str, raw: PathBuf, safetensors: PathBuf, tensor: &'static str) -> Check {
        Check {
            name: name.to_owned(),
            command: Command::new("true"),
            compare: Some((raw, safetensors, tensor)),
        }
    }
}

/// Whether the raw bytes at `raw` equal the data of the I8 tensor `tensor` of the
/// safetensors file at `safetensors` (the header read as text: 8-byte length, JSON).
fn compare_i8(raw: &Path, safetensors: &Path, tensor: &str) -> Result<String, String> {
    let mine = std::fs::read(raw).map_err(|e| format!("{}: {e}", raw.display()))?;
    let file = std::fs::read(safetensors).map_err(|e| format!("{}: {e}", safetensors.display()))?;
    let len = file
        .get(..8)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map(u64::from_le_bytes)
        .ok_or("no safetensors header")? as usize;
    let header = std::str::from_utf8(file.get(8..8 + len).ok_or("short header")?)
        .map_err(|e| e.to_string())?;
    let at = header
        .find(&format!("\"{tensor}\":{{"))
        .ok_or(format!("no tensor {tensor}"))?;
    let entry = &header[at..at + header[at..].find('}').ok_or("bad header")?];
    if !entry.contains("\"dtype\":\"I8\"") {
        return Err(format!("{tensor} is not I8"));
    }
    let start = entry.find("\"data_offsets\":[").ok_or("no data_offsets")? + 16;
    let end = start + entry[start..].find(']').ok_or("bad data_offsets")?;
    let bounds: Vec<usize> = entry[start..end]
        .split(',')
        .map(|v| v.trim().parse().map_err(|_| format!("bad offset {v}")))
        .collect::<Result<_, String>>()?;
    let [a, b] = bounds[..] else {
        return Err("data_offsets is not two numbers".to_owned());
    };
    let theirs = file
        .get(8 + len + a..8 + len + b)
        .ok_or("data past the file")?;
    if mine == theirs {
        Ok(format!("{} bytes identical", mine.len()))
    } else {
        let first = mine.iter().zip(theirs).position(|(x, y)| x != y);
        Err(format!(
            "{} bytes against {}; first difference at {first:?}",
            mine.len(),
            theirs.len()
        ))
    }
}

/// Runs `check` from `root`; false when it failed.
fn run_check(root: &Path, mut check: Check) -> bool {
    check.command.current_dir(root);
    println!("\n--> capi: {} ({:?})", check.name, check.command);
    let started = Instant::now();
    let ok = if let Some((raw, safetensors, tensor)) = &check.compare {
        match compare_i8(raw, safetensors, tensor) {
            Ok(m) => {
                println!("{m}");
                true
            }
            Err(m) => {
                println!("{m}");
                false
            }
        }
    } else {
        match check.command.status() {
            Ok(s) => s.success(),
            Err(e) => {
                println!("cannot run: {e}");
                false
            }
        }
    };
    println!(
        "<-- capi: {} {} in {:.1} s",
        check.name,
        if ok { "passed" } else { "FAILED" },
        started.elapsed().as_secs_f64()
    );
    ok
}

/// The C compiler's strict flags for the C99 test program.
const C_FLAGS: &[&str] = &[
    "-std=c99",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-pedantic",
    "-O1",
    "-g",
];
/// The C++ compiler's strict flags.
const CXX_FLAGS: &[&str] = &[
    "-std=c++17",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-pedantic",
    "-O1",
    "-g",
];

/// `cargo xtask capi`: `dist` for the host and AArch64, then, against the installed files
/// only: the header compiled as C99 and as C++17 (and `simak.hpp` as C++17); the exported
/// symbols (`nm -D --defined-only`: `simak_*` only) and the SONAME; the C test program
/// (C99, `-Wall -Wextra -Werror -pedantic`) run natively, with `-fsanitize=address,undefined`,
/// under `valgrind --error-exitcode=1 --leak-check=full`, and built for AArch64 and run under
/// `qemu-aarch64`; the C++17 test (the seeds' three examples and execution on real data);
/// the CMake consumer configured, built and run shared and static, its output compared with
/// `simak quant`'s.
pub(crate) fn run_capi(root: &Path) -> ExitCode {
    let started = Instant::now();
    let host = match dist(root, None) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("capi: dist: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cross = match dist(root, Some(AARCH64)) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("capi: dist --target {AARCH64}: {e}");
            return ExitCode::FAILURE;
        }
    };
    let work = root.join("target").join("capi");
    let _ = std::fs::remove_dir_all(&work);
    if let Err(e) = std::fs::create_dir_all(&work) {
        eprintln!("capi: {}: {e}", work.display());
        return ExitCode::FAILURE;
    }
    let checks = checks(root, &host, &cross, &work);
    let total = checks.len();
    let mut failed = Vec::new();
    for check in checks {
        let name = check.name.clone();
        if !run_check(root, check) {
            failed.push(name);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "\ncapi: {} passed, {} failed in {seconds:.1} s",
        total - failed.len(),
        failed.len()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!("capi: failed: {}", failed.join(", "));
        ExitCode::FAILURE
    }
}

/// The checks of the `capi` step, in order.
fn checks(root: &Path, host: &Path, cross: &Path, work: &Path) -> Vec<Check> {
    let s = |p: &Path| p.display().to_string();
    let tests = root.join("bindings").join("c").join("tests");
    let include = format!("-I{}", s(&host.join("include")));
    let lib = host.join("lib");
    let rpath = format!("-Wl,-rpath,{}", s(&lib));
    let libdir = format!("-L{}", s(&lib));
    let data = s(&root.join("tests").join("data"));
    let c_test = s(&tests.join("c").join("capi_test.c"));
    let c_output_side = s(&tests.join("c").join("output_side.c"));
    let c_preproc = s(&tests.join("c").join("preproc.c"));
    let c_model = s(&tests.join("c").join("model.c"));
    let header = s(&host.join("include").join("simak").join("simak.h"));
    let hpp = s(&host.join("include").join("simak").join("simak.hpp"));
    let exe = |name: &str| s(&work.join(name));
    let mut out = Vec::new();

    let mut c99 = vec!["-fsyntax-only", "-x", "c"];
    c99.extend(C_FLAGS);
    c99.push(&header);
    out.push(Check::new("header as C99", "cc", &c99));
    let mut cxx = vec!["-fsyntax-only", "-x", "c++"];
    cxx.extend(CXX_FLAGS);
    cxx.push(&header);
    out.push(Check::new("header as C++17", "c++", &cxx));
    let mut hpp_args = vec!["-fsyntax-only", "-x", "c++"];
    hpp_args.extend(CXX_FLAGS);
    hpp_args.push(&include);
    hpp_args.push(&hpp);
    out.push(Check::new("simak.hpp as C++17", "c++", &hpp_args));
    let so = s(&lib.join(format!("libsimak.so.{VERSION}")));
    out.push(Check::new(
        "exported symbols are simak_* only, SONAME libsimak.so.0",
        "sh",
        &[
            "-c",
            "set -e; syms=$(nm -D --defined-only \"$1\" | awk '{print $3}'); \
             n=$(printf '%s\\n' \"$syms\" | grep -c .); \
             bad=$(printf '%s\\n' \"$syms\" | grep -v '^simak_' || true); \
             if [ -n \"$bad\" ]; then echo \"exported beyond simak_*: $bad\"; exit 1; fi; \
             echo \"$n symbols, all simak_*\"; \
             readelf -d \"$1\" | grep -q 'SONAME.*\\[libsimak.so.0\\]' \
               || { echo 'SONAME is not libsimak.so.0'; exit 1; }; echo 'SONAME libsimak.so.0'",
            "sh",
            &so,
        ],
    ));

    // The C test: native, sanitized, under valgrind, AArch64 under qemu.
    let build_c = |name: &str, extra: &[&str], cc: &str, inc: &str, libdir: &str, rpath: &str| {
        let mut args: Vec<String> = C_FLAGS.iter().map(|f| (*f).to_owned()).collect();
        args.extend(extra.iter().map(|f| (*f).to_owned()));
        args.extend([
            inc.to_owned(),
            c_test.clone(),
            c_output_side.clone(),
            c_preproc.clone(),
            c_model.clone(),
            "-o".to_owned(),
            exe(name),
            libdir.to_owned(),
            rpath.to_owned(),
            "-lsimak".to_owned(),
            "-lpthread".to_owned(),
            "-lm".to_owned(),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Check::new(&format!("build {name}"), cc, &args)
    };
    out.push(build_c("capi_test", &[], "cc", &include, &libdir, &rpath));
    out.push(Check::new("run capi_test", &exe("capi_test"), &[&data]));
    out.push(build_c(
        "capi_test_asan",
        &[
            "-fsanitize=address,undefined",
            "-fno-omit-frame-pointer",
            "-fno-sanitize-recover=all",
        ],
        "cc",
        &include,
        &libdir,
        &rpath,
    ));
    let mut asan = Check::new("run capi_test_asan", &exe("capi_test_asan"), &[&data]);
    asan.command
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
        .env("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1");
    out.push(asan);
    out.push(Check::new(
        "run capi_test under valgrind",
        "valgrind",
        &[
            "--error-exitcode=1",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite,indirect,possible",
            &format!("--suppressions={}", s(&tests.join("valgrind.supp"))),
            "--quiet",
            &exe("capi_test"),
            &data,
        ],
    ));
    let cross_include = format!("-I{}", s(&cross.join("include")));
    let cross_lib = cross.join("lib");
    out.push(build_c(
        "capi_test_aarch64",
        &[],
        "aarch64-linux-gnu-gcc",
        &cross_include,
        &format!("-L{}", s(&cross_lib)),
        &format!("-Wl,-rpath,{}", s(&cross_lib)),
    ));
    out.push(Check::new(
        "run capi_test_aarch64 under qemu-aarch64",
        "qemu-aarch64",
        &[
            "-cpu",
            "max",
            "-L",
            "/usr/aarch64-linux-gnu",
            &exe("capi_test_aarch64"),
            &data,
        ],
    ));

    // The C++ test: the three seed examples and execution through the wrapper.
    let cpp = tests.join("cpp");
    let seeds = tests.join("seeds");
    let mut cxx_test: Vec<String> = CXX_FLAGS.iter().map(|f| (*f).to_owned()).collect();
    cxx_test.extend([
        include.clone(),
        format!("-I{}", s(&tests.join("c"))),
        s(&cpp.join("wrapper_test.cpp")),
        s(&cpp.join("output_side_test.cpp")),
        s(&cpp.join("preproc_test.cpp")),
        s(&cpp.join("model_test.cpp")),
        s(&seeds.join("ev74_quant.cpp")),
        s(&seeds.join("a65_quant.cpp")),
        s(&seeds.join("ev74_casttess.cpp")),
        "-o".to_owned(),
        exe("wrapper_test"),
        libdir.clone(),
        rpath.clone(),
        "-lsimak".to_owned(),
    ]);
    let cxx_test: Vec<&str> = cxx_test.iter().map(String::as_str).collect();
    out.push(Check::new("build wrapper_test (C++17)", "c++", &cxx_test));
    out.push(Check::new(
        "run wrapper_test",
        &exe("wrapper_test"),
        &[&data],
    ));

    // The CMake consumer, shared and static, against target/dist only; its output equals
    // `simak quant`'s.
    let consumer = s(&tests.join("consumer"));
    let simak_cli = s(&root.join("target").join("debug").join("simak"));
    out.push(Check::new(
        "build the simak CLI (for the comparison)",
        &crate::cargo().to_string_lossy(),
        &["build", "-q", "-p", "simak-cli", "--bin", "simak"],
    ));
    const TENSOR: &str = "encoder.layer.0.attention.self.query.weight[:64]";
    let input = s(&root
        .join("tests")
        .join("data")
        .join("minilm-l6-layer0-f32-subset.safetensors"));
    for (kind, flag) in [("shared", "OFF"), ("static", "ON")] {
        let build = work.join(format!("consumer-{kind}"));
        out.push(Check::new(
            &format!("cmake configure consumer ({kind})"),
            "cmake",
            &[
                "-S",
                &consumer,
                "-B",
                &s(&build),
                &format!("-DCMAKE_PREFIX_PATH={}", s(host)),
                &format!("-DSIMAK_USE_STATIC_LIBS={flag}"),
            ],
        ));
        out.push(Check::new(
            &format!("cmake build consumer ({kind})"),
            "cmake",
            &["--build", &s(&build)],
        ));
        let result = work.join(format!("consumer-{kind}.i8"));
        let mut run = Check::new(
            &format!("run consumer ({kind})"),
            &s(&build.join("quantize")),
            &[&input, TENSOR, &s(&result)],
        );
        run.command.env_remove("LD_LIBRARY_PATH");
        out.push(run);
        let cli_out = work.join(format!("consumer-{kind}-cli.safetensors"));
        out.push(Check::new(
            &format!("simak quant on the same tensor ({kind})"),
            &simak_cli,
            &[
                "quant",
                "-q",
                "--input",
                &input,
                "--tensor",
                TENSOR,
                "--output",
                &s(&cli_out),
                "--multiplier",
                "64",
            ],
        ));
        out.push(Check::compare(
            &format!("consumer ({kind}) bytes equal simak quant's"),
            result,
            cli_out,
            TENSOR,
        ));
    }
    out
}
