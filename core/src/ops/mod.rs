//! Typed operation requests and their checked plans.
//!
//! Contract between layers (SPEC §6): a `Request` is what the caller wrote (unchecked);
//! `check_inference` admits it into an owning, immutable `Plan` (checked, no tensor scan,
//! backend-neutral, reusable and shareable). Backends take a `&Plan`: A65 `prepare`s a route,
//! EV74 encodes descriptors. Addresses are not part of a plan; they come at execute or bind.

pub mod casttess;
pub mod quant;
pub mod quanttess;
