//! Fuzz target: admission of tensor specs, of the three ops' requests and of `MlaTiled`
//! layouts, checked against brute force; plus the A65 `execute` buffer checks.
//!
//! From fuzzed specs — rank 0 to 6 (dispatched to `TensorSpec<R>` by a `match`), dtype,
//! extents and byte strides (small, zero, not a multiple of the element size, or any `u64`),
//! contiguous or strided, `MlaTiled` axes, tiles and channels, Quant parameters — and fuzzed
//! buffer offsets and lengths. Properties:
//!
//! - nothing panics;
//! - `TensorSpec::admit` returns the precise error for the first axis whose stride is not a
//!   multiple of the element size or is zero on an extent > 1 (SPEC §2), and
//!   `SpanOverflow` whenever the accessed span overflows `u64` (computed in `u128`);
//! - an admitted view has the spec's extents, normalized strides (0 on extent-0/1 axes,
//!   packed strides for a contiguous spec), the element count and the exact span
//!   `elem + Σ stride·(extent − 1)` (0 when empty); with at most 4096 elements every
//!   element is enumerated: its byte range lies inside `[0, span)`, the last byte of the
//!   span is reached, `offset_of` agrees, and no two elements overlap (the nonoverlap proof);
//! - an admitted Quant request has the two admitted specs as its ports; an admitted
//!   CastTess / QuantTess request has a tiled output whose capacity equals the SPEC §5 sum
//!   over the tile grid computed here independently, and (≤ 4096 elements) every
//!   element's byte in every plane lies below the capacity, all distinct;
//! - A65 `execute` (Quant and CastTess, spans ≤ 1 MiB) on buffers at fuzzed offsets and
//!   lengths succeeds exactly when both buffers hold the span and are aligned (input to the
//!   element size, tiled output to 16 bytes); on error nothing is written; on success the
//!   output bytes no element maps to are untouched (Quant) or zero padding below the
//!   capacity and untouched past it (CastTess).
//!
//! Input layout (little-endian; reads past the end give zeros):
//!
//! | bytes | meaning |
//! | --- | --- |
//! | 1 | op `% 4`: spec admission, Quant, CastTess, QuantTess; bit 2: port Output |
//! | 1 | rank `% 7` |
//! | 1 | input dtype `% 4`: F32, BF16, F16, I8 |
//! | 1 | bit 0 input strided, bit 1 Quant output strided, bit 2 PadTo16 |
//! | rank × 1+ | extents: a byte `b`, or when `b ≥ 0xf0` the `u64` that follows |
//! | rank × 1+ | if input strided: `b < 0x80` → `b × elem`; `b < 0xf0` → `b − 0x80`; else a `u64` |
//! | rank × 1+ | Quant, if output strided: the same with elem 1 |
//! | 4, 1, 1 | Quant / QuantTess: multiplier bits, zero point (i8), rounding `% 4` |
//! | 4, 4+ | CastTess / QuantTess: axes (`b ≥ 0x80` absent), tiles (`b`, or a `u32` when `b ≥ 0xf0`) |
//! | 3, 3 | input then output buffer: offset (u8 `% 32`), length kind (u8), v (u16) |
//!
//! A buffer's length is, by `kind & 3`: the span; the span less `v & 0xff` (saturating);
//! the span plus `v`; `v`.
#![no_main]

mod common;

use common::Input;
use libfuzzer_sys::fuzz_target;
use simak_core::layout::{Channels, MlaTiled, TiledView};
use simak_core::ops::quant::{Params, Rounding};
use simak_core::{AdmissionError, DType, DynSpec, MAX_RANK, Port, TensorSpec, View};

/// Largest element count enumerated.
const ENUMERATE: u64 = 4096;
/// Largest span executed.
const EXECUTE: u64 = 1 << 20;

const DTYPES: [DType; 4] = [DType::F32, DType::BF16, DType::F16, DType::I8];

