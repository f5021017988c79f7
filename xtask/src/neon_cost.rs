//! `cargo xtask neon-cost`: per-element cost estimates of the A65's NEON routes, for a
//! machine without AArch64 hardware (issue 14, scope 6).
//!
//! 1. Builds the driver `std-adapter/examples/neon_cost.rs` for AArch64 in release mode
//!    (non-PIE, so the addresses in the trace are the ELF's), into `target/neon-cost`.
//! 2. For each workload the driver lists (every Quant route and CastTess level the
//!    `qemu-aarch64 -cpu max` CPU runs), counts the executed instructions of two runs, at
//!    one and two size steps, with `qemu-aarch64 -singlestep -d nochain,exec` (one
//!    `Trace` line per executed instruction: no plugin needed). The difference divided by
//!    the elements of one step is the kernel's instructions per element (startup, the
//!    buffers and the per-call overhead are identical in both runs and cancel).
//! 3. Finds the hot loops in the same traces: every backward branch (taken edge `from →
//!    to`, `to ≤ from`, within 4 KiB) whose range `[to, from]` executes at least 5% of the
//!    differential instructions, innermost first; the instruction at `from` must be a
//!    direct branch to `to`. Overlapping loops (an out-of-line path branching back into a
//!    loop's middle) merge into one region. Each region's instructions that ran on at
//!    least half of its iterations (`llvm-objdump`, in address order) go to `llvm-mca
//!    -mtriple=aarch64 -mcpu=cortex-a65`; its cycles per iteration (total cycles /
//!    iterations), times the region's differential iterations, summed over the regions and
//!    divided by the elements, is the estimate of cycles per element. Code outside the
//!    regions (the table's last column says how much ran there) is not estimated. LLVM's
//!    `cortex-a65` scheduling model is the in-order Cortex-A53's (the A65 is out of
//!    order): the column is a relative comparison, not a prediction.
//!
//! Prints a Markdown table (or JSON with `--json`).

use std::collections::{BTreeMap, HashMap};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::qualify::output;
use crate::test::{CROSS_TARGET, Probe, Requirement, STEPS, SystemProbe, check};

/// The tools the command needs: those of the `cross` step of `cargo xtask test` (the
/// AArch64 target, linker and qemu), and LLVM's `llvm-mca` and `llvm-objdump`.
pub(crate) fn requirements() -> Vec<Requirement> {
    let cross = STEPS
        .iter()
        .find(|s| s.name == "cross")
        .map_or(&[][..], |s| s.requires);
    let llvm = ["llvm-mca", "llvm-objdump"].map(|name| Requirement::Binary {
        name,
        apt_package: "llvm",
    });
    cross.iter().copied().chain(llvm).collect()
}

/// The scheduling model given to `llvm-mca`.
pub(crate) const MCA_CPU: &str = "cortex-a65";
/// Iterations `llvm-mca` simulates per loop.
const MCA_ITERATIONS: u32 = 200;
/// A hot loop executes at least this share of the differential instructions.
const HOT_SHARE: f64 = 0.05;
/// The longest loop considered, in bytes.
const MAX_LOOP_BYTES: u64 = 4096;

/// Options of `cargo xtask neon-cost`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct NeonCostOptions {
    /// Print JSON instead of the Markdown table.
    pub(crate) json: bool,
    /// Only the workloads whose name contains this.
    pub(crate) filter: Option<String>,
}

/// Every requirement of [`requirements`] that `probe` does not find, as one message per
/// missing tool (`None` when all are there).
pub(crate) fn missing_tools(probe: &dyn Probe) -> Option<String> {
    let missing: Vec<String> = requirements()
        .iter()
        .filter_map(|r| check(r, probe).err())
        .map(|m| format!("  {}; install with: {}\n", m.why, m.install))
        .collect();
    (!missing.is_empty()).then(|| {
        format!(
            "cargo xtask neon-cost needs tools that are missing:\n{}",
            missing.concat()
        )
    })
}

/// The executed-instruction trace of one run, summarised.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Trace {
    /// Executed instructions.
    pub(crate) total: u64,
    /// Executions per guest address.
    pub(crate) pcs: HashMap<u64, u64>,
    /// Taken backward edges `(from, to)` (`to ≤ from`, within [`MAX_LOOP_BYTES`]) and their
    /// counts.
    pub(crate) back_edges: HashMap<(u64, u64), u64>,
}

