//! Shared input reader of the structured fuzz targets (`bind`, `admission`).
//!
//! The targets read their fuzz input as a plain little-endian byte stream through
//! [`Input`], not through `arbitrary`'s encoding: the committed seeds are then written by a
//! test (`a65-bin/tests/suite/fuzz_seeds.rs`) in a format that stays fixed whatever `arbitrary`
//! version the fuzz crate resolves to. A read past the end gives zeros.

/// A cursor over the fuzz input; reads past the end give zeros.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    /// A reader over `data`.
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data }
    }

    /// The next `N` bytes, zero-filled past the end.
    pub fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let n = N.min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        out
    }

    /// One byte.
    pub fn u8(&mut self) -> u8 {
        self.bytes::<1>()[0]
    }

    /// A little-endian `u16`.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.bytes())
    }

    /// A little-endian `u32`.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.bytes())
    }

    /// A little-endian `u64`.
    pub fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.bytes())
    }
}