/// One port as read from the input: extents and optional byte strides.
#[derive(Clone, Copy)]
struct PortSpec {
    rank: usize,
    extents: [u64; MAX_RANK],
    strides: Option<[u64; MAX_RANK]>,
    dtype: DType,
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let op = input.u8();
    let rank = usize::from(input.u8() % 7);
    let dtype = DTYPES[usize::from(input.u8() % 4)];
    let bits = input.u8();
    let mut extents = [0u64; MAX_RANK];
    for e in &mut extents[..rank] {
        *e = match input.u8() {
            b @ 0..0xf0 => u64::from(b),
            _ => input.u64(),
        };
    }
    let read_strides = |input: &mut Input<'_>, on: bool, elem: u64| {
        on.then(|| {
            let mut s = [0u64; MAX_RANK];
            for x in &mut s[..rank] {
                *x = match input.u8() {
                    b @ 0..0x80 => u64::from(b) * elem,
                    b @ 0x80..0xf0 => u64::from(b - 0x80),
                    _ => input.u64(),
                };
            }
            s
        })
    };
    let strides = read_strides(&mut input, bits & 1 != 0, dtype.size_u64());
    let spec = PortSpec {
        rank,
        extents,
        strides,
        dtype,
    };
    match op % 4 {
        0 => {
            let port = if op & 4 != 0 {
                Port::Output
            } else {
                Port::Input
            };
            let _ = admit(&spec, port);
        }
        1 => {
            let out_strides = read_strides(&mut input, bits & 2 != 0, 1);
            let out = PortSpec {
                strides: out_strides,
                dtype: DType::I8,
                ..spec
            };
            let params = read_params(&mut input);
            fuzz_quant(&mut input, &spec, &out, params);
        }
        k => {
            let channels = if bits & 4 != 0 {
                Channels::PadTo16
            } else {
                Channels::Compact
            };
            let params = if k == 3 {
                Some(read_params(&mut input))
            } else {
                None
            };
            let mut axes = [None; 4];
            for a in &mut axes {
                let b = input.u8();
                *a = (b < 0x80).then_some(b);
            }
            let mut tile = [0u32; 4];
            for t in &mut tile {
                *t = match input.u8() {
                    b @ 0..0xf0 => u32::from(b),
                    _ => input.u32(),
                };
            }
            fuzz_tess(
                &mut input,
                &spec,
                MlaTiled::new(axes, tile, channels),
                params,
            );
        }
    }
});

fn read_params(input: &mut Input<'_>) -> Params {
    let bits = input.u32();
    let zero_point = i32::from(input.u8() as i8);
    let rounding = Rounding::ALL[usize::from(input.u8() % 4)];
    Params::from_bits(bits)
        .with_zero_point(zero_point)
        .with_rounding(rounding)
}

fn spec_of<const R: usize>(s: &PortSpec) -> TensorSpec<R> {
    let extents: [u64; R] = s.extents[..R].try_into().unwrap();
    match s.strides {
        Some(st) => TensorSpec::strided(extents, st[..R].try_into().unwrap(), s.dtype),
        None => TensorSpec::contiguous(extents, s.dtype),
    }
}

/// Runs `f` with the spec as a `TensorSpec<R>` for its run-time rank.
macro_rules! with_rank {
    ($rank:expr, $f:ident ( $($arg:expr),* )) => {
        match $rank {
            0 => $f::<0>($($arg),*),
            1 => $f::<1>($($arg),*),
            2 => $f::<2>($($arg),*),
            3 => $f::<3>($($arg),*),
            4 => $f::<4>($($arg),*),
            5 => $f::<5>($($arg),*),
            _ => $f::<6>($($arg),*),
        }
    };
}

/// Admits one port and checks the result against the model and brute force.
fn admit(s: &PortSpec, port: Port) -> Result<View, AdmissionError> {
    fn go<const R: usize>(s: &PortSpec, port: Port) -> Result<View, AdmissionError> {
        spec_of::<R>(s).admit(port)
    }
    let result = with_rank!(s.rank, go(s, port));
    check_view(s, port, &result);
    result
}

