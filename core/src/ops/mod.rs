//! Typed operation requests and their checked plans, and the operation markers.
//!
//! Contract between layers (SPEC §6): a `Request` is what the caller wrote (unchecked);
//! `check_inference` admits it into an owning, immutable `Plan` (checked, no tensor scan,
//! backend-neutral, reusable and shareable). Backends take a `&Plan`: A65 `prepare`s a route,
//! EV74 encodes descriptors. Addresses are not part of a plan; they come at execute or bind.
//!
//! Every operation is named once, by a marker type implementing the sealed [`Op`] trait
//! ([`Quant`], [`CastTess`], [`QuantTess`]); every checked plan names its op through
//! [`OpPlan::Op`]. The layers above are generic over the marker: the A65 backend's
//! `HostOp`, the EV74 codec's `NativeEntry: Op`, the simulator and the Runtime infer the
//! op from the plan they are given, so a new operation is one marker, one plan and one impl
//! per backend (`docs/contract.md` §6).
//!
//! A plan of one op is not a plan of another:
//!
//! ```compile_fail
//! use simak_core::ops::{self, Op};
//! fn wrong(plan: ops::casttess::Plan) -> <ops::Quant as Op>::Plan {
//!     plan // a CastTess plan is not a Quant plan
//! }
//! ```

use core::fmt;

/// The accessors of a plan's input port, written once for every plan (a field `input:
/// View`): `input`, `elements`, `is_empty`.
macro_rules! input_accessors {
    () => {
        /// The admitted input view (strides in bytes, span in bytes).
        pub const fn input(&self) -> &View {
            &self.input
        }

        /// Number of logical elements (0 when empty, 1 for a scalar).
        pub const fn elements(&self) -> u64 {
            self.input.elements()
        }

        /// Whether the call is a no-op (some extent is zero).
        pub const fn is_empty(&self) -> bool {
            self.input.is_empty()
        }
    };
}

/// The accessors of a plan with Quant parameters (SPEC §3), written once for every such
/// plan (fields `quant: CheckedParams` and `input: View`): `quant_params`, `multiplier`,
/// `zero_point`, `rounding`, `params`, `kernels`.
macro_rules! quant_accessors {
    () => {
        /// The checked Quant parameters.
        pub const fn quant_params(&self) -> &CheckedParams {
            &self.quant
        }

        /// The decoded multiplier.
        pub const fn multiplier(&self) -> &Multiplier {
            self.quant.multiplier()
        }

        /// The zero point, in [-128, 127].
        pub const fn zero_point(&self) -> i32 {
            self.quant.zero_point()
        }

        /// The rounding mode.
        pub const fn rounding(&self) -> Rounding {
            self.quant.rounding()
        }

        /// The parameters this plan was checked with.
        pub const fn params(&self) -> Params {
            self.quant.params()
        }

        /// The exact scalar Quant specialization for this plan's dtype × rounding.
        pub fn kernels(&self) -> Kernels {
            // Admission rejected I8 input, so every plan has a float input dtype.
            self.quant.kernels(self.input.dtype())
        }
    };
}

pub mod casttess;
pub mod dequant;
pub mod detess;
pub mod detesscast;
pub mod detessdequant;
pub mod preproc;
pub mod quant;
pub mod quanttess;

mod sealed {
    pub trait Sealed {}
}

/// An operation, named once for every layer. Sealed: [`Quant`], [`CastTess`],
/// [`QuantTess`], [`Detess`], [`DetessCast`], [`DetessDequant`], [`Dequant`]. The marker types are uninhabited: they are only ever type parameters.
pub trait Op: sealed::Sealed + Sized + 'static {
    /// The op's name as the front-ends spell it (CLI command, Python function, C prefix),
    /// e.g. `quant`.
    const NAME: &'static str;
    /// The op's name in prose, e.g. `QuantTess`.
    const TITLE: &'static str;
    /// The op's backend-neutral checked plan.
    type Plan: OpPlan<Op = Self>;
}

