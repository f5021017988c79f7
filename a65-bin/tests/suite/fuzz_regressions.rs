//! Regressions found by the fuzz targets of the file readers (`fuzz/fuzz_targets/read_*.rs`),
//! each replayed from its committed input under `fuzz/corpus/<target>/`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use simak::DType;
use simak_cli::read::read_npy;

fn corpus(target: &str, name: &str) -> (PathBuf, Vec<u8>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
        .join(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (path, bytes)
}

/// `read_npy`, seed `regress_nested_braces`: a header opening 13 `{` kept npyz's
/// backtracking parser busy for seconds (minutes at 50 deep, exponential in the depth).
/// The reader now refuses headers nested deeper than `NPY_MAX_DEPTH` before npyz sees them.
#[test]
fn deeply_nested_npy_header_is_refused_at_once() {
    let (path, bytes) = corpus("read_npy", "regress_nested_braces");
    let start = Instant::now();
    let err = read_npy(&path, &bytes, &[DType::F32], "test").unwrap_err();
    let message = err.to_string();
    assert!(message.contains("nests brackets 14 deep"), "{message}");
    eprintln!("refused in {:?}", start.elapsed());
}

/// `read_npy`, seed `regress_backtracking_header`: a 173-byte header within the depth limit
/// (unterminated strings, backslashes and numbers) kept npyz's backtracking parser busy for
/// over two minutes. The parser's call limit (`npy_call_limit`) now refuses it at once.
#[test]
fn backtracking_npy_header_is_refused_at_once() {
    let (path, bytes) = corpus("read_npy", "regress_backtracking_header");
    let start = Instant::now();
    let err = read_npy(&path, &bytes, &[DType::F32], "test").unwrap_err();
    let message = err.to_string();
    assert!(message.contains("too complex to parse"), "{message}");
    eprintln!("refused in {:?}", start.elapsed());
}

/// `read_npy`, seed `regress_empty_huge_shape`: shape `(1000000000, 429400, 42949, 0,
/// …)` is an empty array, which the reader accepts, but the check before reading multiplied
/// the extents in order and refused it as overflowing before it reached the 0.
#[test]
fn an_empty_array_with_huge_extents_passes_the_check_before_reading() {
    let (path, bytes) = corpus("read_npy", "regress_empty_huge_shape");
    let array = read_npy(&path, &bytes, &[DType::F32], "test").unwrap();
    assert!(array.shape.contains(&0) && array.data.as_slice().is_empty());
    let check = simak_cli::read::precheck(simak_cli::read::Expect::Npy, &bytes, bytes.len() as u64);
    assert_eq!(check, Ok(simak_cli::read::Need::Whole));
}

/// The call limit leaves room for any header NumPy accepts: one padded with spaces to
/// 65,024 bytes (near version 1's largest) is read, with its data.
#[test]
fn a_header_padded_to_64_kib_is_read() {
    let text = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    let mut body = text.to_vec();
    while !(10 + body.len() + 1).is_multiple_of(64) || body.len() < 65_000 {
        body.push(b' ');
    }
    body.push(b'\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend(u16::try_from(body.len()).unwrap().to_le_bytes());
    bytes.extend(&body);
    let data: Vec<u8> = (0..6u8)
        .flat_map(|i| (f32::from(i) - 2.5).to_le_bytes())
        .collect();
    bytes.extend(&data);
    let array = read_npy(Path::new("padded.npy"), &bytes, &[DType::F32], "test").unwrap();
    assert_eq!(array.shape, [2, 3]);
    assert_eq!(array.data.as_slice(), data);
}

/// `read_image`, input `fuzz/regressions/read_image/regress_jpeg_2048x11016` (kept out of
/// the seed corpus: every mutation of it decodes a 22.6 Mpixel image, which starved the
/// 20-second CI run): a fuzzer-made 2048 × 11016 JPEG whose 270 MB FP32 tensor used to be
/// built in a `Vec<f32>` and then copied (tripping the fuzz malloc limit). JPEG is decoded in
/// strict mode now, and this file has stray bytes between its markers, so it is refused
/// with a clear error; a clean image of the same size converts below.
#[test]
fn the_fuzzer_made_tall_jpeg_is_refused_as_malformed() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/regressions/read_image/regress_jpeg_2048x11016");
    let bytes = std::fs::read(&path).unwrap();
    let err = simak_cli::read::decode_image(
        &path,
        &bytes,
        &Default::default(),
        simak_cli::read::IMAGE_DEFAULT_LIMIT,
    )
    .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("malformed jpeg image"), "{message}");
}

/// A clean 2048 × 11016 JPEG converts straight into one aligned buffer: the whole image,
/// every value an 8-bit sample over 255, within a JPEG's error of the source.
#[test]
fn a_tall_jpeg_converts_into_one_buffer() {
    let (width, height) = (2048u32, 11016u32);
    let img = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x / 8) as u8, (y / 64) as u8, 200])
    });
    let mut bytes = std::io::Cursor::new(Vec::new());
    img.write_to(&mut bytes, image::ImageFormat::Jpeg).unwrap();
    let bytes = bytes.into_inner();
    let path = Path::new("tall.jpg");
    let image = simak_cli::read::decode_image(
        path,
        &bytes,
        &Default::default(),
        simak_cli::read::IMAGE_DEFAULT_LIMIT,
    )
    .unwrap();
    assert_eq!(image.shape, [11016, 2048, 3]);
    assert_eq!(image.data.as_slice().len(), 11016 * 2048 * 12);
    // Each value is p / 255 for an 8-bit p within 8 of the source sample (the byte-equality
    // with PIL's decoder is `jpeg.rs`'s).
    let mut worst = 0i32;
    for (v, &s) in image.data.as_slice().chunks_exact(4).zip(img.as_raw()) {
        let v = f32::from_le_bytes([v[0], v[1], v[2], v[3]]);
        let p = (v * 255.0).round_ties_even();
        assert_eq!(v, p / 255.0, "not a sample over 255: {v}");
        worst = worst.max((p as i32 - i32::from(s)).abs());
    }
    assert!(worst <= 8, "a sample {worst} away from the source");
}
