//! FP32 qualification of Quant (SPEC §3) on the A65 path.
//!
//! - Boundary patterns: every exponent field × boundary significands × both signs (zeros,
//!   subnormals, normals, infinities, NaN payloads), quarter-integer values around the INT8
//!   range, × every multiplier profile × 4 modes × zero points {-128, 0, 127}.
//! - More than 10^7 fixed-seed random bit patterns spread over multipliers and modes.
//! - The worked examples of SPEC §3 as goldens.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use simak::a65;
use simak::ops::quant::{Params, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_tests::bytes::{Aligned, encode};
use simak_tests::rng::Rng;
use simak_tests::{lib_run, oracle, profiles};

const RANDOM_MULTIPLIERS: usize = 16;
const MAX_REPORTED: usize = 40;

/// Boundary significands: 0, 1, 2, 3, the neighbours of one half (0x400000 ± 1) and of the
/// top (0x7ffffe, 0x7fffff), and a couple of quarter points.
const SIGNIFICANDS: [u32; 11] = [
    0, 1, 2, 3, 0x20_0000, 0x3f_ffff, 0x40_0000, 0x40_0001, 0x60_0000, 0x7f_fffe, 0x7f_ffff,
];

const NANS: [u32; 8] = [
    0x7f80_0001,
    0x7fc0_0000,
    0x7fff_ffff,
    0x7fa0_0000,
    0xff80_0001,
    0xffc0_0000,
    0xffff_ffff,
    0xffa0_0000,
];

fn boundary_patterns() -> Vec<u32> {
    let mut v = Vec::new();
    for sign in [0u32, 0x8000_0000] {
        for exp in 0u32..=255 {
            for &s in &SIGNIFICANDS {
                v.push(sign | (exp << 23) | s);
            }
        }
    }
    v.extend(NANS);
    v.extend([
        0,
        0x8000_0000,
        0x7f80_0000,
        0xff80_0000,
        0x7f7f_ffff,
        0xff7f_ffff,
    ]);
    // Quarter-integer values −300 … 300 (ties and near-ties for many multipliers), and
    // their binary32 neighbours.
    for q in -1200i32..=1200 {
        let b = (q as f32 / 4.0).to_bits();
        v.push(b);
        if q != 0 {
            v.push(b + 1);
            v.push(b - 1);
        }
    }
    v
}

#[derive(Default)]
struct Tally {
    runs: u64,
    /// Library runs over all routes.
    route_runs: u64,
    elements: u64,
    /// Outputs other than −128, 127 and the zero point.
    interior: u64,
    /// Elements whose binary32 product is an exact half-integer (a rounding tie).
    ties: u64,
    mismatches: u64,
    report: Vec<String>,
}

impl Tally {
    fn fail(&mut self, line: String) {
        self.mismatches += 1;
        if self.report.len() < MAX_REPORTED {
            self.report.push(line);
        }
    }

    fn merge(&mut self, o: Tally) {
        self.runs += o.runs;
        self.route_runs += o.route_runs;
        self.elements += o.elements;
        self.interior += o.interior;
        self.ties += o.ties;
        self.mismatches += o.mismatches;
        for r in o.report {
            if self.report.len() < MAX_REPORTED {
                self.report.push(r);
            }
        }
    }
}

/// Runs `bits` through the library as one contiguous tensor into `out` (pre-filled with a
/// guard so unwritten elements show up) and compares with `oracle::quant`: with the route
/// `prepare` picks and with every other route this CPU offers.
fn run_and_check(t: &mut Tally, bits: &[u32], input: &Aligned, out: &mut [u8], params: Params) {
    let n = bits.len() as u64;
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([n], DType::F32),
        output: TensorSpec::contiguous([n], DType::I8),
        params,
    })
    .expect("admitted");
    let Params {
        multiplier_bits: m,
        zero_point: zp,
        rounding,
    } = params;
    let want: Vec<i8> = bits
        .iter()
        .map(|&b| oracle::quant(DType::F32, b, m, zp, rounding))
        .collect();
    for (&b, &w) in bits.iter().zip(&want) {
        if w != -128 && w != 127 && w as i32 != zp {
            t.interior += 1;
        }
        let p = oracle::product(oracle::decode(DType::F32, b), m) as f64;
        if p.is_finite() && p.abs() < 1024.0 && (p - p.trunc()).abs() == 0.5 {
            t.ties += 1;
        }
    }
    t.runs += 1;
    t.elements += n;
    for prepared in lib_run::variants(&plan) {
        out.fill(0xa5);
        a65::quant::execute(&prepared, input.as_slice(), out).expect("execute");
        t.route_runs += 1;
        let route = prepared.implementation();
        for ((&b, &o), &want) in bits.iter().zip(out.iter()).zip(&want) {
            if o as i8 != want {
                t.fail(format!(
                    "f32 [{route}] x=0x{b:08x} m=0x{m:08x} {rounding} zp={zp}: got {} want {want}",
                    o as i8
                ));
            }
        }
    }
}

/// Runs `work(item, tally)` for `items` work items on two threads.
fn parallel(items: usize, work: impl Fn(usize, &mut Tally) + Sync) -> Tally {
    let next = AtomicUsize::new(0);
    let total = Mutex::new(Tally::default());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut t = Tally::default();
                loop {
                    let item = next.fetch_add(1, Ordering::Relaxed);
                    if item >= items {
                        break;
                    }
                    work(item, &mut t);
                }
                total.lock().unwrap().merge(t);
            });
        }
    });
    total.into_inner().unwrap()
}

