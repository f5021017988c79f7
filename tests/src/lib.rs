//! Shared fixtures for simak's integration tests.
//!
//! [`oracle`] is the independent reference of SPEC §3: it shares no code with the library's
//! arithmetic. It forms the exact product in `f64` (every binary32 × binary32 product is
//! exact there), rounds it once with `as f32` (round-to-nearest-even, subnormals kept,
//! overflow to ±∞), then applies the integer mode with `f64` rounding functions.
//!
//! The other modules are shared qualification fixtures: [`rng`] (a fixed-seed SplitMix64),
//! [`profiles`] (multiplier profiles), [`tiled`] (the CastTess conversion and layout
//! oracles), [`hcontig`] (the H-contiguous eligibility-boundary cases), [`bf16_tails`] (the
//! four strided BF16 tail cases of the EV74 exact-width gathers), [`bytes`] (little-endian
//! encoding and aligned byte buffers), [`lib_run`] (running a request through the
//! library's A65 path), [`detess`] (the SPEC §12.1 layout oracle of the output side),
//! [`dequant`] (the exact SPEC §12.2 reference), [`data`] (the files of `tests/data/`, with their origins in its
//! README) and [`peer`] (the third-party vectors of `tests/data/peer/`). With the `cli`
//! feature, `cli` holds the helpers of the suites that run a built programme.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(feature = "cli")]
pub mod cli;
pub mod dequant;
pub mod detess;
pub mod preproc;

pub mod sweeps {
    //! Full sweeps run once, in the `test` step of `cargo xtask test` (opt-level 3 on the
    //! host). The `nosimd` step and the `cross` step (AArch64 under qemu) set
    //! `SIMAK_SWEEPS=sampled`: a test whose sweep is long then checks a fixed, spread
    //! sample of the same cases (the same assertions, fewer of them).

    /// The environment variable the `nosimd` and `cross` steps set to `sampled`.
    pub const VAR: &str = "SIMAK_SWEEPS";

    /// `false` when [`VAR`] is `sampled`: run a spread sample instead of the full sweep.
    pub fn full() -> bool {
        std::env::var_os(VAR).is_none_or(|v| v != "sampled")
    }

    /// Every `k`-th item of `items` (always the first and the last) when sweeps are
    /// sampled, else every item.
    pub fn pick<T: Clone>(items: &[T], k: usize) -> Vec<T> {
        if full() || items.len() <= 2 {
            return items.to_vec();
        }
        let last = items.len() - 1;
        items
            .iter()
            .enumerate()
            .filter(|&(i, _)| i % k.max(1) == 0 || i == last)
            .map(|(_, x)| x.clone())
            .collect()
    }
}

pub mod oracle {
    //! The independent f64 Quant oracle.

    use simak_core::DType;
    use simak_core::arith::quant::Rounding;

    /// Exact value of one input element given its raw bits, as `f64`.
    ///
    /// # Panics
    ///
    /// For `DType::I8`, which is not a Quant input.
    pub fn decode(dtype: DType, bits: u32) -> f64 {
        match dtype {
            DType::F32 => f32::from_bits(bits) as f64,
            DType::BF16 => f32::from_bits(bits << 16) as f64,
            DType::F16 => half::f16::from_bits(bits as u16).to_f64(),
            DType::I8 | DType::I16 | DType::I32 => panic!("an integer dtype is not a quant input"),
        }
    }

    /// The binary32 product `x · m` (step 2 of SPEC §3), via an exact f64 product.
    pub fn product(x: f64, multiplier_bits: u32) -> f32 {
        (x * f32::from_bits(multiplier_bits) as f64) as f32
    }

    /// `r + zero_point` before saturation, as `f64` (NaN gives the zero point, ±∞ stays).
    pub fn unsaturated(x: f64, multiplier_bits: u32, zero_point: i32, rounding: Rounding) -> f64 {
        if x.is_nan() {
            return zero_point as f64;
        }
        let p = product(x, multiplier_bits) as f64;
        let r = match rounding {
            Rounding::NearestEven => p.round_ties_even(),
            Rounding::TowardZero => p.trunc(),
            Rounding::TowardPositive => p.ceil(),
            Rounding::TowardNegative => p.floor(),
        };
        r + zero_point as f64
    }

    /// The INT8 result of SPEC §3 for one element's raw bits.
    pub fn quant(
        dtype: DType,
        bits: u32,
        multiplier_bits: u32,
        zero_point: i32,
        rounding: Rounding,
    ) -> i8 {
        unsaturated(decode(dtype, bits), multiplier_bits, zero_point, rounding).clamp(-128.0, 127.0)
            as i8
    }

    /// Whether `r + zero_point` falls outside [-128, 127] (the CLI's saturation count).
    pub fn saturates(
        dtype: DType,
        bits: u32,
        multiplier_bits: u32,
        zero_point: i32,
        rounding: Rounding,
    ) -> bool {
        let v = unsaturated(decode(dtype, bits), multiplier_bits, zero_point, rounding);
        !(-128.0..=127.0).contains(&v)
    }

