//! The ISA table: every instruction-set level the A65 kernels use, its features and its
//! name, in one place (the Quant routes and the CastTess levels name the same features the
//! same way).
//!
//! Each level is a capability token: a zero-sized `Copy` type whose only constructor is
//! [`Isa::detect`], which returns it when this CPU has every feature of the level. Kernels
//! are written once over lane traits implemented by the tokens (`super::quant::QuantLanes`,
//! `super::convert::ConvertLanes`, `super::band::BandLanes`, `super::split::SplitLanes`),
//! and reach their `#[target_feature]` code through [`Isa::vectorize`], which needs a token.
//! So the safety of every wrapper follows from the token's type: holding one proves the
//! features were detected.
//!
//! | level | name | features |
//! | --- | --- | --- |
//! | [`Sse41`] | `x86_64-sse4.1` | SSE4.1 |
//! | [`Avx2`] | `x86_64-avx2` | AVX2, F16C |
//! | [`Avx512`] | `x86_64-avx512` | AVX2, F16C, AVX-512 F, BW, VL |
//! | [`Avx512Vbmi`] | `x86_64-avx512vbmi` | as `x86_64-avx512`, plus AVX-512 VBMI |
//! | [`Neon`] | `aarch64-neon` | NEON (the AArch64 baseline) |
//! | [`NeonFp16`] | `aarch64-neon-fp16` | NEON, FEAT_FP16 (asimdhp) |

/// A kernel written once over lanes `L`: [`Isa::vectorize`] runs it with `L`'s target
/// features enabled.
pub(crate) trait Kernel<L> {
    /// What the kernel returns.
    type Output;

    /// The kernel's body. Implementations are `#[inline(always)]`, so that the body (and
    /// every lane operation it calls) is compiled inside the `#[target_feature]` entry of
    /// [`Isa::vectorize`].
    fn run(self, lanes: L) -> Self::Output;
}

/// One instruction-set level: a capability token.
pub(crate) trait Isa: Copy + Send + Sync + 'static {
    /// The level's name in diagnostics (`implementation()`) and on the CLI.
    const NAME: &'static str;

    /// The token, when this CPU has every feature of the level; `None` otherwise (and on
    /// other architectures).
    fn detect() -> Option<Self>;

    /// Runs `kernel` with the level's target features enabled. Safe: the token proves the
    /// features are there.
    fn vectorize<K: Kernel<Self>>(self, kernel: K) -> K::Output;
}