/// The strides the spec asks for (packed strides for a contiguous spec; `None` when they
/// overflow), extent-0/1 axes normalized to 0.
fn model_strides(s: &PortSpec) -> Option<[u64; MAX_RANK]> {
    let elem = s.dtype.size_u64();
    let mut out = [0u64; MAX_RANK];
    match s.strides {
        Some(given) => {
            for a in 0..s.rank {
                out[a] = if s.extents[a] > 1 { given[a] } else { 0 };
            }
        }
        None => {
            let mut stride = u128::from(elem);
            for a in (0..s.rank).rev() {
                let e = s.extents[a];
                if e > 1 {
                    out[a] = u64::try_from(stride).ok()?;
                }
                stride *= u128::from(e.max(1));
                if stride > u128::from(u64::MAX) {
                    // Later (slower) axes of extent > 1 would need a stride past u64.
                    if s.extents[..a].iter().any(|&e| e > 1) {
                        return None;
                    }
                }
            }
        }
    }
    Some(out)
}

fn check_view(s: &PortSpec, port: Port, result: &Result<View, AdmissionError>) {
    let elem = s.dtype.size_u64();
    let extents = &s.extents[..s.rank];
    let empty = extents.contains(&0);
    // The per-axis rules come first, in axis order (explicit strides only).
    if let Some(given) = s.strides {
        for (axis, (&e, &st)) in extents.iter().zip(&given).enumerate() {
            if e != 1 && st % elem != 0 {
                let want = AdmissionError::StrideNotMultiple {
                    port,
                    axis,
                    stride: st,
                    elem_size: elem,
                };
                assert_eq!(result, &Err(want));
                return;
            }
            if e > 1 && st == 0 {
                assert_eq!(
                    result,
                    &Err(AdmissionError::ZeroStride {
                        port,
                        axis,
                        extent: e
                    })
                );
                return;
            }
        }
    }
    let Some(strides) = model_strides(s) else {
        assert_eq!(result, &Err(AdmissionError::SpanOverflow { port }));
        return;
    };
    let elements = product(extents.iter().copied());
    let span: u128 = if empty {
        0
    } else {
        extents
            .iter()
            .zip(&strides)
            .map(|(&e, &st)| u128::from(st) * u128::from(e.saturating_sub(1)))
            .fold(u128::from(elem), u128::saturating_add)
    };
    let view = match result {
        Ok(v) => v,
        Err(e) => {
            // The remaining errors are the span overflow and the (conservative) proof.
            assert!(
                matches!(e, AdmissionError::SpanOverflow { port: p } | AdmissionError::Overlap { port: p, .. } if *p == port),
                "{e:?}"
            );
            return;
        }
    };
    assert!(span <= u128::from(u64::MAX) && elements <= u128::from(u64::MAX));
    assert_eq!(view.rank(), s.rank);
    assert_eq!(view.dtype(), s.dtype);
    assert_eq!(&view.extents()[..s.rank], extents);
    assert!(view.extents()[s.rank..].iter().all(|&e| e == 0));
    assert_eq!(view.strides(), &strides);
    assert_eq!(u128::from(view.span()), span);
    assert_eq!(
        u128::from(view.elements()),
        if empty { 0 } else { elements }
    );
    assert_eq!(view.is_empty(), empty);
    if empty || elements > u128::from(ENUMERATE) {
        return;
    }
    let offsets = element_offsets(view);
    let mut sorted: Vec<u64> = offsets.iter().map(|&(_, o)| o).collect();
    sorted.sort_unstable();
    for w in sorted.windows(2) {
        assert!(
            w[1] - w[0] >= elem,
            "elements overlap at {} and {}",
            w[0],
            w[1]
        );
    }
    let last = *sorted.last().unwrap();
    assert_eq!(
        u128::from(last) + u128::from(elem),
        span,
        "the span is not reached"
    );
    for (index, o) in offsets {
        assert_eq!(view.offset_of(&index), o);
    }
}