    #[cfg(test)]
    mod test {
        use super::*;

        #[test]
        fn worked_examples_of_spec_section_3() {
            let ne = Rounding::NearestEven;
            assert_eq!(quant(DType::F32, 15f32.to_bits(), 0x3e99_999a, 0, ne), 4);
            assert_eq!(
                quant(DType::F32, 200f32.to_bits(), 0x3f80_0000, -100, ne),
                100
            );
            assert_eq!(
                quant(DType::F32, 1.25f32.to_bits(), 0x4000_0000, -3, ne),
                -1
            );
            assert_eq!(quant(DType::F32, 0x7f80_0000, 0x3f80_0000, 0, ne), 127);
            assert_eq!(quant(DType::F32, 0xff80_0000, 0x3f80_0000, 0, ne), -128);
            assert_eq!(quant(DType::F32, 0x7fc0_0000, 0x3f80_0000, 5, ne), 5);
        }
    }
}

pub mod axes {
    //! Axis permutations for layout tests.

    /// Every permutation of `0..r` (`r!` of them; meant for small ranks), each as the
    /// `axes` argument of `numpy.transpose`.
    pub fn permutations(r: usize) -> Vec<Vec<usize>> {
        if r == 0 {
            return vec![vec![]];
        }
        let mut out = Vec::new();
        for p in permutations(r - 1) {
            for at in 0..=p.len() {
                let mut q = p.clone();
                q.insert(at, r - 1);
                out.push(q);
            }
        }
        out
    }
}

pub mod rng {
    //! A small fixed-seed PRNG (SplitMix64) so every test is reproducible.

    /// SplitMix64 (Steele, Lea, Flood 2014): 64-bit state, full period, good enough mixing
    /// for test-case generation.
    #[derive(Debug, Clone)]
    pub struct Rng(u64);

    impl Rng {
        /// A generator from a seed.
        pub fn new(seed: u64) -> Rng {
            Rng(seed)
        }

        /// Next 64 random bits.
        pub fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }

        /// Next 32 random bits.
        pub fn next_u32(&mut self) -> u32 {
            (self.next_u64() >> 32) as u32
        }

        /// Uniform in `0..n` (`n > 0`); the tiny modulo bias does not matter here.
        pub fn below(&mut self, n: u64) -> u64 {
            assert!(n > 0, "empty range");
            self.next_u64() % n
        }

        /// Uniform in `lo..=hi`.
        pub fn range_i64(&mut self, lo: i64, hi: i64) -> i64 {
            assert!(lo <= hi, "empty range");
            lo + self.below((hi - lo) as u64 + 1) as i64
        }

        /// `true` with probability `num / den`.
        pub fn chance(&mut self, num: u64, den: u64) -> bool {
            self.below(den) < num
        }

        /// A uniformly chosen element of a nonempty slice.
        pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
            &items[self.below(items.len() as u64) as usize]
        }

        /// Shuffles `items` in place (Fisher–Yates).
        pub fn shuffle<T>(&mut self, items: &mut [T]) {
            for i in (1..items.len()).rev() {
                let j = self.below(i as u64 + 1) as usize;
                items.swap(i, j);
            }
        }
    }

    /// `n` samples of N(0, `sigma`²) as binary32, from a fixed-seed xorshift64 and
    /// Box–Muller: the benchmarks' inputs (the workload of the peers' script).
    pub fn normal_f32(n: usize, sigma: f64) -> Vec<f32> {
        let mut s = 0x853c_49e6_748f_ea9bu64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..n)
            .map(|_| {
                let (u, v) = (next().max(1e-300), next());
                (sigma * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()) as f32
            })
            .collect()
    }
}

pub mod profiles {
    //! Multiplier profiles (binary32 bits), shared by the sweeps.

    use crate::rng::Rng;

    /// `1.0`.
    pub const ONE: u32 = 0x3f80_0000;
    /// The multiplier of SPEC §3's first worked example (≈ 0.3).
    pub const POINT_THREE: u32 = 0x3e99_999a;
    /// Subnormal multipliers: the smallest, small odd, the largest, and a mid one.
    pub const SUBNORMAL: [u32; 4] = [0x0000_0001, 0x0000_0003, 0x007f_ffff, 0x0040_0001];
    /// Seed of the random normal multipliers.
    pub const RANDOM_SEED: u64 = 0x5eed_0000_0000_0003;

    /// binary32 bits of `2^k` for `-149 ≤ k ≤ 127` (subnormal below -126).
    pub fn power_of_two(k: i32) -> u32 {
        assert!((-149..=127).contains(&k), "2^{k} is not a binary32");
        if k < -126 {
            1u32 << (k + 149)
        } else {
            ((k + 127) as u32) << 23
        }
    }

    /// Every power of two 2^-149 … 2^127 (277 multipliers, both ends included).
    pub fn powers_of_two() -> Vec<u32> {
        (-149..=127).map(power_of_two).collect()
    }

