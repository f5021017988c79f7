//! The documents cannot go stale: `docs/errors.md` lists every `DecodeCode` with its number,
//! its name and a mark in each entry's column that can report it, every firmware status,
//! and every variant of every host error type with its stable code (no code above 255 in
//! two rows); every `sh` block of `README.md` and `a65-bin/README.md` runs, in order, in a
//! fresh folder that holds only the repository's `tests/` (the data) and an empty
//! `target/`, with `cargo run --release --bin simak --` replaced by the built binary. The
//! README's test command is checked as text only.

use std::collections::{BTreeMap, BTreeSet};

use simak::a65::ExecuteError;
use simak::ev74::firmware::FwError;
use simak::ev74::runtime::{RuntimeError, TransportError};
use simak::ev74::sim::MemoryError;
use simak::ev74::{BindError, DecodeCode, RepresentError, casttess, quant};
use simak::layout::{TileAxis, UntileError};
use simak::{AdmissionError, DType, Port};
use simak_tests::cli::{run_sh, sh_blocks};

fn errors_md() -> String {
    std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/errors.md"))
        .expect("docs/errors.md exists")
}

/// Decode-table rows by code: (name, one mark per entry column).
fn table() -> BTreeMap<u16, (String, Vec<bool>)> {
    let text = errors_md();
    let columns = simak::ev74::ENTRIES.len();
    let mut rows = BTreeMap::new();
    let mut header = false;
    for line in text.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // "| code | `Name` | yes/— × entries | meaning |" → ["", code, name, marks…, meaning, ""]
        if cells.len() == columns + 5 && cells[1] == "Code" {
            // The entry columns are the table's rows, in its order.
            let titles: Vec<&str> = simak::ev74::ENTRIES.iter().map(|e| e.title).collect();
            assert_eq!(&cells[3..3 + columns], &titles[..], "decode table columns");
            header = true;
        }
        if cells.len() != columns + 5 {
            continue;
        }
        let Ok(code) = cells[1].parse::<u16>() else {
            continue;
        };
        let name = cells[2].trim_matches('`').to_owned();
        assert!(!cells[columns + 3].is_empty(), "code {code} has no meaning");
        let marks = cells[3..3 + columns].iter().map(|c| *c == "yes").collect();
        let prev = rows.insert(code, (name, marks));
        assert!(prev.is_none(), "code {code} listed twice");
    }
    assert!(header, "the decode table has a column per entry");
    rows
}

#[test]
fn errors_md_lists_every_decode_code() {
    let rows = table();
    let all: BTreeSet<u16> = DecodeCode::ALL.iter().map(|c| c.get()).collect();
    assert_eq!(rows.keys().copied().collect::<BTreeSet<u16>>(), all);
    for c in DecodeCode::ALL {
        let (name, marks) = &rows[&c.get()];
        assert_eq!(name, &format!("{c:?}"), "code {}", c.get());
        for (entry, &mark) in simak::ev74::ENTRIES.iter().zip(marks) {
            assert_eq!(
                mark,
                entry.codes.contains(&c),
                "code {} {} mark",
                c.get(),
                entry.title
            );
        }
        assert_eq!(DecodeCode::from_u16(c.get()), Some(c));
    }
    // The entries' own lists are the table's rows.
    assert_eq!(simak::ev74::ENTRIES[0].codes, &quant::CODES[..]);
    assert_eq!(simak::ev74::ENTRIES[1].codes, &casttess::CODES[..]);
}