/// Every element's logical index and byte offset from the library's walk
/// (`View::offsets`), each offset checked against `Σ index · stride` computed here in
/// `u128` and against the span.
fn element_offsets(view: &View) -> Vec<([u64; MAX_RANK], u64)> {
    let rank = view.rank();
    let mut out = Vec::new();
    let mut walk = view.offsets();
    loop {
        let index = *walk.index();
        let Some(offset) = walk.next() else {
            return out;
        };
        let o: u128 = (0..rank)
            .map(|a| u128::from(index[a]) * u128::from(view.strides()[a]))
            .sum();
        assert_eq!(u128::from(offset), o, "the walk's offset of {index:?}");
        assert!(o + u128::from(view.dtype().size_u64()) <= u128::from(view.span()));
        out.push((index, offset));
    }
}

fn fuzz_quant(input: &mut Input<'_>, i: &PortSpec, o: &PortSpec, params: Params) {
    use simak_core::ops::quant::{Request, check_inference};
    fn go<const R: usize>(
        i: &PortSpec,
        o: &PortSpec,
        params: Params,
    ) -> Result<simak_core::ops::quant::Plan, AdmissionError> {
        check_inference(&Request {
            input: spec_of::<R>(i),
            output: spec_of::<R>(o),
            params,
        })
    }
    let Ok(plan) = with_rank!(i.rank, go(i, o, params)) else {
        return;
    };
    // The plan's ports are the specs admitted on their own.
    let vi = admit(i, Port::Input).expect("an admitted plan's input admits");
    let vo = admit(o, Port::Output).expect("an admitted plan's output admits");
    assert_eq!((plan.input(), plan.output()), (&vi, &vo));
    assert_eq!(plan.elements(), vi.elements());
    if vi.span() > EXECUTE || vo.span() > EXECUTE {
        return;
    }
    let prepared = simak::a65::quant::prepare(&plan);
    let (mut in_buf, in_at, in_len) = buffer(input, vi.span(), 1);
    let (mut out_buf, out_at, out_len) = buffer(input, vo.span(), 0xa5);
    fill(&mut in_buf);
    let model = plan.is_empty()
        || (in_len as u64 >= vi.span()
            && (in_buf[in_at..].as_ptr() as usize) % vi.dtype().size() == 0
            && out_len as u64 >= vo.span());
    let before = out_buf.clone();
    let result = simak::a65::quant::execute(
        &prepared,
        &in_buf[in_at..in_at + in_len],
        &mut out_buf[out_at..out_at + out_len],
    );
    assert_eq!(result.is_ok(), model, "{result:?}");
    if result.is_err() || plan.is_empty() {
        assert!(out_buf == before, "a failed or empty execute wrote");
        return;
    }
    if vo.elements() > ENUMERATE {
        return;
    }
    let mut mapped = vec![false; out_buf.len()];
    for (_, off) in element_offsets(&vo) {
        mapped[out_at + off as usize] = true;
    }
    for (k, (&b, &m)) in out_buf.iter().zip(&mapped).enumerate() {
        assert!(
            m || b == 0xa5,
            "byte {k} of the output was written but maps to no element"
        );
    }
}

