//! Criterion benchmarks of A65 Quant: every route at 4 Ki, 64 Ki, 1 Mi and 16 Mi elements
//! (contiguous), plus a row-padded strided case and a transposed-output (panel) case.
//!
//! Workload of the peers' script (`bench/peers/`): multiplier 0.5, zero point 3, inputs
//! drawn from N(0, 100) with a fixed seed.
#![allow(missing_docs)]

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use simak::a65::Level;
use simak::a65::quant::{execute, prepare_at};
use simak::ops::quant::{Params, Request, check_inference};
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

fn contiguous(c: &mut Criterion) {
    for dtype in [DType::F32, DType::BF16, DType::F16] {
        let mut group = c.benchmark_group(format!("quant/{dtype}"));
        for n in [4usize << 10, 64 << 10, 1 << 20, 16 << 20] {
            let input = encode(dtype, &normal_f32(n, 100.0));
            let mut output = vec![0u8; n];
            let plan = check_inference(&Request {
                input: TensorSpec::contiguous([n as u64], dtype),
                output: TensorSpec::contiguous([n as u64], DType::I8),
                params: Params::new(0.5).with_zero_point(3),
            })
            .unwrap();
            group.throughput(Throughput::Elements(n as u64));
            if n >= 16 << 20 {
                group.sample_size(10);
            }
            for route in Level::ALL.into_iter().rev() {
                let Ok(p) = prepare_at(&plan, route) else {
                    continue;
                };
                if route == Level::Scalar && n > 1 << 20 {
                    continue;
                }
                group.bench_function(BenchmarkId::new(route.name(), n), |b| {
                    b.iter(|| execute(&p, &input, &mut output).unwrap())
                });
            }
        }
        group.finish();
    }
}

fn strided(c: &mut Criterion) {
    let mut group = c.benchmark_group("quant/strided-f32");
    let (rows, cols) = (1024u64, 1024u64);
    let input = encode(
        DType::F32,
        &normal_f32((rows * (cols + 16)) as usize, 100.0),
    );
    let mut output = vec![0u8; (rows * cols) as usize];
    group.throughput(Throughput::Elements(rows * cols));
    let cases = [
        ("row-padded-input", [(cols + 16) * 4, 4], [cols, 1]),
        ("transposed-output", [(cols + 16) * 4, 4], [1, rows]),
    ];
    for (name, in_strides, out_strides) in cases {
        let plan = check_inference(&Request {
            input: TensorSpec::strided([rows, cols], in_strides, DType::F32),
            output: TensorSpec::strided([rows, cols], out_strides, DType::I8),
            params: Params::new(0.5).with_zero_point(3),
        })
        .unwrap();
        let p = simak::a65::quant::prepare(&plan);
        group.bench_function(BenchmarkId::new(name, p.implementation()), |b| {
            b.iter(|| execute(&p, &input, &mut output).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, contiguous, strided);
criterion_main!(benches);