#[test]
fn errors_md_lists_the_firmware_status_codes() {
    let text = errors_md();
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

/// The row of a host error in `docs/errors.md`: its code (decimal up to 255, else hex),
/// `Type::Variant`, and the port for a variant that has one.
fn host_row(ty: &str, debug: &str, code: u32) -> String {
    let variant = debug
        .split([' ', '(', '{'])
        .next()
        .unwrap_or(debug)
        .to_owned();
    let port = if debug.contains("port: Input") {
        " (input)"
    } else if debug.contains("port: Output") {
        " (output)"
    } else {
        ""
    };
    let code = if code <= 0xff {
        code.to_string()
    } else {
        format!("0x{code:03x}")
    };
    format!("| {code} | `{ty}::{variant}`{port} |")
}

/// One instance of every variant of every host error type, with its type name and code.
/// Each list is kept whole by the exhaustive `match` beside it: a new variant does not
/// compile until it is added there, next to its example.
fn host_examples() -> Vec<(&'static str, String, u32)> {
    use AdmissionError as A;
    use simak::ops::preproc::PreprocError as P;
    let (i, o) = (Port::Input, Port::Output);
    let admission = [
        A::DType {
            port: i,
            found: DType::I8,
        },
        A::DType {
            port: o,
            found: DType::F32,
        },
        A::Rank {
            rank: 7,
            min: 0,
            max: 6,
        },
        A::ShapeMismatch {
            axis: 0,
            input: 1,
            output: 2,
        },
        A::StrideNotMultiple {
            port: i,
            axis: 0,
            stride: 3,
            elem_size: 4,
        },
        A::StrideNotMultiple {
            port: o,
            axis: 0,
            stride: 3,
            elem_size: 4,
        },
        A::ZeroStride {
            port: i,
            axis: 0,
            extent: 2,
        },
        A::ZeroStride {
            port: o,
            axis: 0,
            extent: 2,
        },
        A::SpanOverflow { port: i },
        A::SpanOverflow { port: o },
        A::Overlap {
            port: i,
            axis: 0,
            stride: 1,
            required: 4,
        },
        A::Overlap {
            port: o,
            axis: 0,
            stride: 1,
            required: 4,
        },
        A::MultiplierNotFinite { bits: 0x7f80_0000 },
        A::MultiplierNotPositive { bits: 0 },
        A::ZeroPointOutOfRange { zero_point: 200 },
        A::RoundingCode { code: 9 },
        A::TileAxisOutOfRange {
            role: TileAxis::W,
            axis: 3,
            rank: 2,
        },
        A::TileAxisRepeated {
            role: TileAxis::C,
            axis: 0,
        },
        A::TileExtent {
            role: TileAxis::H,
            tile: 0,
            extent: 4,
        },
        A::Planes { planes: 3 },
        A::StridesRank {
            port: i,
            extents: 2,
            strides: 1,
        },
        A::StridesRank {
            port: o,
            extents: 2,
            strides: 1,
        },
        A::InputSideEncoding,
        A::InputSideTileAlign,
        A::ChannelFlags,
        A::DequantZeroPoint {
            dtype: simak::DType::I16,
            zero_point: 40_000,
        },
        A::C16TileChannels {
            tile: 20,
            extent: 40,
        },
        A::HeadCount { count: 0 },
        A::HeadOffset {
            head: 1,
            offset: 100,
            buffer: 100,
        },
        A::HeadSpan {
            head: 1,
            offset: 90,
            span: 20,
            buffer: 100,
        },
        A::HeadOverlap { head: 1, other: 0 },
        A::Preproc(P::OddSize {
            format: simak::ops::preproc::Format::NV12,
            height: 3,
            width: 4,
        }),
        A::Preproc(P::RowStride {
            plane: 1,
            stride: 3,
            required: 4,
        }),
        A::Preproc(P::PlaneOverlap { plane: 1, other: 0 }),
        A::Preproc(P::FrameStride {
            stride: 3,
            required: 4,
        }),
        A::Preproc(P::NotFinite {
            param: simak::ops::preproc::Param::Mean,
            index: 0,
            bits: 0x7fc0_0000,
        }),
        A::Preproc(P::DivisorNotPositive { bits: 0 }),
        A::Preproc(P::StdZero { index: 0 }),
        A::Preproc(P::ChannelCount {
            param: simak::ops::preproc::Param::Std,
            given: 2,
            channels: 3,
        }),
    ];
    let _: fn(P) = |e| match e {
        P::OddSize { .. }
        | P::RowStride { .. }
        | P::PlaneOverlap { .. }
        | P::FrameStride { .. }
        | P::NotFinite { .. }
        | P::DivisorNotPositive { .. }
        | P::StdZero { .. }
        | P::ChannelCount { .. } => {}
    };
    let _: fn(A) = |e| match e {
        A::DType { .. }
        | A::Rank { .. }
        | A::ShapeMismatch { .. }
        | A::StrideNotMultiple { .. }
        | A::ZeroStride { .. }
        | A::SpanOverflow { .. }
        | A::Overlap { .. }
        | A::MultiplierNotFinite { .. }
        | A::MultiplierNotPositive { .. }
        | A::ZeroPointOutOfRange { .. }
        | A::RoundingCode { .. }
        | A::TileAxisOutOfRange { .. }
        | A::TileAxisRepeated { .. }
        | A::TileExtent { .. }
        | A::Planes { .. }
        | A::StridesRank { .. }
        | A::InputSideEncoding
        | A::InputSideTileAlign
        | A::ChannelFlags
        | A::DequantZeroPoint { .. }
        | A::C16TileChannels { .. }
        | A::HeadCount { .. }
        | A::HeadOffset { .. }
        | A::HeadSpan { .. }
        | A::HeadOverlap { .. }
        | A::Preproc(_) => {}
    };
    let represent = [
        RepresentError::Span {
            port: i,
            span: 1 << 33,
        },
        RepresentError::Span {
            port: o,
            span: 1 << 33,
        },
    ];
    let _: fn(RepresentError) = |e| match e {
        RepresentError::Span { .. } => {}
    };
    use BindError as B;
    let bind = [
        B::PacketMismatch,
        B::Unbound { port: i },
        B::Unbound { port: o },
        B::Capacity {
            port: i,
            required: 2,
            found: 1,
        },
        B::Capacity {
            port: o,
            required: 2,
            found: 1,
        },
        B::Misaligned {
            port: i,
            address: 2,
            align: 4,
        },
        B::Misaligned {
            port: o,
            address: 2,
            align: 16,
        },
        B::Range {
            port: i,
            address: 1,
            span: u64::MAX,
        },
        B::Range {
            port: o,
            address: 1,
            span: u64::MAX,
        },
        B::Overlap,
        B::UnknownSlot { slot: 40 },
        B::DuplicateRelocation { port: i },
        B::DuplicateRelocation { port: o },
    ];
    let _: fn(B) = |e| match e {
        B::PacketMismatch
        | B::Unbound { .. }
        | B::Capacity { .. }
        | B::Misaligned { .. }
        | B::Range { .. }
        | B::Overlap
        | B::UnknownSlot { .. }
        | B::DuplicateRelocation { .. } => {}
    };
    use ExecuteError as X;
    let execute = [
        X::Capacity {
            port: i,
            required: 2,
            found: 1,
        },
        X::Capacity {
            port: o,
            required: 2,
            found: 1,
        },
        X::Misaligned {
            port: i,
            address: 1,
            align: 4,
        },
        X::Misaligned {
            port: o,
            address: 1,
            align: 16,
        },
        X::AddressOverflow { port: i },
        X::AddressOverflow { port: o },
        X::Overlap,
        X::FpEnvironment { control: 0x8040 },
        X::NullPointer { port: i },
        X::NullPointer { port: o },
    ];
    let _: fn(X) = |e| match e {
        X::Capacity { .. }
        | X::Misaligned { .. }
        | X::AddressOverflow { .. }
        | X::Overlap
        | X::FpEnvironment { .. }
        | X::NullPointer { .. } => {}
    };
    let untile = [
        UntileError::Tiled {
            required: 2,
            found: 1,
        },
        UntileError::Logical {
            required: 2,
            found: 1,
        },
    ];
    let _: fn(UntileError) = |e| match e {
        UntileError::Tiled { .. } | UntileError::Logical { .. } => {}
    };
    use RuntimeError as R;
    // Wrapping variants (Bind, Device, Transport) take the inner code: no row of their own.
    let runtime = [
        R::MissingCapability {
            entry: "x",
            version: 1,
        },
        R::NotProbed { entry: "x" },
        R::NotBoundTo {
            port: i,
            packet: 1,
            buffer: 2,
        },
        R::Busy { address: 1 },
        R::Range {
            offset: 0,
            len: 2,
            capacity: 1,
        },
        R::Timeout,
        R::Aborted,
        R::NotQuiescent,
    ];
    let _: fn(R) = |e| match e {
        R::MissingCapability { .. }
        | R::NotProbed { .. }
        | R::NotBoundTo { .. }
        | R::Busy { .. }
        | R::Range { .. }
        | R::Timeout
        | R::Aborted
        | R::NotQuiescent
        | R::Bind(_)
        | R::Device(_)
        | R::Transport(_) => {}
    };
    let transport = [TransportError::Closed];
    let _: fn(TransportError) = |e| match e {
        TransportError::Closed | TransportError::Memory(_) => {}
    };
    use MemoryError as M;
    let memory = [
        M::OutOfMemory { len: 1 },
        M::Placement { address: 0, len: 1 },
        M::NotMapped { address: 1 },
        M::HostRange { address: 1, len: 1 },
        M::HostAllocation { bytes: 1 },
    ];
    let _: fn(M) = |e| match e {
        M::OutOfMemory { .. }
        | M::Placement { .. }
        | M::NotMapped { .. }
        | M::HostRange { .. }
        | M::HostAllocation { .. } => {}
    };
    let mut out = Vec::new();
    out.extend(admission.map(|e| ("AdmissionError", format!("{e:?}"), e.code())));
    out.extend(represent.map(|e| ("RepresentError", format!("{e:?}"), e.code())));
    out.extend(bind.map(|e| ("BindError", format!("{e:?}"), e.code())));
    out.extend(execute.map(|e| ("ExecuteError", format!("{e:?}"), e.code())));
    out.extend(untile.map(|e| ("UntileError", format!("{e:?}"), e.code())));
    out.extend(runtime.map(|e| ("RuntimeError", format!("{e:?}"), e.code())));
    out.extend(transport.map(|e| ("TransportError", format!("{e:?}"), e.code())));
    out.extend(memory.map(|e| ("MemoryError", format!("{e:?}"), e.code())));
    use simak::model::{ModelError, ModelErrorKind as K};
    let model = [
        K::Io(String::new()),
        K::Json(String::new()),
        K::RepeatedKey(String::new()),
        K::MissingKey,
        K::BadValue {
            expected: String::new(),
            found: String::new(),
        },
        K::ConflictingAliases {
            other: String::new(),
        },
        K::UnsupportedKernel {
            kernel: String::new(),
        },
        K::UnknownKey,
        K::ListLength {
            found: 2,
            tensors: 3,
        },
        K::BatchMismatch {
            frames: 1,
            other: String::new(),
            compiled: 2,
        },
        K::SizeMismatch {
            declared: 1,
            computed: 2,
            rule: String::new(),
        },
        K::Graph(String::new()),
        K::Shape(String::new()),
        K::InputRange { lo: 0.5, hi: 1.0 },
        K::BufferSize {
            what: String::new(),
            expected: 1,
            found: 2,
        },
        K::BufferCount {
            expected: 1,
            found: 2,
        },
        K::Index {
            side: "input",
            index: 1,
            count: 1,
        },
    ];
    // Every variant but `Stage` (which keeps its op's code) is listed above: a new variant
    // does not compile here until it is added there.
    for k in &model {
        match k {
            K::Io(_)
            | K::Json(_)
            | K::RepeatedKey(_)
            | K::MissingKey
            | K::BadValue { .. }
            | K::ConflictingAliases { .. }
            | K::UnsupportedKernel { .. }
            | K::UnknownKey
            | K::ListLength { .. }
            | K::BatchMismatch { .. }
            | K::SizeMismatch { .. }
            | K::Graph(_)
            | K::Shape(_)
            | K::InputRange { .. }
            | K::BufferSize { .. }
            | K::BufferCount { .. }
            | K::Index { .. }
            | K::Stage(_) => {}
        }
    }
    out.extend(model.map(|k| {
        let e = ModelError {
            plugin: None,
            key: None,
            kind: k,
        };
        let code = e.code();
        assert!((0x700..=0x7ff).contains(&code), "{e:?}");
        ("ModelErrorKind", format!("{:?}", e.kind), code)
    }));
    out
}

#[test]
fn errors_md_gives_every_host_error_its_code() {
    let text = errors_md();
    let mut codes_by_type: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for (ty, debug, code) in host_examples() {
        let row = host_row(ty, &debug, code);
        assert!(text.contains(&row), "docs/errors.md has no row {row}");
        assert!(
            codes_by_type.entry(ty).or_default().insert(code),
            "{ty}: code {code:#x} given to two variants"
        );
        // A twin code (≤ 255) is a descriptor rule's number.
        if code <= 0xff {
            assert!(
                DecodeCode::from_u16(code as u16).is_some(),
                "{row}: no such rule"
            );
        }
    }
    // No code above 255 stands in two rows of the host tables.
    let mut seen = BTreeSet::new();
    for line in text.lines().filter(|l| l.starts_with("| 0x")) {
        let code = line.split('|').nth(1).unwrap().trim();
        assert!(seen.insert(code.to_owned()), "{code} stands in two rows");
    }
    // The binding layer's codes: each constant has its row with its value, and every
    // BINDING_ row of the table is one of these constants.
    let bindings = [
        ("BINDING_INVALID_ENUM", simak::error::BINDING_INVALID_ENUM),
        ("BINDING_INTERNAL", simak::error::BINDING_INTERNAL),
        ("BINDING_NULL_ARGUMENT", simak::error::BINDING_NULL_ARGUMENT),
        (
            "BINDING_NEGATIVE_STRIDE",
            simak::error::BINDING_NEGATIVE_STRIDE,
        ),
        ("BINDING_READONLY", simak::error::BINDING_READONLY),
        ("BINDING_PLAN_STRIDES", simak::error::BINDING_PLAN_STRIDES),
        (
            "BINDING_NOT_CONTIGUOUS",
            simak::error::BINDING_NOT_CONTIGUOUS,
        ),
        ("BINDING_OUT_OF_RANGE", simak::error::BINDING_OUT_OF_RANGE),
        ("BINDING_CAPACITY", simak::error::BINDING_CAPACITY),
    ];
    for (name, code) in bindings {
        assert!(
            (0x600..=0x6ff).contains(&code),
            "{name} 0x{code:x} outside 0x600..=0x6ff"
        );
        let row = format!("| 0x{code:03x} | `{name}` |");
        assert!(text.contains(&row), "docs/errors.md has no row {row}");
    }
    let rows = text.lines().filter(|l| l.contains("| `BINDING_")).count();
    assert_eq!(
        rows,
        bindings.len(),
        "docs/errors.md lists other BINDING_ rows"
    );
}

/// The command the README gives for running the tests, and the command prefix every other
/// block uses for the tool.
const TEST_COMMAND: &str = "cargo xtask test";
const RUN_PREFIX: &str = "cargo run --release --bin simak --";
/// The prefix of the blocks that run the qualification programme: its own suite runs them
/// with its binary (`qualify/tests/suite/readme.rs`).
const QUALIFY_PREFIX: &str = "cargo xtask qualify ";

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
        if block.trim_start().starts_with(QUALIFY_PREFIX) {
            continue;
        }
        let script = block.replace(RUN_PREFIX, bin);
        assert!(
            !script.contains("cargo "),
            "{relative}: a block runs cargo other than as `{RUN_PREFIX}`:\n{block}"
        );
        run_sh(
            &script,
            dir.path(),
            &format!("{relative}: this block:\n{block}\n"),
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