/// A backend-neutral checked plan (SPEC §6): owning, immutable, `Copy`, `Send` and `Sync`.
/// Names its operation, so a backend given a plan infers the op. Sealed: the `Plan` of
/// each op module.
pub trait OpPlan: sealed::Sealed + Copy + PartialEq + fmt::Debug + Send + Sync + 'static {
    /// The operation this plan is a plan of.
    type Op: Op<Plan = Self>;
    /// Number of logical elements (0 when empty).
    fn elements(&self) -> u64;
    /// Whether the call is a no-op (some extent is zero).
    fn is_empty(&self) -> bool;
}

/// Defines an op's marker type and its `Op` and `OpPlan` impls.
macro_rules! op_marker {
    ($(#[$doc:meta])* $marker:ident, $module:ident, $name:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $marker {}

        impl sealed::Sealed for $marker {}
        impl sealed::Sealed for $module::Plan {}

        impl Op for $marker {
            const NAME: &'static str = $name;
            const TITLE: &'static str = stringify!($marker);
            type Plan = $module::Plan;
        }

        impl OpPlan for $module::Plan {
            type Op = $marker;
            fn elements(&self) -> u64 {
                $module::Plan::elements(self)
            }
            fn is_empty(&self) -> bool {
                $module::Plan::is_empty(self)
            }
        }
    };
}

op_marker!(
    /// Quant: FP32 / BF16 / FP16 → INT8, strided in and out (SPEC §3; plan
    /// [`quant::Plan`]).
    Quant,
    quant,
    "quant"
);
op_marker!(
    /// CastTess: FP32 / FP16 / BF16 → BF16 `MlaTiled` (SPEC §4, §5; plan
    /// [`casttess::Plan`]).
    CastTess,
    casttess,
    "casttess"
);
op_marker!(
    /// QuantTess: FP32 / BF16 / FP16 → INT8 `MlaTiled` (SPEC §3, §5; plan
    /// [`quanttess::Plan`]).
    QuantTess,
    quanttess,
    "quanttess"
);

op_marker!(
    /// Detess: an MLA output layout (INT8 / INT16 / INT32 / BF16) → the same dtype, strided
    /// (SPEC §12, §12.1; plan [`detess::Plan`]).
    Detess,
    detess,
    "detess"
);
op_marker!(
    /// DetessCast: a BF16 MLA output layout → FP32, strided (SPEC §12; plan
    /// [`detesscast::Plan`]).
    DetessCast,
    detesscast,
    "detess_cast"
);
op_marker!(
    /// DetessDequant: an INT8 / INT16 / INT32 MLA output layout → FP32 / FP16 / BF16,
    /// strided (SPEC §12.2; plan [`detessdequant::Plan`]).
    DetessDequant,
    detessdequant,
    "detess_dequant"
);
op_marker!(
    /// Dequant: strided INT8 / INT16 / INT32 → FP32 / FP16 / BF16, strided (SPEC §12.2;
    /// plan [`dequant::Plan`]).
    Dequant,
    dequant,
    "dequant"
);

op_marker!(
    /// Preproc: 8-bit camera frames → the normalized tensor of SPEC §13 as FP32, INT8
    /// (strided or tiled) or BF16 (tiled) (plan [`preproc::Plan`]).
    Preproc,
    preproc,
    "preproc"
);

#[cfg(test)]
mod test {
    use super::{CastTess, Op, OpPlan, Quant, QuantTess};

    fn name_of<P: OpPlan>() -> &'static str {
        <P::Op as Op>::NAME
    }

    #[test]
    fn each_plan_names_its_op() {
        assert_eq!(name_of::<super::quant::Plan>(), "quant");
        assert_eq!(name_of::<super::casttess::Plan>(), "casttess");
        assert_eq!(name_of::<super::quanttess::Plan>(), "quanttess");
        assert_eq!(
            [Quant::TITLE, CastTess::TITLE, QuantTess::TITLE],
            ["Quant", "CastTess", "QuantTess"]
        );
    }
}
