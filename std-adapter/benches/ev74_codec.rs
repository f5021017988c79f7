//! Host-side cost of the EV74 Quant descriptor codec: `encode` (device check, relocatable
//! encoding and bind) and `bind` of an already encoded packet per call, and the device-side
//! `decode` (every rule rechecked), for a contiguous FP32 [1024, 1024] and a strided BF16
//! rank-6 request.
#![allow(missing_docs)]

use criterion::{Criterion, criterion_group, criterion_main};
use simak::ev74::DeviceRegion;
use simak::ev74::quant;
use simak::ops::quant::{Params, Plan, Request, check_inference};
use simak::{DType, TensorSpec};

fn plans() -> Vec<(&'static str, Plan)> {
    let contiguous = check_inference(&Request {
        input: TensorSpec::contiguous([1024, 1024], DType::F32),
        output: TensorSpec::contiguous([1024, 1024], DType::I8),
        params: Params::new(0.5).with_zero_point(3),
    })
    .unwrap();
    let strided = check_inference(&Request {
        input: TensorSpec::strided(
            [2, 3, 4, 5, 6, 7],
            // Rows of 7 elements padded to 8.
            [5760, 1920, 480, 96, 16, 2],
            DType::BF16,
        ),
        output: TensorSpec::contiguous([2, 3, 4, 5, 6, 7], DType::I8),
        params: Params::new(0.25),
    })
    .unwrap();
    vec![
        ("f32-1024x1024", contiguous),
        ("bf16-rank6-strided", strided),
    ]
}

fn codec(c: &mut Criterion) {
    let mut group = c.benchmark_group("ev74-quant-codec");
    for (name, plan) in plans() {
        let input = DeviceRegion::new(0x1000_0000, plan.input().span());
        let output = DeviceRegion::new(0x8000_0000, plan.output().span());
        group.bench_function(format!("encode/{name}"), |b| {
            b.iter(|| {
                let device = quant::check_inference(std::hint::black_box(&plan)).unwrap();
                quant::encode(&device, input, output).unwrap()
            })
        });
        let device = quant::check_inference(&plan).unwrap();
        let encoded = quant::encode_relocatable(&device);
        group.bench_function(format!("bind/{name}"), |b| {
            b.iter(|| quant::bind(&device, std::hint::black_box(&encoded), input, output).unwrap())
        });
        let bound = quant::bind(&device, &encoded, input, output).unwrap();
        let bytes = bound.as_bytes().to_vec();
        group.bench_function(format!("decode/{name}"), |b| {
            b.iter(|| quant::decode(std::hint::black_box(&bytes)).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
