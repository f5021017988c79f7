//! Exhaustive 16-bit qualification of Quant (SPEC §3) on the A65 path.
//!
//! Every BF16 and every FP16 bit pattern (65536 each) × the multiplier profiles (every power
//! of two 2^-149 … 2^127, subnormal and named multipliers, fixed-seed random normals) × the
//! four rounding modes × zero points {-128, -1, 0, 1, 127}, run through `check_inference`,
//! `a65::quant::prepare` and `execute` as one contiguous [65536] tensor and compared element
//! by element with the independent f64 oracle.
//!
//! The oracle's unsaturated value is computed once per (dtype, multiplier, mode) at zero
//! point 0; other zero points add the zero point and clamp (exact in f64). A rotating subset
//! of patterns is also checked against `oracle::quant` and `oracle::saturates` directly, the
//! latter against the library's `kernels().wide` plus the zero point.
//!
//! With `SIMAK_SWEEPS=sampled` (the `nosimd` and `cross` steps) the powers of two are
//! sampled (1.0, then every sixth from 2^-149, 2^127 kept); every pattern is still run.
//!
//! The route `prepare` picks is swept in full; every other route this CPU offers (forced
//! through `prepare_at`) is swept over all patterns, multipliers and
//! modes with zero points {-128, 0, 127}.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use simak::a65;
use simak::a65::Level;
use simak::ops::quant::{Params, Request, Rounding, check_inference};
use simak::{DType, TensorSpec};
use simak_tests::bytes::{Aligned, encode};
use simak_tests::oracle;
use simak_tests::{profiles, sweeps};

const ZERO_POINTS: [i32; 5] = [-128, -1, 0, 1, 127];
const RANDOM_MULTIPLIERS: usize = 16;
const PATTERNS: usize = 1 << 16;
/// Every `SUBSET_STEP`-th pattern (rotating offset per work item) is cross-checked against
/// `oracle::quant` and `oracle::saturates` directly.
const SUBSET_STEP: usize = 29;
const MAX_REPORTED: usize = 40;

#[derive(Default)]
struct Tally {
    runs: u64,
    elements: u64,
    direct_checks: u64,
    saturation_checks: u64,
    mismatches: u64,
    report: Vec<String>,
}

impl Tally {
    fn merge(&mut self, o: Tally) {
        self.runs += o.runs;
        self.elements += o.elements;
        self.direct_checks += o.direct_checks;
        self.saturation_checks += o.saturation_checks;
        self.mismatches += o.mismatches;
        for r in o.report {
            if self.report.len() < MAX_REPORTED {
                self.report.push(r);
            }
        }
    }

    fn fail(&mut self, line: String) {
        self.mismatches += 1;
        if self.report.len() < MAX_REPORTED {
            self.report.push(line);
        }
    }
}

/// The multiplier profiles swept: all of them, or, when sweeps are sampled (the `nosimd`
/// and `cross` steps), 1.0, every sixth of the other powers of two (2^-149 and 2^127
/// kept) and every other profile (the subnormal, named and random multipliers).
fn multipliers() -> Vec<u32> {
    let all = profiles::all(RANDOM_MULTIPLIERS);
    // 1.0 is 2^0, 0x00000001 is 2^-149: 277 powers + 3 more subnormals + 0x3e99999a + 16.
    assert_eq!(all.len(), 277 + 3 + 1 + RANDOM_MULTIPLIERS);
    // `all` starts with 1.0, then the 276 other powers from 2^-149 up.
    let (powers, others) = all.split_at(277);
    let mut picked = vec![powers[0]];
    picked.extend(sweeps::pick(&powers[1..], 6));
    picked.extend_from_slice(others);
    // Both ends of the power range: 2^-149 and 2^127.
    assert!(picked.contains(&0x0000_0001) && picked.contains(&0x7f00_0000));
    if sweeps::full() {
        assert_eq!(picked, all);
    }
    picked
}