    /// `n` fixed-seed random normal multipliers: half with any normal exponent, half with
    /// exponents 2^-24 … 2^10 (where most products land in or near the INT8 range), with
    /// random significands (never a power of two).
    pub fn random_normal(n: usize) -> Vec<u32> {
        let mut rng = Rng::new(RANDOM_SEED);
        (0..n)
            .map(|i| {
                let exp = if i % 2 == 0 {
                    rng.range_i64(1, 254) as u32
                } else {
                    rng.range_i64(127 - 24, 127 + 10) as u32
                };
                let mant = (rng.next_u32() & 0x7f_ffff) | 1;
                (exp << 23) | mant
            })
            .collect()
    }

    /// The full profile of the sweeps: 1.0 and every power of two, the subnormal and named
    /// multipliers, and `random` random normal ones; duplicates removed, order kept.
    pub fn all(random: usize) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        let candidates = std::iter::once(ONE)
            .chain(powers_of_two())
            .chain(SUBNORMAL)
            .chain(std::iter::once(POINT_THREE))
            .chain(random_normal(random));
        for m in candidates {
            if !out.contains(&m) {
                out.push(m);
            }
        }
        out
    }
}

pub mod bytes {
    //! Little-endian element encoding and aligned byte buffers (no `unsafe`).

    use simak_core::DType;

    /// Encodes raw element bits of `dtype` as little-endian bytes.
    pub fn encode(dtype: DType, bits: &[u32]) -> Vec<u8> {
        let mut out = Vec::with_capacity(bits.len() * dtype.size());
        for &b in bits {
            put(dtype, &mut out, b);
        }
        out
    }

    /// Appends one element's little-endian bytes.
    pub fn put(dtype: DType, out: &mut Vec<u8>, bits: u32) {
        match dtype.size() {
            4 => out.extend_from_slice(&bits.to_le_bytes()),
            2 => out.extend_from_slice(&(bits as u16).to_le_bytes()),
            _ => out.push(bits as u8),
        }
    }

    /// Writes one element's little-endian bytes at `at`.
    pub fn write(dtype: DType, buf: &mut [u8], at: usize, bits: u32) {
        let size = dtype.size();
        buf[at..at + size].copy_from_slice(&bits.to_le_bytes()[..size]);
    }

    /// Reads one element's raw bits (zero-extended) at `at`.
    pub fn read(dtype: DType, buf: &[u8], at: usize) -> u32 {
        let mut b = [0u8; 4];
        let size = dtype.size();
        b[..size].copy_from_slice(&buf[at..at + size]);
        u32::from_le_bytes(b)
    }

    /// A byte buffer whose visible part starts at a 64-byte aligned address.
    #[derive(Debug, Clone)]
    pub struct Aligned {
        storage: Vec<u8>,
        start: usize,
        len: usize,
    }

    impl Aligned {
        /// `len` bytes, all `fill`, starting 64-byte aligned.
        pub fn new(len: usize, fill: u8) -> Aligned {
            let storage = vec![fill; len + 64];
            let start = (64 - storage.as_ptr() as usize % 64) % 64;
            Aligned {
                storage,
                start,
                len,
            }
        }

        /// A copy of `data` starting 64-byte aligned.
        pub fn from_slice(data: &[u8]) -> Aligned {
            let mut a = Aligned::new(data.len(), 0);
            a.as_mut_slice().copy_from_slice(data);
            a
        }

        /// The visible bytes.
        pub fn as_slice(&self) -> &[u8] {
            &self.storage[self.start..self.start + self.len]
        }

        /// The visible bytes, mutable.
        pub fn as_mut_slice(&mut self) -> &mut [u8] {
            &mut self.storage[self.start..self.start + self.len]
        }
    }
}

pub mod cpu {
    //! The instruction-set levels of this CPU, asked of the CPU directly (the standard
    //! library's feature detection), not through the library's ISA table: the oracle of the
    //! tests of `simak::a65::Level` and of the CLI's `--level` / `levels`.

    /// Every level name of `simak::a65::Level` as the ISA table writes it, in its order.
    pub const NAMES: [&str; 7] = [
        "scalar",
        "x86_64-sse4.1",
        "x86_64-avx2",
        "x86_64-avx512",
        "x86_64-avx512vbmi",
        "aarch64-neon",
        "aarch64-neon-fp16",
    ];

    /// The level names (those of `simak::a65::Level`) this CPU has, in the table's order,
    /// `scalar` first.
    pub fn levels() -> Vec<&'static str> {
        let mut out = vec!["scalar"];
        #[cfg(target_arch = "x86_64")]
        {
            let avx2 =
                std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("f16c");
            let avx512 = avx2
                && std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512vl");
            let vbmi = avx512 && std::is_x86_feature_detected!("avx512vbmi");
            for (has, name) in [
                (std::is_x86_feature_detected!("sse4.1"), "x86_64-sse4.1"),
                (avx2, "x86_64-avx2"),
                (avx512, "x86_64-avx512"),
                (vbmi, "x86_64-avx512vbmi"),
            ] {
                if has {
                    out.push(name);
                }
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            out.push("aarch64-neon");
            if std::arch::is_aarch64_feature_detected!("fp16") {
                out.push("aarch64-neon-fp16");
            }
        }
        out
    }

