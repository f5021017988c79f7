//! Shared fixtures for simak's integration tests: the independent f64 oracle.
