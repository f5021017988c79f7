//! Repository checks run as a `#[test]`: banned stubs and test attributes, trailing
//! whitespace, module docs, no reference to a folder outside the repository, and the size
//! limits of committed files.
//!
//! The banned patterns are assembled from pieces so that this file does not match itself.

use std::fs;
use std::path::{Path, PathBuf};

/// Directories whose `src/` files must open with a `//!` module doc.
const MODULE_DOC_ROOTS: &[&str] = &["core/src", "std-adapter/src", "ev74-fw/src"];

/// Extensions checked for trailing whitespace.
const WHITESPACE_EXTENSIONS: &[&str] = &["rs", "toml", "md"];

/// Extensions of the text files (sources, tests, docs, READMEs, scripts) that must not name
/// a folder outside the repository.
const TEXT_EXTENSIONS: &[&str] = &[
    "rs", "toml", "md", "sh", "py", "pyi", "txt", "yml", "yaml", "h", "hpp", "c", "cpp", "in",
];

/// Largest committed file, in bytes.
const MAX_FILE_BYTES: u64 = 2 << 20;
/// Largest total of `tests/data/`, in bytes.
const MAX_DATA_BYTES: u64 = 12 << 20;

/// The sibling folder of the development layout that a fresh clone does not have; assembled
/// from pieces so that this file does not match itself.
fn outside_folder() -> String {
    ["..", "/", "shared"].concat()
}

/// Finds lines naming the folder outside the repository; each entry is "line N: ...".
fn check_outside_references(text: &str) -> Vec<String> {
    let folder = outside_folder();
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.contains(folder.as_str()))
        .map(|(line_idx, _)| {
            format!(
                "line {}: names `{folder}`, which a fresh clone does not have; copy what is \
                 needed into the repository (tests/data/, bench/peers/, docs/contract.md)",
                line_idx + 1
            )
        })
        .collect()
}

/// The committed files (`git ls-files`), or every workspace file when git cannot tell.
fn committed_files(root: &Path) -> Vec<PathBuf> {
    let listed = std::process::Command::new("git")
        .args(["ls-files", "-z"])
        .current_dir(root)
        .output();
    match listed {
        Ok(out) if out.status.success() => out
            .stdout
            .split(|&b| b == 0)
            .filter(|name| !name.is_empty())
            .map(|name| root.join(String::from_utf8_lossy(name).as_ref()))
            .filter(|path| path.is_file())
            .collect(),
        _ => workspace_files(root),
    }
}

/// Size problems among `(relative path, bytes)` pairs: a file over [`MAX_FILE_BYTES`], and
/// `tests/data/` over [`MAX_DATA_BYTES`] in all.
fn check_sizes(files: &[(PathBuf, u64)]) -> Vec<String> {
    let mut problems: Vec<String> = files
        .iter()
        .filter(|(_, bytes)| *bytes > MAX_FILE_BYTES)
        .map(|(path, bytes)| {
            format!(
                "{}: {bytes} bytes, above the {MAX_FILE_BYTES}-byte limit for a committed file",
                path.display()
            )
        })
        .collect();
    let data: u64 = files
        .iter()
        .filter(|(path, _)| path.starts_with("tests/data"))
        .map(|(_, bytes)| bytes)
        .sum();
    if data > MAX_DATA_BYTES {
        problems.push(format!(
            "tests/data: {data} bytes in all, above the {MAX_DATA_BYTES}-byte limit"
        ));
    }
    problems
}

/// Code patterns that must not appear in any `.rs` file, with the reason.
fn banned_patterns() -> [(String, &'static str); 4] {
    let bang_paren = "!(";
    [
        (
            ["todo", bang_paren].concat(),
            "stub left in the code; finish it or return an error",
        ),
        (
            ["unimplemented", bang_paren].concat(),
            "stub left in the code; finish it or return an error",
        ),
        (
            ["#[", "ignore"].concat(),
            "ignored test; fix it or delete it",
        ),
        (
            ["#[", "should_panic"].concat(),
            "panic test; assert the `Err` value instead",
        ),
    ]
}

/// Finds banned patterns in a `.rs` file's text; each entry is "line N: message".
fn check_banned(text: &str) -> Vec<String> {
    let patterns = banned_patterns();
    let mut problems = Vec::new();
    for (line_idx, line) in text.lines().enumerate() {
        for (pattern, reason) in &patterns {
            if line.contains(pattern.as_str()) {
                problems.push(format!("line {}: `{pattern}`: {reason}", line_idx + 1));
            }
        }
    }
    problems
}

/// Finds lines ending in spaces or tabs; each entry is "line N: ...".
fn check_trailing_whitespace(text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.ends_with([' ', '\t']))
        .map(|(line_idx, _)| format!("line {}: trailing whitespace", line_idx + 1))
        .collect()
}

