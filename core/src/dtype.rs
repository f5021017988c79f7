//! Element types of the tensor contract.
//!
//! SPEC §2: `F32`, `BF16`, `F16` (IEEE binary16) and `I8`. BF16 and F16 are different
//! types, never interchangeable 16-bit labels. Wire codes are those of SPEC §7.

use core::fmt;

/// An element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DType {
    /// IEEE binary32, 4 bytes little-endian.
    F32,
    /// bfloat16 (the high half of a binary32), 2 bytes little-endian.
    BF16,
    /// IEEE binary16, 2 bytes little-endian.
    F16,
    /// Two's-complement signed 8-bit integer, 1 byte.
    I8,
}

impl DType {
    /// Size of one element in bytes (4, 2, 2 or 1).
    pub const fn size(self) -> usize {
        match self {
            DType::F32 => 4,
            DType::BF16 | DType::F16 => 2,
            DType::I8 => 1,
        }
    }

    /// Size of one element in bytes as `u64`, for span arithmetic.
    pub const fn size_u64(self) -> u64 {
        self.size() as u64
    }

    /// Whether this is one of the floating-point input dtypes (`F32`, `BF16`, `F16`).
    pub const fn is_float(self) -> bool {
        !matches!(self, DType::I8)
    }

    /// Wire code of an input dtype (SPEC §7: BF16 = 1, FP32 = 3, FP16 = 4); `None` for `I8`,
    /// which is never an input on the wire.
    pub const fn wire_code(self) -> Option<u32> {
        match self {
            DType::BF16 => Some(1),
            DType::F32 => Some(3),
            DType::F16 => Some(4),
            DType::I8 => None,
        }
    }

    /// Decodes a wire input dtype code (SPEC §7). Codes 0, 2 and anything above 4 are
    /// invalid and return `None`.
    pub const fn from_wire_code(code: u32) -> Option<DType> {
        match code {
            1 => Some(DType::BF16),
            3 => Some(DType::F32),
            4 => Some(DType::F16),
            _ => None,
        }
    }

    /// Lowercase name as used by the CLI and file formats (`f32`, `bf16`, `f16`, `i8`).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::BF16 => "bf16",
            DType::F16 => "f16",
            DType::I8 => "i8",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod test {
    use super::DType;

    #[test]
    fn wire_codes_round_trip_and_reject_reserved() {
        for d in [DType::F32, DType::BF16, DType::F16] {
            assert_eq!(DType::from_wire_code(d.wire_code().unwrap()), Some(d));
        }
        assert_eq!(DType::I8.wire_code(), None);
        for bad in [0u32, 2, 5, u32::MAX] {
            assert_eq!(DType::from_wire_code(bad), None);
        }
        assert_eq!(DType::BF16.wire_code(), Some(1));
        assert_eq!(DType::F32.wire_code(), Some(3));
        assert_eq!(DType::F16.wire_code(), Some(4));
    }
}