    /// Whether this CPU has the level named `name`.
    pub fn has(name: &str) -> bool {
        levels().contains(&name)
    }
}

pub mod lib_run {
    //! Runs requests through the library (`check_inference`, A65 `prepare` + `execute`).

    use simak::a65;
    use simak::a65::Level;
    use simak::a65::quant::Prepared;
    use simak::ops::quant::{Params, Plan, Request, check_inference};
    use simak::{DType, TensorSpec};

    use crate::bytes::{Aligned, encode};

    /// The plan prepared with `prepare` (the route a user gets) first, then with every
    /// other route this CPU offers, forced through `prepare_at`
    /// (SPEC §10: every route must give the same bytes).
    pub fn variants(plan: &Plan) -> Vec<Prepared> {
        let default = a65::quant::prepare(plan);
        let mut out = vec![default];
        for route in Level::ALL.into_iter().rev() {
            if route == default.level() {
                continue;
            }
            if let Ok(p) = a65::quant::prepare_at(plan, route) {
                out.push(p);
            }
        }
        out
    }

    /// Quantizes `bits` (raw elements of `dtype`) as one contiguous rank-1 tensor and returns
    /// the INT8 outputs. Panics if the library rejects the request or the buffers.
    pub fn contiguous(dtype: DType, bits: &[u32], params: Params) -> Vec<i8> {
        let n = bits.len() as u64;
        let plan = check_inference(&Request {
            input: TensorSpec::contiguous([n], dtype),
            output: TensorSpec::contiguous([n], DType::I8),
            params,
        })
        .expect("contiguous request admitted");
        let prepared = a65::quant::prepare(&plan);
        let input = Aligned::from_slice(&encode(dtype, bits));
        let mut output = vec![0u8; bits.len()];
        a65::quant::execute(&prepared, input.as_slice(), &mut output).expect("execute");
        output.into_iter().map(|b| b as i8).collect()
    }

    /// Like [`contiguous`] with an explicit rank-`R` row-major `shape`.
    pub fn shaped<const R: usize>(
        dtype: DType,
        shape: [u64; R],
        bits: &[u32],
        params: Params,
    ) -> Vec<i8> {
        let plan = check_inference(&Request {
            input: TensorSpec::contiguous(shape, dtype),
            output: TensorSpec::contiguous(shape, DType::I8),
            params,
        })
        .expect("request admitted");
        assert_eq!(
            plan.elements(),
            bits.len() as u64,
            "shape and data disagree"
        );
        let prepared = a65::quant::prepare(&plan);
        let input = Aligned::from_slice(&encode(dtype, bits));
        let mut output = vec![0u8; bits.len()];
        a65::quant::execute(&prepared, input.as_slice(), &mut output).expect("execute");
        output.into_iter().map(|b| b as i8).collect()
    }
}

pub mod tiled {
    //! The independent CastTess oracles: the BF16 conversions of SPEC §4 written from the
    //! text (`half` for the FP16 numbers), and a plain-loop layout oracle of SPEC §5 that
    //! shares no code with the library's traversal or with `TiledView::offset_of`. The
    //! std-adapter CastTess tests (`std-adapter/tests/suite/tess_common.rs`) and
    //! `simak-qualify correctness` use them.

    use simak_core::DType;
    use simak_core::layout::Channels;

    /// Random CastTess input bits for `dtype` (the low 16 bits for BF16 and FP16), one in
    /// five a special value: zeros, infinities, NaNs of both payload ends, ties, subnormals,
    /// the largest finite value.
    pub fn random_bits(rng: &mut crate::rng::Rng, dtype: DType) -> u32 {
        const SPECIALS32: [u32; 14] = [
            0,
            0x8000_0000,
            0x7f80_0000,
            0xff80_0000,
            0x7f80_0001,
            0x7fff_ffff,
            0xffff_ffff,
            0x0000_8000,
            0x3f80_8000,
            0x3f81_8000,
            0x0001_7fff,
            0x7f7f_ffff,
            0x3f00_0000,
            0x4040_0000,
        ];
        const SPECIALS16: [u32; 12] = [
            0, 0x8000, 0x7c00, 0xfc00, 0x7c01, 0x7fff, 0x0001, 0x03ff, 0x0202, 0x7f80, 0x7fc1,
            0x3f80,
        ];
        let special = rng.chance(1, 5);
        match dtype {
            DType::F32 if special => *rng.pick(&SPECIALS32),
            DType::F32 => rng.next_u32(),
            _ if special => *rng.pick(&SPECIALS16),
            _ => rng.next_u32() & 0xffff,
        }
    }

    /// FP32 → BF16 as SPEC §4 writes it.
    pub fn oracle_f32(bits: u32) -> u16 {
        (bits.wrapping_add(0x7fff + ((bits >> 16) & 1)) >> 16) as u16
    }

