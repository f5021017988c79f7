//! Sealed typestate markers for the plan lifecycle.
//!
//! SPEC §6: `Request` (unchecked) → `check_inference` → `Plan` (checked) → EV74
//! `encode_relocatable` → `Packet<Encoded>` → `bind` → `Packet<Bound>`. Each state is its own
//! type, so a bound packet cannot be re-encoded and an encoded one cannot be submitted.
//! The marker types are never built; the trait is sealed so other crates cannot add states.

mod sealed {
    pub trait Sealed {}
}

/// A lifecycle state. Sealed: only the four states of this module implement it.
pub trait State: sealed::Sealed {
    /// Name of the state, for `Debug` and logs.
    const NAME: &'static str;
    /// Stage number: 0 unchecked, 1 checked, 2 encoded, 3 bound.
    const STAGE: u8;
}

/// Unchecked: a request as the caller wrote it, nothing admitted yet.
#[derive(Debug)]
pub enum Unchecked {}
/// Checked: admitted by `check_inference`; backend-neutral.
#[derive(Debug)]
pub enum Checked {}
/// Encoded: a relocatable device descriptor with zero address slots.
#[derive(Debug)]
pub enum Encoded {}
/// Bound: a descriptor whose address slots name device regions; submittable.
#[derive(Debug)]
pub enum Bound {}

macro_rules! state {
    ($t:ty, $name:literal, $stage:literal) => {
        impl sealed::Sealed for $t {}
        impl State for $t {
            const NAME: &'static str = $name;
            const STAGE: u8 = $stage;
        }
    };
}

state!(Unchecked, "unchecked", 0);
state!(Checked, "checked", 1);
state!(Encoded, "encoded", 2);
state!(Bound, "bound", 3);