/// Whether the first non-empty line is a `//!` module doc.
fn has_module_doc(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .is_some_and(|line| line.starts_with("//!"))
}

/// Every file under `root`, skipping `.git`, `target*` directories and `fuzz/target`.
fn workspace_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let entry = entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let path = entry.path();
            let file_type = entry
                .file_type()
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if file_type.is_dir() {
                let skipped = name == ".git"
                    || name.starts_with("target")
                    || path.ends_with(Path::new("fuzz").join("target"));
                if !skipped {
                    pending.push(path);
                }
            } else if file_type.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn extension(path: &Path) -> &str {
    path.extension().and_then(|e| e.to_str()).unwrap_or("")
}

#[test]
fn tidy() {
    let root = crate::project_root();
    let mut problems = Vec::new();
    let mut n_checked = 0usize;
    for path in workspace_files(&root) {
        let ext = extension(&path);
        let is_rs = ext == "rs";
        let is_text = TEXT_EXTENSIONS.contains(&ext) || ext.is_empty();
        if !is_text {
            continue;
        }
        let Ok(text) = fs::read_to_string(&path) else {
            // Not UTF-8 (or vanished while walking): nothing to check as text.
            continue;
        };
        n_checked += 1;
        let relative = path.strip_prefix(&root).unwrap_or(&path);
        let shown = relative.display();
        let mut found = check_outside_references(&text);
        if is_rs || WHITESPACE_EXTENSIONS.contains(&ext) {
            found.extend(check_trailing_whitespace(&text));
        }
        if is_rs {
            found.extend(check_banned(&text));
            let needs_doc = MODULE_DOC_ROOTS
                .iter()
                .any(|doc_root| relative.starts_with(doc_root));
            if needs_doc && !has_module_doc(&text) {
                found.push("line 1: the file must open with a `//!` module doc".to_owned());
            }
        }
        problems.extend(found.into_iter().map(|p| format!("{shown}: {p}")));
    }
    assert!(
        n_checked > 0,
        "tidy found no files under {}",
        root.display()
    );
    let sizes: Vec<(PathBuf, u64)> = committed_files(&root)
        .into_iter()
        .map(|path| {
            let bytes = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let relative = path.strip_prefix(&root).unwrap_or(&path).to_path_buf();
            (relative, bytes)
        })
        .collect();
    problems.extend(check_sizes(&sizes));
    assert!(
        problems.is_empty(),
        "tidy found {} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn banned_patterns_are_found() {
    let stub = ["let x = ", "todo", "!();"].concat();
    let attribute = ["#[", "ignore", "]"].concat();
    let text = format!("fn f() {{\n    {stub}\n}}\n{attribute}\nfn g() {{}}\n");
    let problems = check_banned(&text);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].starts_with("line 2: "), "{}", problems[0]);
    assert!(problems[1].starts_with("line 4: "), "{}", problems[1]);
    assert!(check_banned("fn todo() {}\n// ignore this\n").is_empty());
}

#[test]
fn outside_references_are_found() {
    let line = ["see ", "..", "/shared/SPEC.md"].concat();
    let problems = check_outside_references(&format!("ok\n{line}\nshared memory\n"));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("line 2: "), "{}", problems[0]);
}

#[test]
fn size_limits_are_enforced() {
    let mib = 1u64 << 20;
    let ok = [
        (PathBuf::from("tests/data/a.bin"), 2 * mib),
        (PathBuf::from("README.md"), 10),
    ];
    assert!(check_sizes(&ok).is_empty());
    let big = [(PathBuf::from("core/x.bin"), 2 * mib + 1)];
    assert_eq!(check_sizes(&big).len(), 1);
    let many: Vec<(PathBuf, u64)> = (0..7)
        .map(|k| (PathBuf::from(format!("tests/data/{k}.bin")), 2 * mib))
        .collect();
    let problems = check_sizes(&many);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0].starts_with("tests/data: "), "{}", problems[0]);
}

#[test]
fn trailing_whitespace_is_found() {
    assert_eq!(
        check_trailing_whitespace("ok\nspace \n\ttab\t\nlast"),
        ["line 2: trailing whitespace", "line 3: trailing whitespace"]
    );
    assert!(check_trailing_whitespace("a\r\nb\n").is_empty());
}

#[test]
fn module_doc_must_come_first() {
    assert!(has_module_doc("\n//! Tagline.\n\nuse x;\n"));
    assert!(!has_module_doc("#![no_std]\n//! Tagline.\n"));
    assert!(!has_module_doc("/// Item doc.\nfn f() {}\n"));
    assert!(!has_module_doc(""));
}
