//! Gives the shared library its SONAME, `libsimak.so.0` (the ABI's major version), so that
//! programs linked against `libsimak.so` record the versioned name (`cargo xtask dist`
//! installs `libsimak.so.0.1.0` with the links `libsimak.so.0` and `libsimak.so`).

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libsimak.so.0");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
