//! Sealed typestate markers for the packet lifecycle.
//!
//! SPEC §6: `Request` (unchecked) → `check_inference` → `Plan` (checked) → EV74
//! `check_inference` → `DevicePlan` → `encode_relocatable` → `Packet<E, Encoded>` → `bind`
//! → `Packet<E, Bound>`. Every state is a type of its own: the first three are the request
//! and plan types of each operation (`ops::<op>::Request`, `ops::<op>::Plan`,
//! `ev74::DevicePlan`), the last two the states of one `ev74::Packet` type, so that an
//! encoded packet cannot be submitted and a bound one cannot be bound again. The markers
//! are never built; the trait is sealed so other crates cannot add states.

mod sealed {
    pub trait Sealed {}
}

/// A packet's lifecycle state. Sealed: only [`Encoded`] and [`Bound`] implement it.
pub trait State: sealed::Sealed {
    /// Name of the state, for `Debug` and logs.
    const NAME: &'static str;
}

/// Encoded: a relocatable device descriptor with zero address slots.
#[derive(Debug)]
pub enum Encoded {}
/// Bound: a descriptor whose address slots name device regions; submittable.
#[derive(Debug)]
pub enum Bound {}

impl sealed::Sealed for Encoded {}
impl State for Encoded {
    const NAME: &'static str = "encoded";
}
impl sealed::Sealed for Bound {}
impl State for Bound {
    const NAME: &'static str = "bound";
}