#[test]
fn boundary_patterns_times_profiles() {
    let bits = boundary_patterns();
    let multipliers = profiles::all(RANDOM_MULTIPLIERS);
    assert_eq!(multipliers.len(), 297);
    let input = Aligned::from_slice(&encode(DType::F32, &bits));
    let zps = [-128, 0, 127];
    let items: Vec<(u32, Rounding, i32)> = multipliers
        .iter()
        .flat_map(|&m| Rounding::ALL.map(|r| (m, r)))
        .flat_map(|(m, r)| zps.map(|z| (m, r, z)))
        .collect();
    let t = parallel(items.len(), |i, t| {
        let (m, r, z) = items[i];
        let mut out = vec![0u8; bits.len()];
        let params = Params::from_bits(m).with_zero_point(z).with_rounding(r);
        run_and_check(t, &bits, &input, &mut out, params);
    });
    println!(
        "fp32 boundary: {} patterns × {} multipliers × 4 modes × 3 zero points = {} cases ({} library runs over all routes), {} elements ({} interior, {} ties), {} mismatches",
        bits.len(),
        multipliers.len(),
        t.runs,
        t.route_runs,
        t.elements,
        t.interior,
        t.ties,
        t.mismatches
    );
    assert!(t.interior > t.elements / 20, "too few interior outputs");
    assert!(t.ties > 40_000, "too few rounding ties");
    assert_eq!(t.runs, 297 * 4 * 3);
    assert!(
        t.route_runs >= t.runs * 2,
        "the exact route and the default route at least"
    );
    assert_eq!(t.elements, t.runs * bits.len() as u64);
    assert!(
        t.mismatches == 0,
        "{} mismatches; first ones:\n{}",
        t.mismatches,
        t.report.join("\n")
    );
}

/// Random patterns for one work item: a third fully random bits, a third whose product
/// lands near the INT8 range, a third of those with few significand bits (many ties).
fn random_patterns(rng: &mut Rng, m: u32, n: usize) -> Vec<u32> {
    let mf = f32::from_bits(m) as f64;
    (0..n)
        .map(|i| match i % 3 {
            0 => rng.next_u32(),
            kind => {
                // Target |x·m| in [2^-3, 2^9) with a random sign.
                let t = rng.range_i64(-3, 8) as i32;
                let frac = 1.0 + (rng.next_u32() as f64) / 4294967296.0;
                let target = frac * 2f64.powi(t);
                let x = (target / mf) as f32;
                let mut b = if x.is_finite() {
                    x.to_bits()
                } else {
                    rng.next_u32() & 0x7fff_ffff
                };
                let exp = b >> 23;
                if exp != 0 && exp != 0xff {
                    b ^= rng.next_u32() & 0xffff;
                    if kind == 2 {
                        b &= !0x7fff; // keep 8 significand bits: exact halves are common
                    }
                }
                b | ((rng.next_u32() & 1) << 31)
            }
        })
        .collect()
}

#[test]
fn ten_million_random_patterns() {
    const PER_ITEM: usize = 8448;
    let multipliers = profiles::all(RANDOM_MULTIPLIERS);
    let items: Vec<(u32, Rounding)> = multipliers
        .iter()
        .flat_map(|&m| Rounding::ALL.map(|r| (m, r)))
        .collect();
    let t = parallel(items.len(), |i, t| {
        let (m, r) = items[i];
        let mut rng = Rng::new(0xf32f_32f3_2000_0000 ^ i as u64);
        let zp = rng.range_i64(-128, 127) as i32;
        let bits = random_patterns(&mut rng, m, PER_ITEM);
        let input = Aligned::from_slice(&encode(DType::F32, &bits));
        let mut out = vec![0u8; bits.len()];
        let params = Params::from_bits(m).with_zero_point(zp).with_rounding(r);
        run_and_check(t, &bits, &input, &mut out, params);
    });
    println!(
        "fp32 random: {} cases ({} library runs over all routes), {} elements ({} interior, {} ties), {} mismatches",
        t.runs, t.route_runs, t.elements, t.interior, t.ties, t.mismatches
    );
    assert!(t.interior > t.elements / 3, "too few interior outputs");
    assert!(t.ties > 100_000, "too few rounding ties");
    assert_eq!(t.runs, items.len() as u64);
    assert!(
        t.route_runs >= t.runs * 2,
        "the exact route and the default route at least"
    );
    assert_eq!(t.elements, (items.len() * PER_ITEM) as u64);
    assert!(t.elements >= 10_000_000);
    assert!(
        t.mismatches == 0,
        "{} mismatches; first ones:\n{}",
        t.mismatches,
        t.report.join("\n")
    );
}

/// SPEC §3 worked examples, through the library and the oracle.
#[test]
fn spec_worked_examples() {
    let ne = Rounding::NearestEven;
    let cases: [(u32, u32, i32, i8); 3] = [
        // 15 × 0x3e99999a → binary32 4.5 → nearest-even 4 (not 5).
        (15f32.to_bits(), 0x3e99_999a, 0, 4),
        // Product 200 with zero point −100 → 100 (not 27).
        (200f32.to_bits(), 0x3f80_0000, -100, 100),
        // 1.25 × 2 with zero point −3 → −1.
        (1.25f32.to_bits(), 0x4000_0000, -3, -1),
    ];
    for (x, m, zp, want) in cases {
        assert_eq!(oracle::quant(DType::F32, x, m, zp, ne), want, "oracle");
        let params = Params::from_bits(m).with_zero_point(zp);
        assert_eq!(
            lib_run::contiguous(DType::F32, &[x], params),
            vec![want],
            "x=0x{x:08x} m=0x{m:08x} zp={zp}"
        );
    }
    // The binary32 product of the first example really is the tie 4.5.
    assert_eq!(oracle::product(15.0, 0x3e99_999a), 4.5);
}