fn fuzz_tess(input: &mut Input<'_>, i: &PortSpec, layout: MlaTiled, params: Option<Params>) {
    fn cast<const R: usize>(
        i: &PortSpec,
        layout: MlaTiled,
    ) -> Result<simak_core::ops::casttess::Plan, AdmissionError> {
        use simak_core::ops::casttess::{Request, TiledTensorSpec, check_inference};
        let input = spec_of::<R>(i);
        check_inference(&Request {
            input,
            output: TiledTensorSpec::new(*input.extents(), DType::BF16, layout),
        })
    }
    fn quant<const R: usize>(
        i: &PortSpec,
        layout: MlaTiled,
        params: Params,
    ) -> Result<simak_core::ops::quanttess::Plan, AdmissionError> {
        use simak_core::ops::quanttess::{Request, TiledTensorSpec, check_inference};
        let input = spec_of::<R>(i);
        check_inference(&Request {
            input,
            output: TiledTensorSpec::new(*input.extents(), DType::I8, layout),
            params,
        })
    }
    // The layout on its own, for both plane counts.
    let extents = &i.extents[..i.rank];
    for planes in [1u8, 2] {
        if let Ok(tiled) = layout.admit(extents, planes) {
            check_tiled(&tiled, extents, &layout, planes);
        }
    }
    match params {
        None => {
            let Ok(plan) = with_rank!(i.rank, cast(i, layout)) else {
                return;
            };
            let vi = admit(i, Port::Input).expect("an admitted plan's input admits");
            assert_eq!(plan.input(), &vi);
            let tiled = plan.output();
            assert_eq!(Ok(*tiled), layout.admit(extents, 2));
            execute_casttess(input, &plan);
        }
        Some(params) => {
            let Ok(plan) = with_rank!(i.rank, quant(i, layout, params)) else {
                return;
            };
            let vi = admit(i, Port::Input).expect("an admitted plan's input admits");
            assert_eq!(plan.input(), &vi);
            assert_eq!(Ok(*plan.output()), layout.admit(extents, 1));
        }
    }
}

