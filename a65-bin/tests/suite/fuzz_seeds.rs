//! The committed seed corpora of the fuzz targets `bind`, `relocate`, `admission`,
//! `read_npy`, `read_safetensors` and `read_image` (`fuzz/corpus/<target>/`) are written by
//! this test: it checks that each committed seed is the bytes built here, and rewrites them
//! all when `SIMAK_BLESS_FUZZ_SEEDS=1` is set. The `bind`, `relocate` and `admission` seeds
//! follow the input layouts documented at the top of `fuzz/fuzz_targets/bind.rs`,
//! `relocate.rs` and `admission.rs`.

use std::path::PathBuf;

/// A little-endian byte builder.
#[derive(Default)]
struct B(Vec<u8>);

impl B {
    fn u8s(mut self, bytes: &[u8]) -> B {
        self.0.extend_from_slice(bytes);
        self
    }
    fn u16(mut self, v: u16) -> B {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(mut self, v: u32) -> B {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(mut self, v: u64) -> B {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    /// A `bind` region: kind, a, l.
    fn region(self, kind: u8, a: u32, l: u64) -> B {
        self.u8s(&[kind]).u32(a).u64(l)
    }
    /// A `relocate` table entry: kind, offset byte, then a `bind` region.
    fn relocation(self, kind: u8, offset: u8, region: (u8, u32, u64)) -> B {
        self.u8s(&[kind, offset])
            .region(region.0, region.1, region.2)
    }
    /// An `admission` buffer: offset, length kind, v.
    fn buffer(self, offset: u8, kind: u8, v: u16) -> B {
        self.u8s(&[offset, kind]).u16(v)
    }
    /// Quant parameters: multiplier 1.0, zero point 0, nearest-even.
    fn params(self) -> B {
        self.u32(1.0f32.to_bits()).u8s(&[0, 1])
    }
}

fn relocate_seeds() -> Vec<(&'static str, Vec<u8>)> {
    // Quant F32 [2, 3]: input 24 bytes at 0x1000, output 6 bytes at 0x2000.
    let quant = || B::default().u8s(&[0, 2, 0, 0, 2, 3]).params();
    let (r_in, r_out) = ((0x00, 0x1000, 24), (0x00, 0x2000, 6));
    vec![
        // Both slots, input first: the bytes of bind.
        (
            "quant_both",
            quant()
                .u8s(&[2])
                .relocation(0, 0, r_in)
                .relocation(1, 0, r_out)
                .0,
        ),
        // Both slots, output first, the input's slot by its offset byte (24).
        (
            "quant_swapped",
            quant()
                .u8s(&[2])
                .relocation(1, 0, r_out)
                .relocation(2, 24, r_in)
                .0,
        ),
        // An offset that is not an address slot (40 = 5 × 8): 0x313.
        (
            "quant_unknown_slot",
            quant()
                .u8s(&[2])
                .relocation(0, 0, r_in)
                .relocation(3, 5, r_out)
                .0,
        ),
        // The output named twice: 0x315.
        (
            "quant_duplicate_output",
            quant()
                .u8s(&[3])
                .relocation(1, 0, r_out)
                .relocation(0, 0, r_in)
                .relocation(1, 0, r_out)
                .0,
        ),
        // No output relocation: unbound (39).
        (
            "quant_missing_output",
            quant().u8s(&[1]).relocation(0, 0, r_in).0,
        ),
        // CastTess SPEC §5 example, both slots.
        (
            "casttess_spec_example",
            B::default()
                .u8s(&[1, 1, 0, 0, 2, 3])
                .u8s(&[6, 6, 0, 1, 0, 0, 1, 2])
                .u8s(&[2])
                .relocation(0, 0, (0x00, 0x1000, 24))
                .relocation(1, 0, (0x00, 0x2000, 16))
                .0,
        ),
    ]
}

fn bind_seeds() -> Vec<(&'static str, Vec<u8>)> {
    // A Detess-family head (bind.rs's layout): op bit 2, then conversion, input dtype,
    // encoding, output dtype, rank, extents, axes, tile bytes, multiplier, zero point.
    // DetessDequant INT16 [3, 17] PadTo16 (tiles of 2 pixels × 16 channels, alignment
    // 16) to contiguous FP32, multiplier 0.5, zero point -3: the tiled input is 192 bytes,
    // the output 204.
    let dequant = |op: u8| {
        B::default()
            .u8s(&[op, 2, 1, 1, 0, 1, 3, 17])
            .u8s(&[255, 255, 0, 1, 0, 0, 1, 15])
            .u32(0x3f00_0000)
            .u16(0xfffd)
    };
    vec![
        (
            "detess_dequant_i16_pad16",
            dequant(4)
                .region(0x00, 0x1000, 192)
                .region(0x00, 0x2000, 204)
                .0,
        ),
        // The same head's input 8 bytes off its 16-byte alignment; then the packet of
        // another head (the next zero point).
        (
            "detess_dequant_misaligned",
            dequant(4)
                .region(0x00, 0x1008, 192)
                .region(0x00, 0x2000, 204)
                .0,
        ),
        (
            "detess_packet_mismatch",
            dequant(6)
                .region(0x00, 0x1000, 192)
                .region(0x00, 0x2000, 204)
                .0,
        ),
        // Detess BF16 [2, 3, 33] in one Compact tile, tile alignment 1 (SiMa's fixture):
        // the input at an address aligned to 2 bytes only.
        (
            "detess_bf16_align1",
            B::default()
                .u8s(&[4, 0, 3, 6, 0, 2, 2, 3, 33])
                .u8s(&[255, 0, 1, 2, 0, 1, 2, 32])
                .u32(0)
                .u16(0)
                .region(0x00, 0x1002, 396)
                .region(0x00, 0x3000, 396)
                .0,
        ),
        // Quant F32 [2, 3] at 0x1000 / 0x2000 with exact capacities.
        (
            "quant_f32_2x3",
            B::default()
                .u8s(&[0, 2, 0, 0, 2, 3])
                .params()
                .region(0x00, 0x1000, 24)
                .region(0x00, 0x2000, 6)
                .0,
        ),
        // Quant F16 [2, 2, 3], strided both sides; input just below 2^32, output at
        // u32::MAX with a length near u64::MAX (out of range).
        (
            "quant_f16_strided_near_top",
            B::default()
                .u8s(&[0, 3, 2, 3, 2, 2, 3])
                .u16(6)
                .u16(3)
                .u16(1)
                .u16(12)
                .u16(4)
                .u16(1)
                .params()
                .region(0x0d, 0, 0)
                .region(0x0b, 0, 0)
                .0,
        ),
        // Quant BF16 [4, 4]: the output 4 bytes into the input (overlap).
        (
            "quant_bf16_overlap",
            B::default()
                .u8s(&[0, 2, 1, 0, 4, 4])
                .params()
                .region(0x0e, 0x1000, 0)
                .region(0x0e, 4, 0)
                .0,
        ),
        // Quant F32 scalar, the output right after the input.
        (
            "quant_scalar_adjacent",
            B::default()
                .u8s(&[0, 0, 0, 0])
                .params()
                .region(0x0e, 0x40, 0)
                .region(0x1e, 0, 0)
                .0,
        ),
        // Quant F32 [2, 3] bound with a packet of another plan.
        (
            "quant_packet_mismatch",
            B::default()
                .u8s(&[2, 2, 0, 0, 2, 3])
                .params()
                .region(0x00, 0x1000, 24)
                .region(0x00, 0x2000, 6)
                .0,
        ),
        // Quant F32 [0, 5]: empty, binds anything (address 0 too).
        (
            "quant_empty",
            B::default()
                .u8s(&[0, 2, 0, 0, 0, 5])
                .params()
                .region(0x00, 0, 0)
                .region(0x00, 0, 0)
                .0,
        ),
        // CastTess SPEC §5 example: [W=2, C=3] F32, tile (1, 1, 2, 3).
        (
            "casttess_spec_example",
            B::default()
                .u8s(&[1, 1, 0, 0, 2, 3])
                .u8s(&[6, 6, 0, 1, 0, 0, 1, 2])
                .region(0x00, 0x1000, 24)
                .region(0x00, 0x2000, 16)
                .0,
        ),
        // CastTess PadTo16 F32 [1, 2, 5, 17], tile (1, 2, 3, 16); output misaligned.
        (
            "casttess_pad16_misaligned",
            B::default()
                .u8s(&[1, 3, 0, 2, 1, 2, 5, 17])
                .u8s(&[0, 1, 2, 3, 0, 1, 2, 15])
                .region(0x0c, 0x1000, 0)
                .region(0x00, 0x2008, 1 << 20)
                .0,
        ),
        // CastTess F16 [3, 4] strided, output one byte short of its capacity.
        (
            "casttess_f16_short_output",
            B::default()
                .u8s(&[1, 1, 2, 1, 3, 4])
                .u16(8)
                .u16(1)
                .u8s(&[6, 6, 0, 1, 0, 0, 2, 3])
                .region(0x0c, 0x1000, 0)
                .region(0x04, 0x8000, 0xff)
                .0,
        ),
    ]
}

fn admission_seeds() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "spec_f32_contiguous_2x3x4",
            B::default().u8s(&[0, 3, 0, 0, 2, 3, 4]).0,
        ),
        // BF16 [4, 3] transposed: strides 2 and 8 bytes.
        (
            "spec_bf16_transposed",
            B::default().u8s(&[0, 2, 1, 1, 4, 3, 1, 4]).0,
        ),
        // F32 [3, 4] with strides (8, 4): rows overlap, rejected.
        (
            "spec_f32_overlap",
            B::default().u8s(&[0, 2, 0, 1, 3, 4, 2, 1]).0,
        ),
        // F32 [2^62, 2] contiguous: the span overflows.
        (
            "spec_f32_span_overflow",
            B::default()
                .u8s(&[0, 2, 0, 0, 0xf0])
                .u64(1 << 62)
                .u8s(&[2])
                .0,
        ),
        // Output port F32 [2, 3] with a stride of 3 bytes.
        (
            "spec_f32_not_multiple",
            B::default().u8s(&[4, 2, 0, 1, 2, 3, 0x83, 1]).0,
        ),
        // Quant F32 [3, 4] strided both sides, output 3 bytes in, 5 bytes to spare.
        (
            "quant_strided_execute",
            B::default()
                .u8s(&[1, 2, 0, 3, 3, 4, 8, 1, 8, 1])
                .params()
                .buffer(0, 0, 0)
                .buffer(3, 2, 5)
                .0,
        ),
        // Quant F16 [5, 7] contiguous, input 2 bytes short.
        (
            "quant_f16_short_input",
            B::default()
                .u8s(&[1, 2, 2, 0, 5, 7])
                .params()
                .buffer(0, 1, 2)
                .buffer(0, 0, 0)
                .0,
        ),
        // Quant BF16 scalar, input misaligned by one byte.
        (
            "quant_scalar_misaligned",
            B::default()
                .u8s(&[1, 0, 1, 0])
                .params()
                .buffer(1, 0, 0)
                .buffer(0, 0, 0)
                .0,
        ),
        // CastTess SPEC §5 example.
        (
            "casttess_spec_example",
            B::default()
                .u8s(&[2, 2, 0, 0, 2, 3])
                .u8s(&[0x80, 0x80, 0, 1, 1, 1, 2, 3])
                .buffer(0, 0, 0)
                .buffer(0, 0, 0)
                .0,
        ),
        // CastTess PadTo16 F16 [2, 1, 3, 5, 17], tile (1, 2, 3, 16); dirty spare output.
        (
            "casttess_pad16_rank5",
            B::default()
                .u8s(&[2, 5, 2, 4, 2, 1, 3, 5, 17])
                .u8s(&[1, 2, 3, 4, 1, 2, 3, 16])
                .buffer(0, 0, 0)
                .buffer(16, 2, 40)
                .0,
        ),
        // Regression (found by this target): Quant F32 [0, 1, 0xb9b9b9b9b9b939ff, 33, 33],
        // empty, whose packed axes merged with an overflowing product in `prepare`.
        (
            "regress_empty_huge_extent",
            B::default()
                .u8s(&[0xe1, 0x83, 0x00, 0xac, 0x00, 0x01, 0xff])
                .u64(0xb9b9_b9b9_b9b9_39ff)
                .u8s(&[0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0x21, 0xb9, 0x01])
                .0,
        ),
        // QuantTess BF16 [3, 5, 7], axes (-, 0, 1, 2), tile (1, 2, 5, 7).
        (
            "quanttess_bf16",
            B::default()
                .u8s(&[3, 3, 1, 0, 3, 5, 7])
                .params()
                .u8s(&[0x80, 0, 1, 2, 1, 2, 5, 7])
                .0,
        ),
    ]
}

