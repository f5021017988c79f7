//! The committed C header `include/simak/simak.h` is what cbindgen generates from this
//! crate's source with `cbindgen.toml`: the test fails when it is stale. Run it with
//! `SIMAK_BLESS=1` to rewrite the header.

use std::path::Path;

#[test]
fn committed_header_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml parses");
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header");
    let mut generated = Vec::new();
    bindings.write(&mut generated);
    let generated = String::from_utf8(generated).expect("the header is UTF-8");
    let path = crate_dir.join("include/simak/simak.h");
    if std::env::var_os("SIMAK_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("header written");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "{} is stale (or missing): regenerate it with \
         `SIMAK_BLESS=1 cargo test -p simak-capi --test header` and commit it",
        path.display()
    );
}