/// The guest address of one `qemu -d exec` line (`Trace 0: HOST [CS_BASE/PC/FLAGS/CFLAGS]
/// SYMBOL`), or `None` for any other line.
pub(crate) fn trace_pc(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("Trace ")?;
    let fields = &rest[rest.find('[')? + 1..];
    let fields = &fields[..fields.find(']')?];
    let pc = fields.split('/').nth(1)?;
    u64::from_str_radix(pc, 16).ok()
}

/// Summarises a trace log: one executed instruction per `Trace` line (`-singlestep`).
pub(crate) fn read_trace(log: impl std::io::BufRead) -> std::io::Result<Trace> {
    let mut trace = Trace::default();
    let mut previous: Option<u64> = None;
    for line in log.lines() {
        let Some(pc) = trace_pc(&line?) else {
            continue;
        };
        trace.total += 1;
        *trace.pcs.entry(pc).or_default() += 1;
        if let Some(from) = previous
            && pc <= from
            && from - pc < MAX_LOOP_BYTES
        {
            *trace.back_edges.entry((from, pc)).or_default() += 1;
        }
        previous = Some(pc);
    }
    Ok(trace)
}

/// One hot loop: its address range and what it executed in the differential.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct HotLoop {
    /// The loop's first instruction (the branch target).
    pub(crate) start: u64,
    /// The backward branch.
    pub(crate) end: u64,
    /// Differential executions of the first instruction (iterations).
    pub(crate) iterations: u64,
    /// Differential instructions executed in `[start, end]`.
    pub(crate) instructions: u64,
}

/// The difference `big − small` of the instructions per address.
pub(crate) fn pc_diff(big: &Trace, small: &Trace) -> BTreeMap<u64, u64> {
    big.pcs
        .iter()
        .map(|(pc, n)| {
            (
                *pc,
                n.saturating_sub(small.pcs.get(pc).copied().unwrap_or(0)),
            )
        })
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// The hot loops of the differential `big − small`, innermost, by address: the backward
/// edges whose range executes at least [`HOT_SHARE`] of the differential instructions,
/// without the loops that contain another hot one.
pub(crate) fn hot_loops(big: &Trace, small: &Trace) -> Vec<HotLoop> {
    let diff = pc_diff(big, small);
    let total = big.total.saturating_sub(small.total);
    let mut candidates: Vec<HotLoop> = big
        .back_edges
        .iter()
        .filter(|(edge, n)| **n > small.back_edges.get(edge).copied().unwrap_or(0))
        .map(|(&(end, start), _)| HotLoop {
            start,
            end,
            iterations: diff.get(&start).copied().unwrap_or(0),
            instructions: diff.range(start..=end).map(|(_, n)| n).sum(),
        })
        .filter(|l| l.instructions as f64 >= HOT_SHARE * total as f64)
        .collect();
    candidates.sort_by_key(|l| (l.start, l.end));
    candidates
        .iter()
        .filter(|a| {
            !candidates.iter().any(|b| {
                (a.start, a.end) != (b.start, b.end) && a.start <= b.start && b.end <= a.end
            })
        })
        .cloned()
        .collect()
}

/// Merges overlapping loops (an out-of-line path that branches back into a loop's middle
/// makes a second backward edge into the same code) into one region: the union of the
/// ranges, the most iterations of any, the differential instructions of the union.
pub(crate) fn merge_regions(loops: &[HotLoop], diff: &BTreeMap<u64, u64>) -> Vec<HotLoop> {
    let mut sorted = loops.to_vec();
    sorted.sort_by_key(|l| (l.start, l.end));
    let mut out: Vec<HotLoop> = Vec::new();
    for l in sorted {
        match out.last_mut() {
            Some(r) if l.start <= r.end => {
                r.end = r.end.max(l.end);
                r.iterations = r.iterations.max(l.iterations);
            }
            _ => out.push(l),
        }
    }
    for r in &mut out {
        r.instructions = diff.range(r.start..=r.end).map(|(_, n)| n).sum();
    }
    out
}

/// The instructions of `llvm-objdump -d` output, by address, as text without the
/// symbolic comments.
pub(crate) fn disassembly(objdump: &str) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    for line in objdump.lines() {
        let Some((addr, text)) = line.trim().split_once(':') else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        let text = text.split("//").next().unwrap_or("");
        let text = match text.find('<') {
            Some(at) => &text[..at],
            None => text,
        };
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if !text.is_empty() {
            out.insert(addr, text);
        }
    }
    out
}

