//! The binding-layer codes (`simak::error::BINDING_*`) each have their row in
//! `docs/errors.md`, with the value the constant has, and no two share a value.

use std::collections::BTreeSet;

#[test]
fn every_binding_code_has_its_row() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/errors.md");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let codes = [
        ("BINDING_INVALID_ENUM", simak::error::BINDING_INVALID_ENUM),
        ("BINDING_INTERNAL", simak::error::BINDING_INTERNAL),
        (
            "BINDING_NEGATIVE_STRIDE",
            simak::error::BINDING_NEGATIVE_STRIDE,
        ),
        ("BINDING_READONLY", simak::error::BINDING_READONLY),
    ];
    let mut seen = BTreeSet::new();
    for (name, code) in codes {
        assert!(
            (0x600..=0x6ff).contains(&code),
            "{name} 0x{code:x} outside 0x600..=0x6ff"
        );
        assert!(seen.insert(code), "{name}: 0x{code:x} used twice");
        let row = format!("| 0x{code:03x} | `{name}` |");
        assert!(text.contains(&row), "docs/errors.md has no row {row}");
    }
    // Every binding row of the table is one of these constants.
    let rows = text.lines().filter(|l| l.contains("| `BINDING_")).count();
    assert_eq!(
        rows,
        codes.len(),
        "docs/errors.md lists other BINDING_ rows"
    );
}