/// Defines the tokens (name, `#[target_feature]` list, detection) and the public
/// [`Level`] enum with one variant per token (same identifier and docs) after `Scalar`,
/// its names, feature lists in words and detection: the ISA table is the one place a level
/// is written.
macro_rules! isa_table {
    ($(
        $(#[$doc:meta])*
        $token:ident = $name:literal, arch $arch:literal, features $features:literal,
            words $words:literal, detect $detect:expr;
    )*) => {
        /// An instruction-set level of the ISA table, or the portable `scalar` level: the
        /// one level type of the A65 backend (`prepare_at`, `Prepared::level`,
        /// `simak bench --level`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Level {
            /// The portable paths: Quant's exact integer path (SPEC §3), the scalar
            /// CastTess kernels. Every CPU has it.
            Scalar,
            $($(#[$doc])* $token,)*
        }

        impl Level {
            /// Every level, in the ISA table's order (`scalar` first).
            pub const ALL: [Level; 1 + [$($name),*].len()] = [Level::Scalar, $(Level::$token),*];

            /// The level's name, as `FromStr` takes it and as the ISA table names it (e.g.
            /// `x86_64-avx512vbmi`).
            pub const fn name(self) -> &'static str {
                match self {
                    Level::Scalar => "scalar",
                    $(Level::$token => $name,)*
                }
            }

            /// The CPU features the level needs, in words (e.g. `x86-64 AVX2, F16C`).
            pub const fn features(self) -> &'static str {
                match self {
                    Level::Scalar => "none",
                    $(Level::$token => $words,)*
                }
            }

            /// Whether this CPU has every feature of the level (runtime detection, the
            /// capability token's; `scalar` always).
            pub fn is_detected(self) -> bool {
                match self {
                    Level::Scalar => true,
                    $(Level::$token => <$token as Isa>::detect().is_some(),)*
                }
            }
        }

        isa_tokens! {$(
            $(#[$doc])*
            $token = $name, arch $arch, features $features, detect $detect;
        )*}
    };
}

/// The capability tokens of [`isa_table!`].
macro_rules! isa_tokens {
    ($(
        $(#[$doc:meta])*
        $token:ident = $name:literal, arch $arch:literal, features $features:literal,
            detect $detect:expr;
    )*) => {$(
        $(#[$doc])*
        #[derive(Debug, Clone, Copy)]
        #[cfg_attr(not(target_arch = $arch), allow(dead_code))]
        pub(crate) struct $token(());

        impl Isa for $token {
            const NAME: &'static str = $name;

            #[inline(always)]
            fn detect() -> Option<Self> {
                #[cfg(target_arch = $arch)]
                {
                    ($detect).then_some($token(()))
                }
                #[cfg(not(target_arch = $arch))]
                {
                    None
                }
            }

            #[inline(always)]
            fn vectorize<K: Kernel<Self>>(self, kernel: K) -> K::Output {
                #[cfg(target_arch = $arch)]
                {
                    /// The level's entry: the kernel's body compiled with its features.
                    ///
                    /// # Safety
                    ///
                    /// The CPU has the features.
                    #[target_feature(enable = $features)]
                    unsafe fn entry<K: Kernel<$token>>(lanes: $token, kernel: K) -> K::Output {
                        kernel.run(lanes)
                    }
                    // SAFETY: `self` exists, so `detect` found every feature of the level.
                    unsafe { entry(self, kernel) }
                }
                #[cfg(not(target_arch = $arch))]
                {
                    kernel.run(self)
                }
            }
        }
    )*};
}

isa_table! {
    /// x86-64 SSE4.1.
    Sse41 = "x86_64-sse4.1", arch "x86_64", features "sse4.1",
        words "x86-64 SSE4.1", detect std::is_x86_feature_detected!("sse4.1");
    /// x86-64 AVX2 with F16C.
    Avx2 = "x86_64-avx2", arch "x86_64", features "avx2,f16c",
        words "x86-64 AVX2, F16C", detect std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("f16c");
    /// x86-64 AVX-512 F, BW and VL (with AVX2 and F16C).
    Avx512 = "x86_64-avx512", arch "x86_64", features "avx2,f16c,avx512f,avx512bw,avx512vl",
        words "x86-64 AVX2, F16C, AVX-512 F, BW, VL", detect Avx2::detect().is_some()
            && std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vl");
    /// x86-64 AVX-512 F, BW, VL and VBMI (with AVX2 and F16C).
    Avx512Vbmi = "x86_64-avx512vbmi", arch "x86_64",
        features "avx2,f16c,avx512f,avx512bw,avx512vl,avx512vbmi",
        words "x86-64 AVX2, F16C, AVX-512 F, BW, VL, VBMI", detect Avx512::detect().is_some() && std::is_x86_feature_detected!("avx512vbmi");
    /// AArch64 NEON (part of the baseline).
    Neon = "aarch64-neon", arch "aarch64", features "neon",
        words "AArch64 NEON", detect true;
    /// AArch64 NEON with FP16 vector arithmetic (FEAT_FP16, asimdhp).
    NeonFp16 = "aarch64-neon-fp16", arch "aarch64", features "neon,fp16",
        words "AArch64 NEON, FEAT_FP16", detect std::arch::is_aarch64_feature_detected!("fp16");
}

impl Avx2 {
    /// The SSE4.1 token this one implies.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    #[inline(always)]
    pub(crate) fn sse41(self) -> Sse41 {
        Sse41(())
    }
}

impl Avx512 {
    /// The AVX2 + F16C token this one implies.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    #[inline(always)]
    pub(crate) fn avx2(self) -> Avx2 {
        Avx2(())
    }
}

impl Avx512Vbmi {
    /// The AVX-512 F/BW/VL token this one implies.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    #[inline(always)]
    pub(crate) fn avx512(self) -> Avx512 {
        Avx512(())
    }
}

/// Implements a lane trait for a token, with every method compiled with the token's
/// features.
///
/// Written as `lanes! { impl Trait for Token with "features" { types; consts; fns } }`.
/// Each safe `fn name(self, args) -> R { body }` becomes a trait method that calls a nested
/// `#[target_feature(enable = "features")]` copy of `body` (in which the intrinsics are safe
/// to call); the call is sound because `self`, the token, proves the features (the list
/// must be the token's: see the table above). Each `unsafe fn` gets the attribute directly;
/// its callers uphold its own contract. Bodies cannot use `self`: they are free functions
/// of their arguments, so the types in their signatures are written out. A last
/// `inline { … }` section holds methods pasted as written: single-intrinsic methods (with
/// const generics, which the forms above do not take), each `#[inline(always)]` with one
/// `unsafe` intrinsic call justified by the token; inlined into `vectorize`'s entry, the
/// intrinsic is compiled with the features.
macro_rules! lanes {
    (
        impl $trait:ident for $token:ident with $features:literal {
            $(type $ty:ident = $tv:ty;)*
            $(const $c:ident: $ct:ty = $cv:expr;)*
            $(
                fn $name:ident $(<$($g:ident: $gb:path),*>)?
                    ($self:ident $(, $arg:ident: $at:ty)* $(,)?) $(-> $ret:ty)? $body:block
            )*
            $(
                unsafe fn $uname:ident $(<$($ug:ident: $ugb:path),*>)?
                    ($uself:ident $(, $uarg:ident: $uat:ty)* $(,)?) $(-> $uret:ty)? $ubody:block
            )*
            $(inline { $($raw:tt)* })?
        }
    ) => {
        impl $trait for $token {
            $(type $ty = $tv;)*
            $(const $c: $ct = $cv;)*
            $(
                #[inline(always)]
                fn $name $(<$($g: $gb),*>)? ($self $(, $arg: $at)*) $(-> $ret)? {
                    #[target_feature(enable = $features)]
                    #[inline]
                    fn body $(<$($g: $gb),*>)? ($($arg: $at),*) $(-> $ret)? $body
                    let _ = $self;
                    // SAFETY: `self` is the token of the features the body is compiled with.
                    unsafe { body $(::<$($g),*>)? ($($arg),*) }
                }
            )*
            $(
                #[target_feature(enable = $features)]
                #[inline]
                unsafe fn $uname $(<$($ug: $ugb),*>)?
                    ($uself $(, $uarg: $uat)*) $(-> $uret)? $ubody
            )*
            $($($raw)*)?
        }
    };
}
pub(crate) use lanes;

/// Single-intrinsic lane methods for a [`lanes!`] `inline { … }` section, several per line:
/// `unary name(T) -> R = intrinsic;`, `binary name(T) -> R = intrinsic;` (two `T`
/// arguments), `shift name(T) = intrinsic;` (a const-generic immediate `K`) and
/// `splat name(T as C) -> R = intrinsic;` (the argument cast to `C` first). Each method is
/// `#[inline(always)]` with one `unsafe` intrinsic call: sound because `self` is the token
/// of the level whose features the intrinsic needs, and once inlined into
/// [`Isa::vectorize`]'s entry the intrinsic is compiled with them.
macro_rules! ops {
    () => {};
    (unary $name:ident($t:ty) -> $r:ty = $i:path; $($rest:tt)*) => {
        #[inline(always)]
        fn $name(self, a: $t) -> $r {
            // SAFETY: `self` is the token of the intrinsic's features (see `ops!`).
            unsafe { $i(a) }
        }
        ops!($($rest)*);
    };
    (binary $name:ident($t:ty) -> $r:ty = $i:path; $($rest:tt)*) => {
        #[inline(always)]
        fn $name(self, a: $t, b: $t) -> $r {
            // SAFETY: `self` is the token of the intrinsic's features (see `ops!`).
            unsafe { $i(a, b) }
        }
        ops!($($rest)*);
    };
    (shift $name:ident($t:ty) = $i:ident; $($rest:tt)*) => {
        #[inline(always)]
        fn $name<const K: i32>(self, a: $t) -> $t {
            // SAFETY: `self` is the token of the intrinsic's features (see `ops!`).
            unsafe { $i::<K>(a) }
        }
        ops!($($rest)*);
    };
    (splat $name:ident($t:ty as $c:ty) -> $r:ty = $i:path; $($rest:tt)*) => {
        #[inline(always)]
        fn $name(self, x: $t) -> $r {
            // SAFETY: `self` is the token of the intrinsic's features (see `ops!`).
            unsafe { $i(x as $c) }
        }
        ops!($($rest)*);
    };
}
pub(crate) use ops;