/// Whether the instruction at `end` is a direct branch to `start` (a loop's back edge, not
/// a return or an indirect jump).
pub(crate) fn is_loop(code: &BTreeMap<u64, String>, start: u64, end: u64) -> bool {
    code.contains_key(&start) && code.get(&end).is_some_and(|i| branches_to(i, start))
}

/// The `llvm-mca` input of a region: its instructions that ran on at least half of its
/// iterations (`diff`: differential executions per address), in address order, the
/// first labelled `.Ltop`; every address operand (a branch to the region's start or
/// elsewhere, an `adr`/`adrp`/literal load) replaced by a label. `None` if nothing is
/// left.
pub(crate) fn region_asm(
    code: &BTreeMap<u64, String>,
    region: &HotLoop,
    diff: &BTreeMap<u64, u64>,
) -> Option<String> {
    let hot: Vec<&String> = code
        .range(region.start..=region.end)
        .filter(|(addr, _)| 2 * diff.get(addr).copied().unwrap_or(0) >= region.iterations)
        .map(|(_, text)| text)
        .collect();
    if hot.is_empty() {
        return None;
    }
    let mut asm = String::from(".Ltop:\n");
    for text in hot {
        let operands: Vec<String> = text
            .split(' ')
            .map(|word| {
                let bare = word.trim_end_matches(',');
                match bare.strip_prefix("0x").map(|h| u64::from_str_radix(h, 16)) {
                    Some(Ok(addr)) => {
                        let label = if addr == region.start {
                            ".Ltop"
                        } else {
                            ".Lout"
                        };
                        word.replace(bare, label)
                    }
                    _ => word.to_owned(),
                }
            })
            .collect();
        asm.push_str(&format!("  {}\n", operands.join(" ")));
    }
    asm.push_str(".Lout:\n");
    Some(asm)
}

/// Whether `instruction` (objdump text) is a direct branch to `target`.
fn branches_to(instruction: &str, target: u64) -> bool {
    let mnemonic = instruction.split(' ').next().unwrap_or("");
    let branch = mnemonic == "b"
        || mnemonic.starts_with("b.")
        || matches!(mnemonic, "cbz" | "cbnz" | "tbz" | "tbnz");
    branch
        && instruction
            .rsplit([' ', ','])
            .next()
            .and_then(|t| t.strip_prefix("0x"))
            .and_then(|h| u64::from_str_radix(h, 16).ok())
            == Some(target)
}

/// `llvm-mca`'s summary: cycles per iteration (total cycles / iterations) and the block
/// reciprocal throughput.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Mca {
    /// Total cycles divided by iterations.
    pub(crate) cycles_per_iteration: f64,
    /// "Block RThroughput".
    pub(crate) block_rthroughput: f64,
}

/// Parses `llvm-mca`'s summary view.
pub(crate) fn parse_mca(text: &str) -> Option<Mca> {
    let field = |name: &str| -> Option<f64> {
        text.lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
    };
    let iterations = field("Iterations:")?;
    let cycles = field("Total Cycles:")?;
    (iterations > 0.0).then(|| Mca {
        cycles_per_iteration: cycles / iterations,
        block_rthroughput: field("Block RThroughput:").unwrap_or(f64::NAN),
    })
}

/// One workload's estimate.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// The driver's workload name (`quant/f32/aarch64-neon`, `casttess/bf16/aarch64-neon/band`).
    pub(crate) name: String,
    /// Elements of one size step.
    pub(crate) elements: u64,
    /// Differential instructions per element.
    pub(crate) instructions_per_element: f64,
    /// The hot loops, with `llvm-mca`'s estimate when their code could be extracted.
    pub(crate) loops: Vec<(HotLoop, Option<Mca>)>,
}

impl Row {
    /// `(operation, dtype, level, path)` from the name.
    fn parts(&self) -> (&str, &str, &str, &str) {
        let mut p = self.name.split('/');
        let op = p.next().unwrap_or("");
        let dtype = p.next().unwrap_or("");
        let level = p.next().unwrap_or("");
        (op, dtype, level, p.next().unwrap_or("—"))
    }

    /// Share of the differential instructions executed inside the hot loops.
    fn coverage(&self) -> f64 {
        let covered: u64 = self.loops.iter().map(|(l, _)| l.instructions).sum();
        covered as f64 / (self.instructions_per_element * self.elements as f64)
    }

