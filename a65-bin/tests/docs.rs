//! `docs/errors.md` cannot go stale: every `DecodeCode` of both EV74 entries appears in its
//! table with its number, its name and a mark in its entry's column, and every row of the
//! table is a code some entry has.

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
