//! The library's entry table against the firmware: on every seed of the decode fuzz
//! corpora (`fuzz/corpus/quant_decode`, `fuzz/corpus/casttess_decode`, read from the
//! repository at test time), each with every single byte inverted, truncated by one byte and
//! with a foreign magic, `ev74::verdict` is what the firmware's dispatch answers for the
//! entry `ev74::entry_or_first` names (its route, version and the file's length in the
//! command). The oracle is the firmware (`Firmware::dispatch` on a simulated device), not
//! the table's own verdict function.

use std::path::PathBuf;

use simak::error::Port;
use simak::ev74::sim::SimDevice;
use simak::ev74::{self, DecodeError, Verdict};
use simak_ev74_fw::{Command, Firmware, FwError, Ieee};

/// Where the firmware dispatch ended: refused by the length check or by the decoder, or
/// past the decoder (run, or a fault while running).
#[derive(Debug, PartialEq)]
enum Device {
    /// `FwError::DescriptorLength`.
    Length,
    /// `FwError::Decode` with this rule.
    Decode(DecodeError),
    /// Decoded: ran, or failed after decode.
    Passed,
}

/// The bus address the descriptor is placed at, away from the corpora's port addresses.
const DESCRIPTOR_AT: u32 = 0xf000_0000;

fn firmware(bytes: &[u8], route: u8, version: u16) -> Device {
    let mut device = SimDevice::new(1);
    device
        .memory
        .map_at(DESCRIPTOR_AT, bytes.len().max(1) as u64)
        .unwrap();
    device.memory.host_write(DESCRIPTOR_AT, bytes).unwrap();
    let command = Command {
        route,
        version,
        descriptor: DESCRIPTOR_AT,
        length: bytes.len() as u32,
    };
    match Firmware::<Ieee>::full().dispatch(&mut device, &command) {
        Err(FwError::DescriptorLength { .. }) => Device::Length,
        Err(FwError::Decode(e)) => Device::Decode(e),
        Err(FwError::UnknownRoute { .. } | FwError::NotAdvertised { .. })
        | Err(FwError::Version { .. }) => {
            panic!("the table's route and version are the firmware's")
        }
        Ok(_) | Err(_) => Device::Passed,
    }
}

/// The corpus files of both decode targets.
fn corpus() -> Vec<(String, Vec<u8>)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let mut out = Vec::new();
    for target in ["quant_decode", "casttess_decode"] {
        let mut files: Vec<_> = std::fs::read_dir(root.join(target))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for path in files {
            let name = format!("{target}/{}", path.file_name().unwrap().to_string_lossy());
            out.push((name, std::fs::read(&path).unwrap()));
        }
    }
    out
}

/// Checks one packet: the verdict against the firmware's answer.
fn check(name: &str, bytes: &[u8]) -> Verdict {
    let entry = ev74::entry_or_first(bytes);
    let verdict = ev74::verdict(bytes);
    let device = firmware(bytes, entry.route, entry.version);
    match (verdict, &device) {
        (Verdict::Invalid(DecodeError::Length { .. }), Device::Length) => {}
        (Verdict::Invalid(e), Device::Decode(d)) => assert_eq!(e, *d, "{name}"),
        (Verdict::Bound, Device::Passed) => {}
        // A relocatable packet: the device refuses a nonempty one as unbound (input first)
        // and runs an empty one as a no-op.
        (Verdict::Relocatable, Device::Decode(DecodeError::Unbound { port: Port::Input })) => {}
        (Verdict::Relocatable, Device::Passed) => {}
        (v, d) => panic!("{name}: verdict {v:?}, firmware {d:?}"),
    }
    verdict
}

#[test]
fn verdict_is_the_firmware_decoders_on_the_fuzz_corpora() {
    let corpus = corpus();
    assert!(corpus.len() >= 10, "the corpora are in the repository");
    let mut routes = std::collections::BTreeSet::new();
    let (mut valid, mut invalid) = (0, 0);
    for (name, bytes) in &corpus {
        routes.insert(ev74::entry_or_first(bytes).route);
        match check(name, bytes) {
            Verdict::Invalid(_) => invalid += 1,
            _ => valid += 1,
        }
        for i in 0..bytes.len() {
            let mut m = bytes.clone();
            m[i] ^= 0xff;
            match check(&format!("{name} byte {i}"), &m) {
                Verdict::Invalid(_) => invalid += 1,
                _ => valid += 1,
            }
        }
        if let Some(short) = bytes.len().checked_sub(1) {
            check(&format!("{name} truncated"), &bytes[..short]);
        }
        let mut foreign = bytes.clone();
        if foreign.len() >= 4 {
            foreign[..4].copy_from_slice(b"ABCD");
            check(&format!("{name} foreign magic"), &foreign);
        }
    }
    // Both entries' seeds, and both outcomes, were exercised.
    assert_eq!(routes.into_iter().collect::<Vec<_>>(), [0x2f, 0x30]);
    assert!(
        valid > 10 && invalid > 1000,
        "{valid} valid, {invalid} invalid"
    );
}
