//! The `sh` blocks of the repository README that run the programme (`cargo xtask qualify
//! ARGS`, which builds `simak-qualify` and runs it with ARGS): each runs in a fresh folder
//! with the built binary in place of `cargo xtask qualify`, as the CLI's suite does for the
//! blocks that run `simak` (`a65-bin/tests/suite/docs.rs`, which leaves these to this test).

use simak_tests::cli::{run_sh, sh_blocks};

use crate::common::BIN;

/// The prefix of the commands this test runs.
const PREFIX: &str = "cargo xtask qualify ";

#[test]
fn readme_qualify_commands_run_on_a_fresh_folder() {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let text = std::fs::read_to_string(root.join("README.md")).expect("README exists");
    let blocks: Vec<String> = sh_blocks(&text)
        .into_iter()
        .filter(|b| b.trim_start().starts_with(PREFIX))
        .collect();
    assert!(!blocks.is_empty(), "README.md has no `{PREFIX}` block");
    for block in blocks {
        assert!(
            !block.contains("--baseline"),
            "the gate builds another commit: not for a test\n{block}"
        );
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(root.join("tests"), dir.path().join("tests")).unwrap();
        std::fs::create_dir(dir.path().join("target")).unwrap();
        let script = block.replace(PREFIX.trim_end(), BIN);
        assert!(!script.contains("cargo "), "a block runs cargo:\n{block}");
        run_sh(&script, dir.path(), &format!("this block:\n{block}\n"));
    }
}
