//! Detess, DetessCast and DetessDequant against an independent oracle written here from
//! SPEC §12.1's byte formula (`simak_tests::detess`; it shares no code with the library's walker or with
//! `TiledView::offset_of`): all three encodings × the four dtypes (element sizes 1, 2, 4)
//! × boundary tiles × 1–3 heads in one OFM buffer × 1–3 frames, strided outputs in random
//! axis orders with gaps, at every level this CPU has and with 1–7 threads. Dirty output
//! buffers and guard bytes check that exactly the elements' bytes are written. The fusion
//! identities of SPEC §12 are checked on the same cases: `DetessCast(x)` is `bits << 16` of
//! `Detess(x)` and `DetessDequant(x)` is `Dequant(Detess(x))`, bit for bit.
use simak::DType;
use simak::a65::{self, Level};
use simak::ops::dequant::{self, Params};
use simak::ops::detess::{self, HeadSpec, place_heads};
use simak::ops::{detesscast, detessdequant};
use simak_tests::bytes::Aligned;
use simak_tests::detess::{Head, expected, output_spec, random_head};
use simak_tests::rng::Rng;

const GUARD: usize = 40;
const DIRTY: u8 = 0xa5;

fn levels() -> Vec<Level> {
    Level::detected()
}

#[test]
fn detess_matches_the_byte_formula_oracle() {
    let mut rng = Rng::new(0x2512_0001);
    let dtypes = [DType::I8, DType::I16, DType::BF16, DType::I32];
    // 24 cases still cover every frame count × head count × dtype (simak_tests::sweeps).
    let cases = if cfg!(miri) {
        4
    } else if simak_tests::sweeps::full() {
        240
    } else {
        24
    };
    let mut checked = 0usize;
    for case in 0..cases {
        let frames = 1 + case % 3;
        let n_heads = 1 + (case / 3) % 3;
        let heads: Vec<Head> = (0..n_heads)
            .map(|k| random_head(&mut rng, frames, dtypes[(case + k) % 4]))
            .collect();
        // Heads at running offsets rounded up to 16 bytes (aligned for every head).
        let mut specs = Vec::new();
        let mut at = 0;
        for h in &heads {
            specs.push(HeadSpec {
                span: h.span() as u64,
                offset: Some(at as u64),
            });
            at = (at + h.span()).next_multiple_of(16);
        }
        let mut ofm = Aligned::new(at.max(1), 0);
        for b in ofm.as_mut_slice() {
            *b = rng.next_u32() as u8;
        }
        let mut offsets = [0u64; 3];
        place_heads(ofm.as_slice().len() as u64, &specs, &mut offsets).expect("placed");
        for (k, h) in heads.iter().enumerate() {
            let bytes = &ofm.as_slice()[offsets[k] as usize..];
            let plan = detess::check_inference_dyn(&detess::DynRequest {
                input: simak::ops::casttess::TiledSpec {
                    extents: &h.shape.iter().map(|&e| e as u64).collect::<Vec<_>>(),
                    dtype: h.dtype,
                    layout: h.layout(),
                },
                output: simak::DynSpec::strided(
                    &h.shape.iter().map(|&e| e as u64).collect::<Vec<_>>(),
                    &output_spec(h, h.dtype),
                    h.dtype,
                ),
            })
            .unwrap_or_else(|e| panic!("{h:?}: {e}"));
            assert_eq!(plan.input().capacity() as usize, h.span(), "{h:?}");
            let want = expected(h, bytes, DIRTY, GUARD);
            for (li, level) in levels().into_iter().enumerate() {
                let Ok(prepared) = a65::detess::prepare_at(&plan, level) else {
                    continue;
                };
                let threads = 1 + (case + li) % 7;
                let mut got = vec![DIRTY; want.len()];
                a65::execute_threaded(&prepared, threads, bytes, &mut got).expect("runs");
                assert!(
                    got == want,
                    "case {case} head {k} {level} threads {threads}: {h:?}"
                );
                checked += 1;
            }
            fusion(&mut rng, h, bytes, &want);
        }
    }
    assert!(checked >= cases);
}

/// The fusion identities on one head: DetessCast = `bits << 16` of Detess (BF16 heads),
/// DetessDequant = Dequant(Detess) (integer heads), with FP32, FP16 and BF16 outputs.
fn fusion(rng: &mut Rng, h: &Head, bytes: &[u8], detessed: &[u8]) {
    let shape: Vec<u64> = h.shape.iter().map(|&e| e as u64).collect();
    let tiled = simak::ops::casttess::TiledSpec {
        extents: &shape,
        dtype: h.dtype,
        layout: h.layout(),
    };
    let e = h.e();
    if h.dtype == DType::BF16 {
        let strides = output_spec(h, DType::F32);
        let plan = detesscast::check_inference_dyn(&detess::DynRequest {
            input: tiled,
            output: simak::DynSpec::strided(&shape, &strides, DType::F32),
        })
        .expect("admits");
        let span = plan.output().span() as usize;
        let mut want = vec![DIRTY; span + GUARD];
        h.for_each(|index| {
            let i: usize = index.iter().zip(&h.out_strides).map(|(i, s)| i * s).sum();
            let o: usize = index
                .iter()
                .zip(&strides)
                .map(|(&i, &s)| i * s as usize)
                .sum();
            let bits = u32::from(u16::from_le_bytes([detessed[i], detessed[i + 1]])) << 16;
            want[o..o + 4].copy_from_slice(&bits.to_le_bytes());
        });
        let mut got = vec![DIRTY; want.len()];
        a65::execute_threaded(&a65::detesscast::prepare(&plan), 3, bytes, &mut got).expect("runs");
        assert!(got == want, "detess_cast {h:?}");
        return;
    }
    let (lo, hi) = h.dtype.int_range().expect("integer");
    let zp = rng.range_i64(lo.max(-100_000), hi.min(100_000)) as i32;
    let m = f32::from_bits(0x3c00_0000 + (rng.next_u32() & 0x03ff_ffff));
    let params = Params::new(m).with_zero_point(zp);
    for out in [DType::F32, DType::F16, DType::BF16] {
        let strides = output_spec(h, out);
        let plan = detessdequant::check_inference_dyn(&detessdequant::DynRequest {
            input: tiled,
            output: simak::DynSpec::strided(&shape, &strides, out),
            params,
        })
        .expect("admits");
        let span = plan.output().span() as usize;
        let mut got = vec![DIRTY; span + GUARD];
        a65::execute_threaded(&a65::detessdequant::prepare(&plan), 2, bytes, &mut got)
            .expect("runs");
        // Dequant over the Detess output's strided view.
        let in_strides: Vec<u64> = h.out_strides.iter().map(|&s| s as u64).collect();
        let dq = dequant::check_inference_dyn(&dequant::DynRequest {
            input: simak::DynSpec::strided(&shape, &in_strides, h.dtype),
            output: simak::DynSpec::strided(&shape, &strides, out),
            params,
        })
        .expect("admits");
        let mut want = vec![DIRTY; span + GUARD];
        a65::dequant::execute(
            &a65::dequant::prepare(&dq),
            &detessed[..h.out_span(e)],
            &mut want,
        )
        .expect("runs");
        assert!(got == want, "detess_dequant {out} {h:?}");
    }
}