/// SPEC §5 capacity computed by walking the tile grid, and the element bytes.
fn check_tiled(tiled: &TiledView, extents: &[u64], layout: &MlaTiled, planes: u8) {
    let empty = extents.contains(&0);
    if empty {
        assert_eq!(tiled.capacity(), 0);
        return;
    }
    let role_extent = |slot: usize| layout.axes[slot].map_or(1, |a| extents[usize::from(a)]);
    let outer = product(
        extents
            .iter()
            .enumerate()
            .filter(|(a, _)| !layout.axes.contains(&Some(*a as u8)))
            .map(|(_, &e)| e),
    );
    let tiles: [u64; 4] =
        std::array::from_fn(|s| role_extent(s).div_ceil(u64::from(layout.tile[s])));
    let tiles_total = product(tiles.iter().copied());
    let all_tiles = outer.saturating_mul(tiles_total);
    if all_tiles > u128::from(ENUMERATE) {
        // Only a bound: every tile takes at least 16 bytes.
        assert!(u128::from(tiled.capacity()) >= all_tiles.saturating_mul(16));
        return;
    }
    let actual = |slot: usize, i: u64| {
        let t = u64::from(layout.tile[slot]);
        t.min(role_extent(slot) - i * t)
    };
    let mut per_outer: u128 = 0;
    for d in 0..tiles[0] {
        for h in 0..tiles[1] {
            for w in 0..tiles[2] {
                for c in 0..tiles[3] {
                    let tc = u128::from(actual(3, c));
                    let sc = match layout.channels {
                        Channels::Compact => tc,
                        Channels::PadTo16 | Channels::CBlock16 => tc.next_multiple_of(16),
                    };
                    let bytes = u128::from(actual(0, d))
                        * u128::from(actual(1, h))
                        * u128::from(actual(2, w))
                        * sc
                        * u128::from(planes);
                    per_outer += bytes.next_multiple_of(16);
                }
            }
        }
    }
    assert_eq!(u128::from(tiled.capacity()), per_outer * outer);
    assert_eq!(u128::from(tiled.bytes_per_outer()), per_outer);
    if product(extents.iter().copied()) > u128::from(ENUMERATE) {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    for_each_index(extents, |index| {
        for plane in 0..usize::from(planes) {
            let o = tiled
                .offset_of(index, plane)
                .expect("an element has an offset");
            assert!(o < tiled.capacity(), "offset {o} past the capacity");
            assert!(seen.insert(o), "two element bytes at offset {o}");
        }
    });
}

/// The product of `values` in `u128`, saturating.
fn product(values: impl Iterator<Item = u64>) -> u128 {
    values.fold(1u128, |n, v| n.saturating_mul(u128::from(v)))
}

/// Calls `f` with every logical index of a nonempty shape `extents`, in row-major order:
/// the library's walk (`View::offsets`) over a contiguous INT8 view of that shape.
fn for_each_index(extents: &[u64], mut f: impl FnMut(&[u64; MAX_RANK])) {
    let view = DynSpec::contiguous(extents, DType::I8)
        .admit(Port::Input)
        .expect("an enumerable shape admits");
    let mut walk = view.offsets();
    while walk.remaining() > 0 {
        f(walk.index());
        walk.next();
    }
}

fn execute_casttess(input: &mut Input<'_>, plan: &simak_core::ops::casttess::Plan) {
    let vi = plan.input();
    let tiled = plan.output();
    if vi.span() > EXECUTE || tiled.capacity() > EXECUTE {
        return;
    }
    let prepared = simak::a65::casttess::prepare(plan);
    let (mut in_buf, in_at, in_len) = buffer(input, vi.span(), 1);
    let (mut out_buf, out_at, out_len) = buffer(input, tiled.capacity(), 0xa5);
    fill(&mut in_buf);
    let model = plan.is_empty()
        || (in_len as u64 >= vi.span()
            && (in_buf[in_at..].as_ptr() as usize) % vi.dtype().size() == 0
            && out_len as u64 >= tiled.capacity()
            && (out_buf[out_at..].as_ptr() as usize) % 16 == 0);
    let before = out_buf.clone();
    let result = simak::a65::casttess::execute(
        &prepared,
        &in_buf[in_at..in_at + in_len],
        &mut out_buf[out_at..out_at + out_len],
    );
    assert_eq!(result.is_ok(), model, "{result:?}");
    if result.is_err() || plan.is_empty() {
        assert!(out_buf == before, "a failed or empty execute wrote");
        return;
    }
    // Past the capacity: untouched. Below it: element bytes or zero padding.
    let cap = tiled.capacity() as usize;
    assert!(out_buf[..out_at].iter().all(|&b| b == 0xa5));
    assert!(out_buf[out_at + cap..].iter().all(|&b| b == 0xa5));
    if plan.elements() > ENUMERATE {
        return;
    }
    let mut mapped = vec![false; cap];
    for_each_index(&vi.extents()[..vi.rank()], |index| {
        for plane in 0..2 {
            mapped[tiled.offset_of(index, plane).unwrap() as usize] = true;
        }
    });
    for (k, (&b, &m)) in out_buf[out_at..out_at + cap]
        .iter()
        .zip(&mapped)
        .enumerate()
    {
        assert!(m || b == 0, "padding byte {k} is {b:#x}, not zero");
    }
}

/// A buffer for a port of `span` bytes filled with `fill`: the allocation, the start of the
/// port's slice and its length, read from the input (see the module doc). The start is the
/// fuzzed offset from a 16-byte-aligned point of the allocation.
fn buffer(input: &mut Input<'_>, span: u64, fill: u8) -> (Vec<u8>, usize, usize) {
    let offset = usize::from(input.u8() % 32);
    let kind = input.u8();
    let v = u64::from(input.u16());
    let len = match kind & 3 {
        0 => span,
        1 => span.saturating_sub(v & 0xff),
        2 => span + v,
        _ => v,
    } as usize;
    let mut buf = vec![fill; len + offset + 32];
    let aligned = buf.as_ptr().align_offset(16);
    let start = aligned + offset;
    buf.truncate(start + len + 16);
    (buf, start, len)
}

/// Deterministic input data.
fn fill(buf: &mut [u8]) {
    let mut x = 0x2545_f491_4f6c_dd1du64;
    for b in buf {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}
