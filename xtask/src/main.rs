//! `cargo xtask`: simak's developer tasks.
fn main() {}