/// A version 1.0 `.npy` file: `descr`, `fortran_order`, `shape` (Python tuple text), data.
fn npy(descr: &str, fortran: bool, shape: &str, data: &[u8]) -> Vec<u8> {
    let dict = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran { "True" } else { "False" }
    );
    npy_text(&dict, data)
}

/// A version 1.0 `.npy` file whose header is `text` (padded), then `data`.
fn npy_text(text: &str, data: &[u8]) -> Vec<u8> {
    let mut header = text.as_bytes().to_vec();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(b' ');
    }
    header.push(b'\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(&header);
    out.extend_from_slice(data);
    out
}

fn npy_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let f32s: Vec<u8> = [0.5f32, -1.0, 2.0, 0.0, 1e-3, -7.25]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let f32s_be: Vec<u8> = [1.5f32, -2.0, 3.0]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    vec![
        ("f32_2x3", npy("<f4", false, "(2, 3)", &f32s)),
        (
            "f16_fortran_3x2",
            npy(
                "<f2",
                true,
                "(3, 2)",
                &[
                    0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38, 0xff, 0x7b, 0x00, 0x00, 0x01, 0x80,
                ],
            ),
        ),
        ("f32_big_endian_3", npy(">f4", false, "(3,)", &f32s_be)),
        ("i8_scalar", npy("|i1", false, "()", &[0x85])),
        ("f32_empty_0x4", npy("<f4", false, "(0, 4)", &[])),
        // npyz multiplies the shape unchecked: an overflowing one must be an error.
        (
            "f32_shape_overflow",
            npy("<f4", false, "(4294967296, 4294967296, 16)", &[]),
        ),
        ("f64_unsupported", npy("<f8", false, "(1,)", &[0; 8])),
        // Regression (found by this target): npyz's header parser backtracks exponentially
        // in the bracket nesting; 13 unclosed `{` took seconds, 50 minutes.
        ("regress_nested_braces", nested_braces()),
    ]
}