    /// Σ cycles per iteration × iterations ÷ elements; `None` if a loop has no estimate.
    pub(crate) fn cycles_per_element(&self) -> Option<f64> {
        let mut cycles = 0.0;
        for (l, mca) in &self.loops {
            cycles += mca.as_ref()?.cycles_per_iteration * l.iterations as f64;
        }
        (!self.loops.is_empty()).then(|| cycles / self.elements as f64)
    }

    /// Elements per iteration of each hot loop, e.g. `16` or `16, 64`.
    fn elements_per_iteration(&self) -> String {
        let parts: Vec<String> = self
            .loops
            .iter()
            .map(|(l, _)| format_number(self.elements as f64 / l.iterations.max(1) as f64))
            .collect();
        parts.join(", ")
    }
}

/// Two significant decimals below 10, one below 100, none above.
fn format_number(x: f64) -> String {
    if !x.is_finite() {
        "—".to_owned()
    } else if x.abs() < 10.0 {
        format!("{x:.2}")
    } else if x.abs() < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// The Markdown table of `rows`.
pub(crate) fn markdown(rows: &[Row]) -> String {
    let mut out = String::from(
        "| op | dtype | route / level | path | instructions / element | hot loops: elements / iteration | llvm-mca cycles / element (Cortex-A53-model estimate, for relative comparison only) | instructions in hot loops |\n\
         | --- | --- | --- | --- | ---: | ---: | ---: | ---: |\n",
    );
    for row in rows {
        let (op, dtype, level, path) = row.parts();
        out.push_str(&format!(
            "| {op} | {dtype} | {level} | {path} | {} | {} | {} | {:.0}% |\n",
            format_number(row.instructions_per_element),
            row.elements_per_iteration(),
            row.cycles_per_element()
                .map_or("—".to_owned(), format_number),
            100.0 * row.coverage(),
        ));
    }
    out
}

/// The JSON document of `rows` (hand-written: xtask has no dependencies).
pub(crate) fn json(rows: &[Row]) -> String {
    let num = |x: f64| match x.is_finite() {
        true => format!("{x}"),
        false => "null".to_owned(),
    };
    let mut items = Vec::new();
    for row in rows {
        let (op, dtype, level, path) = row.parts();
        let loops: Vec<String> = row
            .loops
            .iter()
            .map(|(l, mca)| {
                format!(
                    "{{\"start\": {}, \"end\": {}, \"iterations\": {}, \"instructions\": {}, \"mca_cycles_per_iteration\": {}, \"mca_block_rthroughput\": {}}}",
                    l.start,
                    l.end,
                    l.iterations,
                    l.instructions,
                    mca.map_or("null".to_owned(), |m| num(m.cycles_per_iteration)),
                    mca.map_or("null".to_owned(), |m| num(m.block_rthroughput)),
                )
            })
            .collect();
        items.push(format!(
            "    {{\"name\": \"{}\", \"op\": \"{op}\", \"dtype\": \"{dtype}\", \"level\": \"{level}\", \"path\": \"{path}\", \"elements\": {}, \"instructions_per_element\": {}, \"mca_cycles_per_element\": {}, \"hot_loop_coverage\": {}, \"loops\": [{}]}}",
            row.name,
            row.elements,
            num(row.instructions_per_element),
            row.cycles_per_element().map_or("null".to_owned(), num),
            num(row.coverage()),
            loops.join(", ")
        ));
    }
    format!(
        "{{\n  \"mca_cpu\": \"{MCA_CPU}\",\n  \"mca_note\": \"Cortex-A53-model estimate, for relative comparison only\",\n  \"rows\": [\n{}\n  ]\n}}\n",
        items.join(",\n")
    )
}

/// Where the build and the traces go.
fn out_dir(root: &Path) -> PathBuf {
    root.join("target").join("neon-cost")
}

/// The driver binary.
fn driver(root: &Path) -> PathBuf {
    out_dir(root)
        .join(CROSS_TARGET)
        .join("release")
        .join("examples")
        .join("neon_cost")
}

/// `qemu-aarch64 -cpu max -L /usr/aarch64-linux-gnu [extra] DRIVER args`.
fn qemu(root: &Path, extra: &[&str], args: &[&str]) -> Command {
    let mut c = Command::new("qemu-aarch64");
    c.args(["-cpu", "max", "-L", "/usr/aarch64-linux-gnu"])
        .args(extra)
        .arg(driver(root))
        .args(args)
        .current_dir(root);
    c
}

/// Counts one run of `workload` at `k` size steps.
fn count(root: &Path, workload: &str, k: u32) -> Result<Trace, String> {
    // One file per xtask process: two runs at once must not share a log.
    let log = out_dir(root).join(format!("trace-{}.log", std::process::id()));
    let log_arg = log.to_string_lossy().into_owned();
    let k = k.to_string();
    output(&mut qemu(
        root,
        &["-singlestep", "-d", "nochain,exec", "-D", &log_arg],
        &["run", workload, &k],
    ))?;
    let file = std::fs::File::open(&log).map_err(|e| format!("cannot read {log_arg}: {e}"))?;
    let trace = read_trace(BufReader::new(file)).map_err(|e| format!("{log_arg}: {e}"))?;
    let _ = std::fs::remove_file(&log);
    Ok(trace)
}

/// The driver's disassembly over `[start, end]`.
fn objdump(root: &Path, start: u64, end: u64) -> Result<BTreeMap<u64, String>, String> {
    let mut objdump = Command::new("llvm-objdump");
    objdump
        .args(["-d", "--no-show-raw-insn"])
        .arg(format!("--start-address=0x{start:x}"))
        .arg(format!("--stop-address=0x{:x}", end + 4))
        .arg(driver(root));
    Ok(disassembly(&output(&mut objdump)?))
}

/// `llvm-mca` on `asm` (written to `target/neon-cost/region.s`).
fn mca(root: &Path, asm: &str) -> Result<Option<Mca>, String> {
    let file = out_dir(root).join(format!("region-{}.s", std::process::id()));
    std::fs::write(&file, asm).map_err(|e| format!("cannot write {}: {e}", file.display()))?;
    let text = output(
        Command::new("llvm-mca")
            .args([
                "-mtriple=aarch64",
                &format!("-mcpu={MCA_CPU}"),
                &format!("-iterations={MCA_ITERATIONS}"),
                "-summary-view",
                "-instruction-info=false",
                "-resource-pressure=false",
            ])
            .arg(&file),
    )
    .map_err(|e| format!("{e}\n{asm}"))?;
    Ok(parse_mca(&text))
}

/// The hot regions of one workload (verified loops, overlapping ones merged), each with
/// `llvm-mca`'s estimate.
fn estimate(
    root: &Path,
    big: &Trace,
    small: &Trace,
) -> Result<Vec<(HotLoop, Option<Mca>)>, String> {
    let diff = pc_diff(big, small);
    let mut loops = Vec::new();
    for l in hot_loops(big, small) {
        if is_loop(&objdump(root, l.start, l.end)?, l.start, l.end) {
            loops.push(l);
        }
    }
    let mut out = Vec::new();
    for region in merge_regions(&loops, &diff) {
        let code = objdump(root, region.start, region.end)?;
        let estimate = match region_asm(&code, &region, &diff) {
            Some(asm) => mca(root, &asm)?,
            None => None,
        };
        out.push((region, estimate));
    }
    Ok(out)
}

/// Builds the driver, measures every workload and prints the table.
pub(crate) fn run(root: &Path, options: &NeonCostOptions) -> ExitCode {
    if let Some(message) = missing_tools(&SystemProbe) {
        eprint!("error: {message}");
        return ExitCode::FAILURE;
    }
    match measure(root, options) {
        Ok(rows) => {
            print!(
                "{}",
                match options.json {
                    true => json(&rows),
                    false => markdown(&rows),
                }
            );
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn measure(root: &Path, options: &NeonCostOptions) -> Result<Vec<Row>, String> {
    eprintln!("==> building the AArch64 driver (std-adapter/examples/neon_cost.rs)");
    let mut build = Command::new(crate::cargo());
    build
        .args([
            "build",
            "--release",
            "-p",
            "simak",
            "--example",
            "neon_cost",
            "--target",
            CROSS_TARGET,
        ])
        .env("CARGO_TARGET_DIR", out_dir(root))
        .env(
            "CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER",
            "aarch64-linux-gnu-gcc",
        )
        // Non-PIE: the trace's addresses are the ELF's, for llvm-objdump.
        .env("RUSTFLAGS", "-C relocation-model=static")
        .current_dir(root);
    let status = build
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("building the driver failed ({status})"));
    }
    let list = output(&mut qemu(root, &[], &["list"]))?;
    let mut rows = Vec::new();
    for line in list.lines() {
        let Some((name, elements)) = line.split_once(' ') else {
            continue;
        };
        if options
            .filter
            .as_ref()
            .is_some_and(|f| !name.contains(f.as_str()))
        {
            continue;
        }
        let elements: u64 = elements
            .trim()
            .parse()
            .map_err(|_| format!("the driver's list line `{line}` has no element count"))?;
        eprintln!("==> {name}: counting under qemu-aarch64 -singlestep");
        let small = count(root, name, 1)?;
        let big = count(root, name, 2)?;
        let diff = big.total.saturating_sub(small.total);
        let loops = estimate(root, &big, &small)?;
        rows.push(Row {
            name: name.to_owned(),
            elements,
            instructions_per_element: diff as f64 / elements as f64,
            loops,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A trace log of `pcs`, in qemu 7.2's `-d exec` format, with a noise line.
    fn log(pcs: &[u64]) -> String {
        let mut s = String::from("some other log line\n");
        for pc in pcs {
            s.push_str(&format!(
                "Trace 0: 0x7f6510000100 [0000000001009331/{pc:016x}/00000001/00000201] \n"
            ));
        }
        s
    }

    /// Straight code `0x100..0x110`, then `iters` iterations of the loop `0x200..=0x20c`
    /// (with an inner loop `0x204..=0x208` run twice per outer iteration), then `0x300`.
    fn program(iters: usize) -> Vec<u64> {
        let mut pcs: Vec<u64> = (0..4).map(|i| 0x100 + 4 * i).collect();
        for _ in 0..iters {
            pcs.push(0x200);
            for _ in 0..2 {
                pcs.extend([0x204, 0x208]);
            }
            pcs.push(0x20c);
        }
        pcs.push(0x300);
        pcs
    }

    #[test]
    fn trace_lines_give_the_guest_pc() {
        assert_eq!(
            trace_pc(
                "Trace 0: 0x7f6510000240 [0000000001009331/000000550081bc44/00000001/00000201] "
            ),
            Some(0x55_0081_bc44)
        );
        assert_eq!(trace_pc("Trace 0: 0x7f65 [0/zz/1/2]"), None);
        assert_eq!(trace_pc("IN: "), None);
    }

    #[test]
    fn differential_counts_and_innermost_hot_loop() {
        let small = read_trace(log(&program(10)).as_bytes()).unwrap();
        let big = read_trace(log(&program(30)).as_bytes()).unwrap();
        assert_eq!(small.total, 4 + 10 * 6 + 1);
        assert_eq!(big.total - small.total, 20 * 6);
        // Edges 0x208 → 0x204 (inner) and 0x20c → 0x200 (outer); only the inner one is
        // reported, as it lies inside the outer.
        assert_eq!(big.back_edges[&(0x208, 0x204)], 30);
        assert_eq!(big.back_edges[&(0x20c, 0x200)], 29);
        let loops = hot_loops(&big, &small);
        assert_eq!(
            loops,
            vec![HotLoop {
                start: 0x204,
                end: 0x208,
                iterations: 40,
                instructions: 80,
            }]
        );
    }

    #[test]
    fn loop_extraction_labels_the_branches() {
        let objdump = "\n\
            target/x:\tfile format elf64-littleaarch64\n\n\
            Disassembly of section .text:\n\n\
            0000000000401000 <_ZN4core3foo17h0123456789abcdefE>:\n\
            \x20 401000:      \tldr\tq0, [x8], #16\n\
            \x20 401004:      \tcbz\tx3, 0x401200 <_ZN4core3foo17h0123456789abcdefE+0x200>\n\
            \x20 401008:      \tadrp\tx9, 0x450000 <bar>\n\
            \x20 40100c:      \tsubs\tx2, x2, #1\n\
            \x20 401010:      \tb.ne\t0x401000 <_ZN4core3foo17h0123456789abcdefE>\n";
        let code = disassembly(objdump);
        assert_eq!(code.len(), 5);
        assert!(is_loop(&code, 0x401000, 0x401010));
        // Not a loop: the instruction at the end branches elsewhere, or there is none.
        assert!(!is_loop(&code, 0x401000, 0x401004));
        assert!(!is_loop(&code, 0x401004, 0x401010));
        assert!(!is_loop(&code, 0x401000, 0x401014));
        // 10 iterations; the `adrp` ran on 4 of them (cold: left out), the rest on all.
        let diff: BTreeMap<u64, u64> = [
            (0x401000, 10),
            (0x401004, 10),
            (0x401008, 4),
            (0x40100c, 10),
            (0x401010, 10),
        ]
        .into_iter()
        .collect();
        let region = HotLoop {
            start: 0x401000,
            end: 0x401010,
            iterations: 10,
            instructions: 44,
        };
        assert_eq!(
            region_asm(&code, &region, &diff).unwrap(),
            ".Ltop:\n  ldr q0, [x8], #16\n  cbz x3, .Lout\n  subs x2, x2, #1\n  b.ne .Ltop\n.Lout:\n"
        );
        let diff_all: BTreeMap<u64, u64> = code.keys().map(|a| (*a, 10)).collect();
        assert!(
            region_asm(&code, &region, &diff_all)
                .unwrap()
                .contains("  adrp x9, .Lout\n")
        );
    }

    #[test]
    fn overlapping_loops_merge_into_one_region() {
        let l = |start, end, iterations| HotLoop {
            start,
            end,
            iterations,
            instructions: 0,
        };
        let diff: BTreeMap<u64, u64> = (0x100..0x200).step_by(4).map(|a| (a, 2)).collect();
        // 0x100..=0x140 and 0x120..=0x180 overlap; 0x1c0..=0x1d0 stands apart.
        let regions = merge_regions(
            &[l(0x120, 0x180, 7), l(0x1c0, 0x1d0, 3), l(0x100, 0x140, 5)],
            &diff,
        );
        assert_eq!(
            regions,
            vec![
                HotLoop {
                    start: 0x100,
                    end: 0x180,
                    iterations: 7,
                    instructions: 2 * 33,
                },
                HotLoop {
                    start: 0x1c0,
                    end: 0x1d0,
                    iterations: 3,
                    instructions: 2 * 5,
                },
            ]
        );
    }

    #[test]
    fn mca_summary_and_table() {
        let text = "Iterations:        200\nInstructions:      1200\nTotal Cycles:      1502\n\
                    Total uOps:        700\n\nDispatch Width:    2\nBlock RThroughput: 3.5\n";
        let m = parse_mca(text).unwrap();
        assert_eq!(m.cycles_per_iteration, 7.51);
        assert_eq!(m.block_rthroughput, 3.5);
        assert_eq!(parse_mca("Iterations: 0\nTotal Cycles: 5\n"), None);
        let row = Row {
            name: "casttess/bf16/aarch64-neon/band".to_owned(),
            elements: 1000,
            instructions_per_element: 0.5,
            loops: vec![(
                HotLoop {
                    start: 0,
                    end: 4,
                    iterations: 40,
                    instructions: 400,
                },
                Some(m),
            )],
        };
        // 7.51 cycles × 40 iterations / 1000 elements; 25 elements per iteration; 400 of
        // the 500 differential instructions in the loop.
        assert_eq!(row.cycles_per_element(), Some(7.51 * 40.0 / 1000.0));
        let table = markdown(&[row]);
        assert!(
            table.contains("| casttess | bf16 | aarch64-neon | band | 0.50 | 25.0 | 0.30 | 80% |"),
            "{table}"
        );
        assert!(table.contains("Cortex-A53-model estimate, for relative comparison only"));
    }

    #[test]
    fn every_missing_tool_is_named_with_its_install_hint() {
        struct Nothing;
        impl Probe for Nothing {
            fn installed_targets(&self) -> Result<Vec<String>, String> {
                Ok(Vec::new())
            }
            fn installed_components(&self, _: Option<&str>) -> Result<Vec<String>, String> {
                Ok(Vec::new())
            }
            fn on_path(&self, binary: &str) -> bool {
                binary == "qemu-aarch64"
            }
            fn python_module(&self, _: &str) -> bool {
                false
            }
        }
        let message = missing_tools(&Nothing).unwrap();
        for hint in [
            "rustup target add aarch64-unknown-linux-gnu",
            "`aarch64-linux-gnu-gcc` is not on PATH; install with: apt-get install gcc-aarch64-linux-gnu",
            "`llvm-mca` is not on PATH; install with: apt-get install llvm",
            "`llvm-objdump` is not on PATH; install with: apt-get install llvm",
        ] {
            assert!(message.contains(hint), "{message}");
        }
        assert!(!message.contains("qemu-user"), "{message}");
    }
}