    /// FP16 → BF16: `half`'s exact widening and its round-to-nearest-even narrowing for
    /// numbers; the SPEC §4 quieting rule for NaNs.
    pub fn oracle_f16(bits: u16) -> u16 {
        let f = half::f16::from_bits(bits);
        if f.is_nan() {
            (bits & 0x8000) | 0x7fc0 | ((bits & 0x3ff) >> 3)
        } else {
            half::bf16::from_f32(f.to_f32()).to_bits()
        }
    }

    /// BF16 bits of one raw input element.
    ///
    /// # Panics
    ///
    /// For `DType::I8`, which is not an input.
    pub fn oracle_bf16(dtype: DType, bits: u32) -> u16 {
        match dtype {
            DType::F32 => oracle_f32(bits),
            DType::F16 => oracle_f16(bits as u16),
            DType::BF16 => bits as u16,
            DType::I8 | DType::I16 | DType::I32 => panic!("an integer dtype is not an input"),
        }
    }

    /// Row-major odometer over `shape`: calls `f` with every index.
    pub fn for_each_index(shape: &[usize], mut f: impl FnMut(&[usize])) {
        if shape.contains(&0) {
            return;
        }
        let mut index = vec![0usize; shape.len()];
        loop {
            f(&index);
            let mut k = shape.len();
            loop {
                if k == 0 {
                    return;
                }
                k -= 1;
                index[k] += 1;
                if index[k] < shape[k] {
                    break;
                }
                index[k] = 0;
            }
        }
    }

    /// The plain-loop layout oracle of SPEC §5: the whole physical buffer, padding included,
    /// for element values `value(index)` (`planes` bytes each, plane 0 first).
    pub fn oracle_tiled(
        shape: &[u64],
        axes: [Option<u8>; 4],
        tile: [u32; 4],
        channels: Channels,
        planes: usize,
        value: impl Fn(&[usize]) -> [u8; 2],
    ) -> Vec<u8> {
        let shape: Vec<usize> = shape.iter().map(|&e| e as usize).collect();
        let rank = shape.len();
        let role_axis: Vec<Option<usize>> = axes.iter().map(|a| a.map(usize::from)).collect();
        let ext: Vec<usize> = role_axis
            .iter()
            .map(|a| a.map_or(1, |a| shape[a]))
            .collect();
        let t: Vec<usize> = tile.iter().map(|&x| x as usize).collect();
        let outer: Vec<usize> = (0..rank)
            .filter(|a| !role_axis.contains(&Some(*a)))
            .collect();
        let outer_shape: Vec<usize> = outer.iter().map(|&a| shape[a]).collect();
        let mut out = Vec::new();
        if shape.contains(&0) {
            return out;
        }
        let n_tiles = |r: usize| ext[r].div_ceil(t[r]);
        for_each_index(&outer_shape, |oi| {
            for ic in 0..n_tiles(3) {
                for id in 0..n_tiles(0) {
                    for ih in 0..n_tiles(1) {
                        for iw in 0..n_tiles(2) {
                            let origin = [id * t[0], ih * t[1], iw * t[2], ic * t[3]];
                            let actual: Vec<usize> =
                                (0..4).map(|r| t[r].min(ext[r] - origin[r])).collect();
                            let stored = match channels {
                                Channels::Compact => actual[3],
                                Channels::PadTo16 => actual[3].div_ceil(16) * 16,
                                Channels::CBlock16 => {
                                    unreachable!("input-side ops refuse cblock16")
                                }
                            };
                            let mut bytes = Vec::new();
                            for d in 0..actual[0] {
                                for h in 0..actual[1] {
                                    for w in 0..actual[2] {
                                        for plane in 0..planes {
                                            for c in 0..stored {
                                                if c >= actual[3] {
                                                    bytes.push(0);
                                                    continue;
                                                }
                                                let mut index = vec![0usize; rank];
                                                for (k, &a) in outer.iter().enumerate() {
                                                    index[a] = oi[k];
                                                }
                                                let coord = [d, h, w, c];
                                                for r in 0..4 {
                                                    if let Some(a) = role_axis[r] {
                                                        index[a] = origin[r] + coord[r];
                                                    }
                                                }
                                                bytes.push(value(&index)[plane]);
                                            }
                                        }
                                    }
                                }
                            }
                            while bytes.len() % 16 != 0 {
                                bytes.push(0);
                            }
                            out.extend(bytes);
                        }
                    }
                }
            }
        });
        out
    }
}

pub mod hcontig {
    //! The 30 H-contiguous eligibility-boundary cases of CastTess (10 per dtype, SPEC §8
    //! "whole-panel H-contiguous path"), as data: `simak-qualify correctness`
    //! (`correct/casttess/hcontig/<dtype>/<name>`) and the std-adapter EV74 tests
    //! (`ev74_tess_paths`) both use this one table. Each case states whether the path's
    //! rule admits it: one regular panel (the tile is the whole tensor and fits one band),
    //! H > 1, an H stride of one element, a W pitch that fits a signed 32-bit value, at
    //! least 128 input bytes.

