//! Criterion benchmarks of A65 CastTess on a camera frame: HWC 1080 × 1920 × 3 in FP32,
//! FP16 and BF16 → tile (1, 16, 64, 3) Compact, against a same-run `memcpy` of the output
//! BF16 bytes (12.4 MB) as the reference. Also a 1 Mi-element frame (512 × 683 × 3) that
//! fits the caches better.
//!
//! Inputs: N(0, 1) samples from a fixed seed.
#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use simak::a65;
use simak::a65::Level;
use simak::layout::{Channels, MlaTiled};
use simak::ops::casttess::TiledTensorSpec;
use simak::ops::casttess::{Request, check_inference};
use simak::{DType, TensorSpec};
use simak_tests::rng::normal_f32;

fn encode(dtype: DType, xs: &[f32]) -> Vec<u8> {
    match dtype {
        DType::F32 => xs.iter().flat_map(|x| x.to_le_bytes()).collect(),
        DType::BF16 => xs
            .iter()
            .flat_map(|x| half::bf16::from_f32(*x).to_bits().to_le_bytes())
            .collect(),
        _ => xs
            .iter()
            .flat_map(|x| half::f16::from_f32(*x).to_bits().to_le_bytes())
            .collect(),
    }
}

/// A 16-byte aligned, zeroed output buffer.
fn aligned(len: usize) -> (Vec<u8>, usize) {
    let v = vec![0u8; len + 16];
    let start = (16 - v.as_ptr() as usize % 16) % 16;
    (v, start)
}

fn frame(c: &mut Criterion, name: &str, h: u64, w: u64) {
    let n = (h * w * 3) as usize;
    let xs = normal_f32(n, 1.0);
    let mut group = c.benchmark_group(format!("casttess/{name}"));
    group.throughput(Throughput::Elements(n as u64));
    group.sample_size(20);
    let reference = encode(DType::BF16, &xs);
    let (mut copy_out, start) = aligned(2 * n);
    group.bench_function("memcpy-bf16-bytes", |b| {
        b.iter(|| copy_out[start..start + 2 * n].copy_from_slice(&reference))
    });
    for dtype in [DType::F32, DType::F16, DType::BF16] {
        let input = encode(dtype, &xs);
        let plan = check_inference(&Request {
            input: TensorSpec::contiguous([h, w, 3], dtype),
            output: TiledTensorSpec::new(
                [h, w, 3],
                DType::BF16,
                MlaTiled::new(
                    [None, Some(0), Some(1), Some(2)],
                    [1, 16, 64, 3],
                    Channels::Compact,
                ),
            ),
        })
        .unwrap();
        let capacity = plan.output().capacity() as usize;
        let (mut out, start) = aligned(capacity);
        for level in Level::ALL.into_iter().rev() {
            let Ok(prepared) = a65::casttess::prepare_at(&plan, level) else {
                continue;
            };
            group.bench_function(format!("{dtype}/{}", level.name()), |b| {
                b.iter(|| {
                    a65::casttess::execute(&prepared, &input, &mut out[start..start + capacity])
                        .unwrap()
                })
            });
        }
    }
    group.finish();
}

fn frames(c: &mut Criterion) {
    frame(c, "1080x1920x3", 1080, 1920);
    frame(c, "512x683x3", 512, 683);
}

criterion_group!(benches, frames);
criterion_main!(benches);
