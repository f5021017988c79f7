//! The documents cannot go stale: every `DecodeCode` of both EV74 entries appears in the
//! table of `docs/errors.md` with its number, its name and a mark in its entry's column, and
//! every row of the table is a code some entry has; every `sh` block of `README.md` and
//! `a65-bin/README.md` runs, in order, in a fresh folder that holds only the repository's
//! `tests/` (the data) and an empty `target/`, with `cargo run --release --bin simak --`
//! replaced by the built binary. The README's test command is checked as text only.

use std::collections::BTreeMap;

use simak::ev74::casttess::DecodeCode as TessCode;
use simak::ev74::firmware::FwError;
use simak::ev74::quant::DecodeCode as QuantCode;

/// Decode-table rows by code: (name, in Quant, in CastTess).
fn table() -> BTreeMap<u16, (String, bool, bool)> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/errors.md"))
        .expect("docs/errors.md exists");
    let mut rows = BTreeMap::new();
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "| code | `Name` | yes/— | yes/— | meaning |" → ["", code, name, q, t, meaning, ""]
        if cells.len() != 7 {
            continue;
        }
        let Ok(code) = cells[1].parse::<u16>() else {
            continue;
        };
        let name = cells[2].trim_matches('`').to_owned();
        assert!(!cells[5].is_empty(), "code {code} has no meaning");
        let prev = rows.insert(code, (name, cells[3] == "yes", cells[4] == "yes"));
        assert!(prev.is_none(), "code {code} listed twice");
    }
    rows
}

#[test]
fn errors_md_lists_every_decode_code() {
    let rows = table();
    let mut seen = BTreeMap::new();
    for c in QuantCode::ALL {
        let name = format!("{c:?}");
        let row = rows
            .get(&c.get())
            .unwrap_or_else(|| panic!("Quant code {} ({name}) missing", c.get()));
        assert_eq!(row.0, name, "code {}", c.get());
        assert!(row.1, "code {} ({name}) not marked for Quant", c.get());
        seen.entry(c.get()).or_insert((false, false)).0 = true;
    }
    for c in TessCode::ALL {
        let name = format!("{c:?}");
        let row = rows
            .get(&c.get())
            .unwrap_or_else(|| panic!("CastTess code {} ({name}) missing", c.get()));
        assert_eq!(row.0, name, "code {}", c.get());
        assert!(row.2, "code {} ({name}) not marked for CastTess", c.get());
        seen.entry(c.get()).or_insert((false, false)).1 = true;
    }
    // No stale rows, no stale marks; and the enumerations agree with from_u16.
    for (code, (name, q, t)) in &rows {
        let s = seen.get(code).copied().unwrap_or_default();
        assert_eq!((*q, *t), s, "row {code} ({name}) marks");
    }
    for n in 0..=u16::MAX {
        assert_eq!(
            QuantCode::from_u16(n).is_some(),
            seen.get(&n).is_some_and(|s| s.0)
        );
        assert_eq!(
            TessCode::from_u16(n).is_some(),
            seen.get(&n).is_some_and(|s| s.1)
        );
    }
}

#[test]
fn errors_md_lists_the_firmware_status_codes() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/errors.md")).unwrap();
    for (e, name) in [
        (FwError::UnknownRoute { route: 0 }, "UnknownRoute"),
        (FwError::NotAdvertised { route: 0 }, "NotAdvertised"),
        (FwError::Version { route: 0, found: 0 }, "Version"),
        (FwError::DescriptorLength { found: 0 }, "DescriptorLength"),
        (FwError::Workers { configured: 0 }, "Workers"),
        (
            FwError::LocalMemory {
                required: 0,
                available: 0,
            },
            "LocalMemory",
        ),
        (FwError::Internal, "Internal"),
    ] {
        let row = format!("| `0x{:03x}` | `{name}` |", e.code());
        assert!(text.contains(&row), "missing {row}");
    }
    assert!(text.contains("| `0x107` | `Fault` |"));
}

/// The fenced code blocks of `markdown` whose info string is `sh`, in order.
fn sh_blocks(markdown: &str) -> Vec<String> {
    use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for event in Parser::new(markdown) {
        match event {
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))) if &*info == "sh" => {
                current = Some(String::new());
            }
            Event::Text(text) => {
                if let Some(block) = current.as_mut() {
                    block.push_str(&text);
                }
            }
            Event::End(TagEnd::CodeBlock) => blocks.extend(current.take()),
            _ => {}
        }
    }
    blocks
}

/// The command the README gives for running the tests, and the command prefix every other
/// block uses for the tool.
const TEST_COMMAND: &str = "cargo xtask test";
const RUN_PREFIX: &str = "cargo run --release --bin simak --";

/// Runs every `sh` block of the README at `relative` (from the repository root) in a fresh
/// folder; returns how many blocks ran.
fn run_readme(relative: &str) -> usize {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let text = std::fs::read_to_string(root.join(relative)).expect("README exists");
    let blocks = sh_blocks(&text);
    assert!(!blocks.is_empty(), "{relative} has no sh block");
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root.join("tests"), dir.path().join("tests")).unwrap();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    let bin = env!("CARGO_BIN_EXE_simak");
    let mut ran = 0;
    for block in blocks {
        if block.contains(TEST_COMMAND) {
            assert_eq!(
                block.trim(),
                TEST_COMMAND,
                "{relative}: the test command block"
            );
            continue;
        }
        let script = block.replace(RUN_PREFIX, bin);
        assert!(
            !script.contains("cargo "),
            "{relative}: a block runs cargo other than as `{RUN_PREFIX}`:\n{block}"
        );
        let out = std::process::Command::new("sh")
            .args(["-e", "-c", &script])
            .current_dir(dir.path())
            .output()
            .expect("sh runs");
        assert!(
            out.status.success(),
            "{relative}: this block failed ({:?}):\n{block}\nstdout:\n{}\nstderr:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    ran
}

#[test]
fn readme_commands_run_on_a_fresh_folder() {
    let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let text = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = sh_blocks(&text);
    assert!(
        blocks.iter().any(|b| b.trim() == TEST_COMMAND),
        "README.md gives `{TEST_COMMAND}` in a block of its own"
    );
    assert!(
        blocks
            .iter()
            .any(|b| b.trim() == format!("{RUN_PREFIX} demo")),
        "README.md gives the main job"
    );
    assert!(run_readme("README.md") >= 4);
}

#[test]
fn cli_readme_commands_run_on_a_fresh_folder() {
    assert!(run_readme("a65-bin/README.md") >= 7);
}