/// `None`: the route `prepare` picks; `Some(r)`: route `r` forced.
fn sweep(dtype: DType, route: Option<Level>) -> Tally {
    let zero_points: &[i32] = match route {
        None => &ZERO_POINTS,
        Some(_) => &[-128, 0, 127],
    };
    let multipliers = multipliers();
    let bits: Vec<u32> = (0..PATTERNS as u32).collect();
    let xs: Vec<f64> = bits.iter().map(|&b| oracle::decode(dtype, b)).collect();
    let input = Aligned::from_slice(&encode(dtype, &bits));
    let items: Vec<(u32, Rounding)> = multipliers
        .iter()
        .flat_map(|&m| Rounding::ALL.map(|r| (m, r)))
        .collect();
    let next = AtomicUsize::new(0);
    let total = Mutex::new(Tally::default());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                let mut t = Tally::default();
                let mut unsat = vec![0f64; PATTERNS];
                let mut out = vec![0u8; PATTERNS];
                loop {
                    let item = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(m, rounding)) = items.get(item) else {
                        break;
                    };
                    for (u, &x) in unsat.iter_mut().zip(&xs) {
                        *u = oracle::unsaturated(x, m, 0, rounding);
                    }
                    for &zp in zero_points {
                        let params = Params::from_bits(m)
                            .with_zero_point(zp)
                            .with_rounding(rounding);
                        let plan = check_inference(&Request {
                            input: TensorSpec::contiguous([PATTERNS as u64], dtype),
                            output: TensorSpec::contiguous([PATTERNS as u64], DType::I8),
                            params,
                        })
                        .expect("admitted");
                        let prepared = match route {
                            None => a65::quant::prepare(&plan),
                            Some(r) => a65::quant::prepare_at(&plan, r)
                                .expect("route available"),
                        };
                        out.fill(0xa5);
                        a65::quant::execute(&prepared, input.as_slice(), &mut out)
                            .expect("execute");
                        t.runs += 1;
                        t.elements += PATTERNS as u64;
                        for (i, (&o, &u)) in out.iter().zip(&unsat).enumerate() {
                            let want = (u + zp as f64).clamp(-128.0, 127.0) as i8;
                            if o as i8 != want {
                                t.fail(format!(
                                    "{dtype} x=0x{i:04x} m=0x{m:08x} {rounding} zp={zp}: got {} want {want}",
                                    o as i8
                                ));
                            }
                        }
                        // Direct oracle calls and the library's wide result on a subset.
                        let k = plan.kernels();
                        let mm = plan.multiplier();
                        for i in (item % SUBSET_STEP..PATTERNS).step_by(SUBSET_STEP) {
                            let b = i as u32;
                            let want = oracle::quant(dtype, b, m, zp, rounding);
                            t.direct_checks += 1;
                            if out[i] as i8 != want {
                                t.fail(format!(
                                    "{dtype} x=0x{i:04x} m=0x{m:08x} {rounding} zp={zp}: got {} want {want} (direct)",
                                    out[i] as i8
                                ));
                            }
                            let wide = (k.wide)(mm, b);
                            let lib_sat = !(-128..=127).contains(&(wide + zp));
                            let ora_sat = oracle::saturates(dtype, b, m, zp, rounding);
                            t.saturation_checks += 1;
                            if lib_sat != ora_sat {
                                t.fail(format!(
                                    "{dtype} x=0x{i:04x} m=0x{m:08x} {rounding} zp={zp}: wide {wide} saturates={lib_sat}, oracle saturates={ora_sat}"
                                ));
                            }
                        }
                    }
                }
                total.lock().unwrap().merge(t);
            });
        }
    });
    let t = total.into_inner().unwrap();
    let expected_runs = (items.len() * zero_points.len()) as u64;
    let route_name = match route {
        None => format!("prepare() -> {}", default_route(dtype).name()),
        Some(r) => format!("forced {}", r.name()),
    };
    println!(
        "{dtype} [{route_name}]: {} multipliers × 4 modes × {} zero points = {} runs, {} elements, {} direct oracle checks, {} saturation checks, {} mismatches",
        multipliers.len(),
        zero_points.len(),
        t.runs,
        t.elements,
        t.direct_checks,
        t.saturation_checks,
        t.mismatches
    );
    assert_eq!(t.runs, expected_runs);
    assert_eq!(t.elements, expected_runs * PATTERNS as u64);
    assert!(t.direct_checks >= expected_runs * (PATTERNS / SUBSET_STEP) as u64);
    assert_eq!(t.direct_checks, t.saturation_checks);
    assert!(
        t.mismatches == 0,
        "{dtype} [{route_name}]: {} mismatches; first ones:\n{}",
        t.mismatches,
        t.report.join("\n")
    );
    t
}