    use simak::DType;
    use simak::layout::{Channels, MlaTiled};

    /// Packed byte strides of `shape` in the physical axis `order` (slowest first), with
    /// `gap` = `(axis, n)`: `n` elements of gap after the run of `axis`.
    pub fn ordered(
        shape: &[u64],
        order: &[usize],
        elem: u64,
        gap: Option<(usize, u64)>,
    ) -> Vec<u64> {
        let mut strides = vec![0u64; shape.len()];
        let mut run = elem;
        for &a in order.iter().rev() {
            strides[a] = run;
            run *= shape[a].max(1);
            if let Some((g, n)) = gap
                && g == a
            {
                run += n * elem;
            }
        }
        strides
    }

    /// The exhaustive 16-bit sweep through the H-contiguous path: `[H = 16, W = 64,
    /// C = 64]` (65536 elements), H fastest in memory, then W, then C; tiles of 16 × 4
    /// pixels × 64 channels (16 tiles, each one band of 4096 values, so every tile is
    /// eligible). Returns (shape, byte strides of 2-byte elements, layout).
    pub fn sweep() -> (Vec<u64>, Vec<u64>, MlaTiled) {
        let shape = vec![16, 64, 64];
        let strides = ordered(&shape, &[2, 1, 0], 2, None);
        let layout = MlaTiled::new(
            [None, Some(0), Some(1), Some(2)],
            [1, 16, 4, 64],
            Channels::Compact,
        );
        (shape, strides, layout)
    }

    /// One boundary case over logical axes `[H, W, C]`.
    #[derive(Debug, Clone)]
    pub struct Case {
        /// The case's name (the last part of its qualification ID).
        pub name: &'static str,
        /// Logical extents `[H, W, C]`.
        pub shape: Vec<u64>,
        /// Input byte strides.
        pub strides: Vec<u64>,
        /// The layout: roles H, W, C on axes 0, 1, 2, tile D = 1.
        pub layout: MlaTiled,
        /// Whether the H-contiguous rule admits the case (what a device must take).
        pub eligible: bool,
    }

    /// (name, [H, W, C], physical order slowest first, W gap in elements, H stride in
    /// elements, tile (H, W, C; `None`: the whole tensor), channels, eligible).
    type Def = (
        &'static str,
        [u64; 3],
        [usize; 3],
        u64,
        u64,
        Option<[u32; 3]>,
        Channels,
        bool,
    );

    /// The 10 cases of `dtype`, in their fixed order.
    pub fn cases(dtype: DType) -> Vec<Case> {
        let e = dtype.size() as u64;
        // C such that [2, 4, C] holds exactly 128 bytes.
        let c128 = 16 / e;
        let compact = Channels::Compact;
        let pad = Channels::PadTo16;
        let defs: [Def; 10] = [
            (
                "exact-128-bytes",
                [2, 4, c128],
                [2, 1, 0],
                0,
                1,
                None,
                compact,
                true,
            ),
            (
                "below-128-bytes",
                [2, 4, c128 - 1],
                [2, 1, 0],
                0,
                1,
                None,
                compact,
                false,
            ),
            (
                "h-extent-1",
                [1, 8, 2 * c128],
                [2, 1, 0],
                0,
                1,
                None,
                compact,
                false,
            ),
            (
                "h-stride-2",
                [2, 4, c128],
                [2, 1, 0],
                0,
                2,
                None,
                compact,
                false,
            ),
            (
                "w-pitch-gap",
                [2, 4, c128],
                [2, 1, 0],
                3,
                1,
                None,
                pad,
                true,
            ),
            (
                "split-h-panels",
                [4, 4, c128],
                [2, 1, 0],
                0,
                1,
                Some([1, 4, c128 as u32]),
                compact,
                false,
            ),
            (
                "square-16x16x3",
                [16, 16, 3],
                [2, 1, 0],
                0,
                1,
                None,
                pad,
                true,
            ),
            (
                "tall-64x2x5",
                [64, 2, 5],
                [2, 1, 0],
                0,
                1,
                None,
                compact,
                true,
            ),
            ("odd-3x5x7", [3, 5, 7], [2, 1, 0], 0, 1, None, compact, true),
            (
                "w-slowest-2x3xC",
                [2, 3, 2 * c128],
                [1, 2, 0],
                0,
                1,
                None,
                pad,
                true,
            ),
        ];
        defs.iter()
            .map(
                |&(name, shape, order, w_gap, h_stride, tile, channels, eligible)| {
                    // Physical order slowest first over logical [H=0, W=1, C=2]; H is fastest.
                    let mut strides = ordered(&shape, &order, e, (w_gap > 0).then_some((1, w_gap)));
                    if h_stride != 1 {
                        // H stride of `h_stride` elements: spread every other axis accordingly.
                        strides = strides.iter().map(|s| s * h_stride).collect();
                    }
                    let tile = tile.unwrap_or([shape[0] as u32, shape[1] as u32, shape[2] as u32]);
                    Case {
                        name,
                        shape: shape.to_vec(),
                        strides,
                        layout: MlaTiled::new(
                            [None, Some(0), Some(1), Some(2)],
                            [1, tile[0], tile[1], tile[2]],
                            channels,
                        ),
                        eligible,
                    }
                },
            )
            .collect()
    }
}

