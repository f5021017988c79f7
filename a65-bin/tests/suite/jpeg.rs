//! JPEG like the Python world: the CLI's JPEG samples are byte-equal to what PIL decodes
//! (libjpeg-turbo, also the decoder of OpenCV and torchvision). Each `tests/data/jpeg`
//! image has the pixels PIL decoded from it (`NAME.rgb.npy`, made by `make_jpegs.py`);
//! the CLI's samples are read out exactly through QuantTess with M = 255 and Z = -128
//! (`binary32(binary32(p / 255) · 255)` rounds back to `p` for every 8-bit `p`, checked
//! here) and `untile`.

use crate::common;

use std::path::Path;

use common::*;

/// The images: 4:2:0 (odd sizes, baseline and progressive), 4:2:2, 4:4:4, gray, and a
/// photo crop.
const IMAGES: [&str; 6] = [
    "synthetic-420",
    "synthetic-420-progressive",
    "synthetic-422",
    "synthetic-444",
    "synthetic-gray",
    "chelsea-420",
];

/// The CLI's RGB samples of `jpeg` (HWC, as read out through QuantTess and untile).
fn cli_samples(jpeg: &Path, dir: &Path) -> (Vec<u64>, Vec<u8>) {
    let tiled = dir.join("t.bin");
    let back = dir.join("t.npy");
    assert_success(&simak(&[
        "quanttess",
        "-q",
        "--input",
        path_str(jpeg),
        "--output",
        path_str(&tiled),
        "--axes",
        "-1,0,1,2",
        "--tile",
        "1,1,1,3",
        "--multiplier",
        "255",
        "--zero-point",
        "-128",
    ]));
    assert_success(&simak(&[
        "untile",
        "-q",
        path_str(&tiled),
        "--output",
        path_str(&back),
    ]));
    let (shape, q, descr, _) = read_npy(&back);
    assert_eq!(descr, "|i1");
    for f in [&tiled, &back, &dir.join("t.bin.json")] {
        std::fs::remove_file(f).unwrap();
    }
    // q = p - 128 (see the module docs).
    (
        shape,
        q.iter().map(|&q| (q as i8 as i16 + 128) as u8).collect(),
    )
}

#[test]
fn the_readout_is_exact_for_every_8_bit_sample() {
    for p in 0..=255u8 {
        let x = f32::from(p) / 255.0;
        let q = (x * 255.0).round_ties_even() - 128.0;
        assert_eq!(q, f32::from(p) - 128.0, "p = {p}");
    }
}

#[test]
fn a_cmyk_jpeg_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let jpeg = data("jpeg/cmyk.jpg");
    expect_bad(
        &[
            "casttess",
            "--input",
            path_str(&jpeg),
            "--output",
            path_str(&dir.path().join("c.bin")),
            "--axes",
            "-1,0,1,2",
            "--tile",
            "1,1,1,3",
        ],
        dir.path(),
        &["cmyk.jpg", "a CMYK (or YCCK) jpeg image is not read"],
    );
}

#[test]
fn jpeg_samples_equal_pil_s() {
    let dir = tempfile::tempdir().unwrap();
    for name in IMAGES {
        let jpeg = data(&format!("jpeg/{name}.jpg"));
        let (shape, pil, descr, _) = read_npy(&data(&format!("jpeg/{name}.rgb.npy")));
        assert_eq!(descr, "|u1");
        let (cli_shape, cli) = cli_samples(&jpeg, dir.path());
        assert_eq!(cli_shape, shape, "{name}");
        let differing = cli.iter().zip(&pil).filter(|(a, b)| a != b).count();
        assert_eq!(
            differing, 0,
            "{name}: {differing} samples differ from PIL's"
        );
    }
}