/// The `read_npy` regression seed `regress_nested_braces`: a header opening 13 `{`.
fn nested_braces() -> Vec<u8> {
    let text = format!(
        "{}'descr': '<f4', 'fortran_order': False, 'shape': (2,), }}",
        "{".repeat(13)
    );
    npy_text(&text, &[0; 8])
}

/// A `.safetensors` file from its JSON header and data.
fn st(header: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

fn safetensors_seeds() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        (
            "f32_2x3",
            st(
                r#"{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}"#,
                &[0x3f; 24],
            ),
        ),
        (
            "bf16_and_i8_with_metadata",
            st(
                r#"{"__metadata__":{"k":"v"},"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,6]},"b":{"dtype":"I8","shape":[2,2],"data_offsets":[6,10]}}"#,
                &[0, 0x3f, 0, 0xbf, 0x80, 0x7f, 1, 2, 0xff, 0x80],
            ),
        ),
        (
            "f16_empty",
            st(
                r#"{"e":{"dtype":"F16","shape":[0,5],"data_offsets":[0,0]}}"#,
                &[],
            ),
        ),
        (
            "duplicate_names",
            st(
                r#"{"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"x":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}"#,
                &[0; 4],
            ),
        ),
        (
            "u8_unsupported",
            st(
                r#"{"u":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}"#,
                &[1, 2, 3, 4],
            ),
        ),
    ]
}