pub mod bf16_tails {
    //! The four strided BF16 tail cases of the EV74 CastTess gathers (SPEC §8 "BF16
    //! exact-width gathers"), as data shared by the std-adapter EV74 tests
    //! (`ev74_tess_gathers`) and `simak-qualify correctness`
    //! (`correct/casttess/bf16-tail/<name>`, which also checks the row counts on ev74-sim).
    //! Each is a BF16 image-like tensor with a single source channel whose pixels are
    //! strided (holes between them, the pixels the input's W stride apart: every task
    //! gathers one channel per pixel; with more source channels the short rows would stage
    //! complete pixels instead, SPEC §8 "Staged complete-pixel bands") and whose tiles cross
    //! one boundary (W, H, D, or an outer axis): full tiles have bands of at least 64 pixels
    //! with rows of 16 to 63 pixels (one exact-width 2D DMA command per row), boundary tiles
    //! have rows or bands too short (direct loads). Two are compact, two Pad16. Each case
    //! lists the exact-width rows and the direct rows a device running the SPEC §8 rules
    //! makes in one call (any worker count).

    use simak::layout::{Channels, MlaTiled};

    /// One tail case (input dtype BF16).
    #[derive(Debug, Clone)]
    pub struct Case {
        /// The case's name.
        pub name: &'static str,
        /// Logical extents.
        pub shape: Vec<u64>,
        /// Input byte strides (multiples of 2; gaps are holes that are never read).
        pub strides: Vec<u64>,
        /// The tiled layout (tile C = 1).
        pub layout: MlaTiled,
        /// Source rows moved by one exact-width 2D DMA command each, in one call.
        pub exact_width_rows: u64,
        /// Source rows (here: single pixels) read with direct loads, in one call.
        pub direct_rows: u64,
    }

    /// The four cases, in their fixed order.
    pub fn cases() -> Vec<Case> {
        let hwc = [None, Some(0), Some(1), Some(2)];
        vec![
            // [H 6, W 40, C 1], pixels 6 bytes apart; tiles 4 x 18 pixels: two full W tiles
            // of 4 exact-width rows of 18 pixels (bands of 72); the W boundary tile (4
            // pixels) and the H boundary tiles (bands of 36 and 8 pixels) are direct:
            // 16 + 2 x 36 + 8 direct rows.
            Case {
                name: "w-boundary-compact",
                shape: vec![6, 40, 1],
                strides: vec![240, 6, 2],
                layout: MlaTiled::new(hwc, [1, 4, 18, 1], Channels::Compact),
                exact_width_rows: 2 * 4,
                direct_rows: 16 + 2 * 36 + 8,
            },
            // [H 67, W 20, C 1], pixels 4 bytes apart, rows padded to 88 bytes; tiles 8 x 20
            // pixels Pad16 (bands of up to 256 pixels): 8 full H tiles of 8 exact-width
            // rows, and the H boundary tile (3 rows, a band of 60) direct.
            Case {
                name: "h-boundary-pad16",
                shape: vec![67, 20, 1],
                strides: vec![88, 4, 2],
                layout: MlaTiled::new(hwc, [1, 8, 20, 1], Channels::PadTo16),
                exact_width_rows: 8 * 8,
                direct_rows: 60,
            },
            // [D 5, H 2, W 34, C 1], pixels 4 bytes apart; tiles 2 x 2 x 24 pixels: two full
            // D tiles with full W (bands of 96, 4 exact-width rows each); the W boundary
            // (10 pixels: bands of 40) and the D boundary (td = 1: bands of 48 and 20) are
            // direct.
            Case {
                name: "d-boundary-compact",
                shape: vec![5, 2, 34, 1],
                strides: vec![272, 136, 4, 2],
                layout: MlaTiled::new(
                    [Some(0), Some(1), Some(2), Some(3)],
                    [2, 2, 24, 1],
                    Channels::Compact,
                ),
                exact_width_rows: 2 * 4,
                direct_rows: 2 * 40 + 48 + 20,
            },
            // [N 2, H 5, W 50, C 1], axis 0 outer, pixels 6 bytes apart, gaps after each H
            // row (4 bytes) and each outer slice (12 bytes); tiles 4 x 17 pixels Pad16: per
            // outer index, two full tiles (bands of 68) and the W boundary tile (16 pixels,
            // a band of exactly 64) take 4 exact-width rows each; the H boundary tiles (one
            // row: bands of 17, 17 and 16) are direct.
            Case {
                name: "outer-pad16",
                shape: vec![2, 5, 50, 1],
                strides: vec![5 * 304 + 12, 304, 6, 2],
                layout: MlaTiled::new(
                    [None, Some(1), Some(2), Some(3)],
                    [1, 4, 17, 1],
                    Channels::PadTo16,
                ),
                exact_width_rows: 2 * 3 * 4,
                direct_rows: 2 * (17 + 17 + 16),
            },
        ]
    }
}