/// The route `prepare` picks for a contiguous [65536] tensor of `dtype`.
fn default_route(dtype: DType) -> Level {
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([PATTERNS as u64], dtype),
        output: TensorSpec::contiguous([PATTERNS as u64], DType::I8),
        params: Params::new(1.0),
    })
    .expect("admitted");
    a65::quant::prepare(&plan).level()
}

/// Every route this CPU offers other than the default one.
fn other_routes(dtype: DType) -> Vec<Level> {
    let plan = check_inference(&Request {
        input: TensorSpec::contiguous([PATTERNS as u64], dtype),
        output: TensorSpec::contiguous([PATTERNS as u64], DType::I8),
        params: Params::new(1.0),
    })
    .expect("admitted");
    let default = default_route(dtype);
    Level::ALL
        .into_iter()
        .rev()
        .filter(|&r| r != default && a65::quant::prepare_at(&plan, r).is_ok())
        .collect()
}

#[test]
fn all_bf16_patterns() {
    let t = sweep(DType::BF16, None);
    assert_eq!(t.runs, multipliers().len() as u64 * 4 * 5);
}

#[test]
fn all_f16_patterns() {
    let t = sweep(DType::F16, None);
    assert_eq!(t.runs, multipliers().len() as u64 * 4 * 5);
}

fn every_other_route(dtype: DType) {
    let routes = other_routes(dtype);
    println!(
        "{dtype}: other routes on this CPU: {:?}",
        routes.iter().map(|r| r.name()).collect::<Vec<_>>()
    );
    // The exact route exists on every CPU; it is either the default or one of the others.
    assert!(routes.contains(&Level::Scalar) || default_route(dtype) == Level::Scalar);
    for r in routes {
        let t = sweep(dtype, Some(r));
        assert_eq!(t.runs, multipliers().len() as u64 * 4 * 3);
    }
}

#[test]
fn all_bf16_patterns_every_other_route() {
    every_other_route(DType::BF16);
}

#[test]
fn all_f16_patterns_every_other_route() {
    every_other_route(DType::F16);
}

/// The profile list itself: both ends of the power-of-two range, the named multipliers.
#[test]
fn multiplier_profile_is_complete() {
    let all = profiles::all(RANDOM_MULTIPLIERS);
    for bits in [
        0x0000_0001u32, // 2^-149
        0x0000_0003,
        0x007f_ffff,
        0x0040_0001,
        0x0040_0000, // 2^-127
        0x0080_0000, // 2^-126
        0x3f80_0000, // 1.0
        0x3e99_999a,
        0x7f00_0000, // 2^127
    ] {
        assert!(all.contains(&bits), "missing multiplier 0x{bits:08x}");
    }
    let powers = profiles::powers_of_two();
    assert_eq!(powers.len(), 277);
    for (k, &b) in (-149..=127).zip(&powers) {
        assert_eq!(f32::from_bits(b) as f64, 2f64.powi(k), "2^{k}");
    }
    for &m in &profiles::random_normal(RANDOM_MULTIPLIERS) {
        let f = f32::from_bits(m);
        assert!(f.is_normal() && f > 0.0, "0x{m:08x}");
        assert_ne!(
            m & 0x7f_ffff,
            0,
            "random multiplier 0x{m:08x} is a power of two"
        );
    }
}