fn png(width: u32, height: u32, color: image::ExtendedColorType, pixels: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    image::ImageEncoder::write_image(
        image::codecs::png::PngEncoder::new(&mut out),
        pixels,
        width,
        height,
        color,
    )
    .unwrap();
    out
}

fn image_seeds() -> Vec<(&'static str, Vec<u8>)> {
    use image::ExtendedColorType as C;
    let mut jpeg = Vec::new();
    let rgb: Vec<u8> = (0..8 * 8 * 3).map(|i| (i * 7 % 251) as u8).collect();
    image::ImageEncoder::write_image(
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 50),
        &rgb,
        8,
        8,
        C::Rgb8,
    )
    .unwrap();
    let l16: Vec<u8> = [0u16, 1, 0x8000, 0xffff, 300, 7]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    vec![
        ("png_rgb8_2x1", png(2, 1, C::Rgb8, &[0, 128, 255, 51, 1, 2])),
        ("png_l16_3x2", png(3, 2, C::L16, &l16)),
        (
            "png_rgba8_1x2",
            png(1, 2, C::Rgba8, &[1, 2, 3, 4, 250, 251, 252, 0]),
        ),
        (
            "png_la8_2x2",
            png(2, 2, C::La8, &[0, 255, 64, 128, 128, 0, 255, 255]),
        ),
        ("jpeg_rgb_8x8", jpeg),
    ]
}

#[test]
fn fuzz_seed_corpora_are_the_generated_bytes() {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let bless = std::env::var_os("SIMAK_BLESS_FUZZ_SEEDS").is_some_and(|v| v == "1");
    let sets = [
        ("bind", bind_seeds()),
        ("relocate", relocate_seeds()),
        ("admission", admission_seeds()),
        ("read_npy", npy_seeds()),
        ("read_safetensors", safetensors_seeds()),
        ("read_image", image_seeds()),
    ];
    for (target, seeds) in sets {
        let dir = corpus.join(target);
        for (name, bytes) in seeds {
            let path = dir.join(name);
            if bless {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&path, &bytes).unwrap();
                continue;
            }
            let committed = std::fs::read(&path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (write the seeds with SIMAK_BLESS_FUZZ_SEEDS=1 cargo test -p simak-cli --test fuzz_seeds)",
                    path.display()
                )
            });
            assert!(
                committed == bytes,
                "{} differs from the generated seed",
                path.display()
            );
        }
    }
}