pub mod data {
    //! The test files kept in the repository under `tests/data/` (origins and licences in
    //! `tests/data/README.md`).

    use std::path::{Path, PathBuf};

    /// The data folder: `tests/data/` of the repository.
    pub const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data");

    /// The path of `name` (a path relative to [`DIR`], such as `peer/onnx-cast-bf16.json`).
    ///
    /// # Panics
    ///
    /// When the file is not there, naming the path it looked for.
    pub fn path(name: &str) -> PathBuf {
        let path = Path::new(DIR).join(name);
        assert!(
            path.is_file(),
            "test data file {} is missing (see tests/data/README.md)",
            path.display()
        );
        path
    }

    /// The bytes of `name` (see [`path`]).
    ///
    /// # Panics
    ///
    /// When the file is missing or unreadable, naming its path.
    pub fn read(name: &str) -> Vec<u8> {
        let path = path(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
    }
}

pub mod peer {
    //! Loader for the third-party vectors of `tests/data/peer/` (see its README).

    use std::path::{Path, PathBuf};

    use serde_json::Value;
    use simak_core::DType;

    /// The peer folder: `tests/data/peer/` of the repository.
    pub const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/peer/");

    /// One peer entry, as far as the tests need it.
    #[derive(Debug, Clone)]
    pub struct Entry {
        /// File the entry came from.
        pub file: String,
        /// Test identifier.
        pub name: String,
        /// `quantize` or `cast_bf16`.
        pub op: String,
        /// Input dtype.
        pub dtype: DType,
        /// Row-major shape (`[]` = rank 0).
        pub shape: Vec<u64>,
        /// Input raw bits.
        pub in_bits: Vec<u32>,
        /// Multiplier bits (quantize only).
        pub multiplier_bits: Option<u32>,
        /// Zero point (quantize only).
        pub zero_point: Option<i32>,
        /// Rounding name (always `nearest-even` in the peer data).
        pub rounding: String,
        /// Expected INT8 values (quantize) — `None` for property-only or cast entries.
        pub expected_i8: Option<Vec<i8>>,
        /// Expected raw bits (cast) — `None` otherwise.
        pub expected_bits: Option<Vec<u32>>,
        /// `agrees_with_contract`.
        pub agrees: bool,
    }

    fn hex(v: &Value) -> u32 {
        let s = v.as_str().expect("hex string");
        u32::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex value")
    }

    fn dtype(name: &str) -> DType {
        match name {
            "float32" => DType::F32,
            "float16" => DType::F16,
            "bfloat16" => DType::BF16,
            other => panic!("unknown peer dtype {other}"),
        }
    }

    /// The `*.json` files of the peer folder, sorted.
    pub fn files() -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = std::fs::read_dir(DIR)
            .unwrap_or_else(|e| panic!("peer folder {DIR}: {e}"))
            .map(|d| d.expect("dir entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        out.sort();
        out
    }

    /// Parses one entry.
    pub fn entry(file: &str, v: &Value) -> Entry {
        let op = v["op"].as_str().expect("op").to_owned();
        let expected = &v["expected"];
        let (expected_i8, expected_bits) = if expected.is_null() {
            (None, None)
        } else if op == "quantize" {
            let vals = expected
                .as_array()
                .expect("expected array")
                .iter()
                .map(|x| {
                    let i = x.as_i64().expect("int expected");
                    i8::try_from(i).expect("int8 expected")
                })
                .collect();
            (Some(vals), None)
        } else {
            let vals = expected
                .as_array()
                .expect("expected array")
                .iter()
                .map(hex)
                .collect();
            (None, Some(vals))
        };
        Entry {
            file: file.to_owned(),
            name: v["name"].as_str().expect("name").to_owned(),
            dtype: dtype(v["in_dtype"].as_str().expect("in_dtype")),
            shape: v["shape"]
                .as_array()
                .expect("shape")
                .iter()
                .map(|x| x.as_u64().expect("extent"))
                .collect(),
            in_bits: v["in_bits"]
                .as_array()
                .expect("in_bits")
                .iter()
                .map(hex)
                .collect(),
            multiplier_bits: v["multiplier_bits"]
                .as_str()
                .map(|_| hex(&v["multiplier_bits"])),
            zero_point: v["zero_point"].as_i64().map(|z| z as i32),
            rounding: v["rounding"].as_str().unwrap_or("nearest-even").to_owned(),
            expected_i8,
            expected_bits,
            agrees: v["agrees_with_contract"]
                .as_bool()
                .expect("agrees_with_contract"),
            op,
        }
    }

    /// The `agreeing` entries of one file.
    pub fn agreeing(path: &Path) -> Vec<Entry> {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let root: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        root["agreeing"]
            .as_array()
            .unwrap_or_else(|| panic!("{file}: no agreeing list"))
            .iter()
            .map(|v| entry(&file, v))
            .collect()
    }
}
