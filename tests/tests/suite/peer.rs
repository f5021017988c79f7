//! Third-party vectors (`tests/data/peer/*.json`): every `agreeing` entry whose op is
//! `quantize` must match through the library, with the entry's shape (`[]` = rank 0).
//! Cast entries belong to CastTess and are skipped here, explicitly by op.

use simak::DType;
use simak::ops::quant::{Params, Rounding};
use simak_tests::peer::{self, Entry};
use simak_tests::{lib_run, oracle};

fn shape<const R: usize>(e: &Entry) -> [u64; R] {
    e.shape
        .as_slice()
        .try_into()
        .unwrap_or_else(|_| panic!("{}: rank {} is not {R}", e.name, e.shape.len()))
}

/// Runs an entry with its own rank through the const-generic API.
fn run(e: &Entry, params: Params) -> Vec<i8> {
    let d = e.dtype;
    let b = &e.in_bits;
    match e.shape.len() {
        0 => lib_run::shaped::<0>(d, shape(e), b, params),
        1 => lib_run::shaped::<1>(d, shape(e), b, params),
        2 => lib_run::shaped::<2>(d, shape(e), b, params),
        3 => lib_run::shaped::<3>(d, shape(e), b, params),
        4 => lib_run::shaped::<4>(d, shape(e), b, params),
        5 => lib_run::shaped::<5>(d, shape(e), b, params),
        6 => lib_run::shaped::<6>(d, shape(e), b, params),
        r => panic!("{}: rank {r} is outside 0..=6", e.name),
    }
}

#[test]
fn agreeing_quantize_entries_match() {
    let files = peer::files();
    assert!(
        files.len() >= 6,
        "peer folder {} looks incomplete",
        peer::DIR
    );
    let (mut checked, mut elements, mut skipped_cast) = (0usize, 0usize, 0usize);
    let mut failures = Vec::new();
    let mut ranks = [0usize; 7];
    for path in &files {
        for e in peer::agreeing(path) {
            assert!(
                e.agrees,
                "{}: {} is in `agreeing` but not marked so",
                e.file, e.name
            );
            match e.op.as_str() {
                "quantize" => {}
                "cast_bf16" => {
                    skipped_cast += 1;
                    continue;
                }
                other => panic!("{}: {}: unknown op {other}", e.file, e.name),
            }
            let expected = e
                .expected_i8
                .as_ref()
                .unwrap_or_else(|| panic!("{}: quantize entry without values", e.name));
            let count: u64 = e.shape.iter().product();
            assert_eq!(count as usize, e.in_bits.len(), "{}: shape vs data", e.name);
            assert_eq!(
                expected.len(),
                e.in_bits.len(),
                "{}: expected vs data",
                e.name
            );
            assert_eq!(e.rounding, "nearest-even", "{}", e.name);
            let m = e.multiplier_bits.expect("quantize entry has a multiplier");
            let zp = e.zero_point.expect("quantize entry has a zero point");
            let rounding = Rounding::NearestEven;
            // The oracle must agree with the peer (the file says it was checked so).
            let ours: Vec<i8> = e
                .in_bits
                .iter()
                .map(|&b| oracle::quant(e.dtype, b, m, zp, rounding))
                .collect();
            assert_eq!(&ours, expected, "{}: {}: oracle vs peer", e.file, e.name);
            let params = Params::from_bits(m)
                .with_zero_point(zp)
                .with_rounding(rounding);
            let got = run(&e, params);
            if &got != expected {
                failures.push(format!(
                    "{}: {} ({} {:?} m=0x{m:08x} zp={zp}): got {got:?} want {expected:?}",
                    e.file, e.name, e.dtype, e.shape
                ));
            }
            checked += 1;
            elements += e.in_bits.len();
            ranks[e.shape.len()] += 1;
        }
    }
    println!(
        "peer: {checked} agreeing quantize entries ({elements} elements; by rank {ranks:?}) checked, {skipped_cast} cast entries skipped, {} failed",
        failures.len()
    );
    assert!(checked > 0, "no peer quantize entries found");
    // At least one scalar (rank 0) entry and one FP16 entry exist in the peer data.
    assert!(ranks[0] > 0, "no rank-0 entry was exercised");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The peer data has FP16 quantize entries; make sure they were parsed as FP16 (not BF16).
#[test]
fn peer_dtypes_are_parsed_faithfully() {
    let mut f16 = 0;
    for path in peer::files() {
        for e in peer::agreeing(&path) {
            if e.op == "quantize" && e.dtype == DType::F16 {
                f16 += 1;
                assert!(e.in_bits.iter().all(|&b| b <= 0xffff), "{}", e.name);
            }
        }
    }
    println!("peer: {f16} FP16 quantize entries");
    assert!(f16 > 0);
}

/// The peer files are kept exactly as they were produced: each one's SHA-256 is the one
/// listed in `tests/data/README.md`, and every file is listed.
#[test]
fn peer_files_are_the_ones_received() {
    use sha2::{Digest, Sha256};
    let readme = String::from_utf8(simak_tests::data::read("README.md")).unwrap();
    let listed: Vec<(String, String)> = readme
        .lines()
        .filter_map(|line| {
            let (sum, name) = line.split_once("  ")?;
            (sum.len() == 64 && name.starts_with("peer/"))
                .then(|| (sum.to_owned(), name.trim().to_owned()))
        })
        .collect();
    let files = peer::files();
    assert_eq!(
        listed.len(),
        files.len(),
        "every peer file has a listed SHA-256"
    );
    for (sum, name) in listed {
        let bytes = simak_tests::data::read(&name);
        let digest: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(digest, sum, "{name} differs from the file received");
    }
}
