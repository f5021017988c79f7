//! Element types of the tensor contract.
//!
//! SPEC §2: `F32`, `BF16`, `F16` (IEEE binary16) and `I8`; SPEC §12 adds `I16` and `I32`
//! for the MLA's outputs (the Detess ops and Dequant only). BF16 and F16 are different
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
    /// Two's-complement signed 16-bit integer, 2 bytes little-endian (SPEC §12: MLA
    /// outputs, Detess and Dequant inputs only).
    I16,
    /// Two's-complement signed 32-bit integer, 4 bytes little-endian (SPEC §12: MLA
    /// outputs, Detess and Dequant inputs only).
    I32,
}

impl DType {
    /// Size of one element in bytes (F32 and I32 4, BF16, F16 and I16 2, I8 1).
    pub const fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::BF16 | DType::F16 | DType::I16 => 2,
            DType::I8 => 1,
        }
    }

    /// Size of one element in bytes as `u64`, for span arithmetic.
    pub const fn size_u64(self) -> u64 {
        self.size() as u64
    }

    /// Whether this is one of the floating-point input dtypes (`F32`, `BF16`, `F16`).
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::BF16 | DType::F16)
    }

    /// Whether this is one of the integer dtypes (`I8`, `I16`, `I32`).
    pub const fn is_int(self) -> bool {
        !self.is_float()
    }

    /// The range `[min, max]` of an integer dtype (`None` for a float dtype).
    pub const fn int_range(self) -> Option<(i64, i64)> {
        match self {
            DType::I8 => Some((i8::MIN as i64, i8::MAX as i64)),
            DType::I16 => Some((i16::MIN as i64, i16::MAX as i64)),
            DType::I32 => Some((i32::MIN as i64, i32::MAX as i64)),
            DType::F32 | DType::BF16 | DType::F16 => None,
        }
    }

    /// Wire code of a dtype (`docs/contract.md` §7: BF16 = 1, FP32 = 3, FP16 = 4, INT8 = 5,
    /// INT16 = 6, INT32 = 7). Always `Some`: the `Option` is kept for callers written when
    /// the integer dtypes had no code. Which codes a descriptor field admits is the
    /// entry's: the float codes for the inputs of Quant and CastTess, the integer ones
    /// only on the ports of the Detess entries.
    pub const fn wire_code(self) -> Option<u32> {
        match self {
            DType::BF16 => Some(1),
            DType::F32 => Some(3),
            DType::F16 => Some(4),
            DType::I8 => Some(5),
            DType::I16 => Some(6),
            DType::I32 => Some(7),
        }
    }

    /// Decodes a wire dtype code (`docs/contract.md` §7). Codes 0, 2 and anything above 7
    /// are invalid and return `None`; a field that admits fewer dtypes checks its own.
    pub const fn from_wire_code(code: u32) -> Option<DType> {
        match code {
            1 => Some(DType::BF16),
            3 => Some(DType::F32),
            4 => Some(DType::F16),
            5 => Some(DType::I8),
            6 => Some(DType::I16),
            7 => Some(DType::I32),
            _ => None,
        }
    }

    /// Lowercase name as used by the CLI and file formats (`f32`, `bf16`, `f16`, `i8`,
    /// `i16`, `i32`).
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::BF16 => "bf16",
            DType::F16 => "f16",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
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
        for d in [
            DType::F32,
            DType::BF16,
            DType::F16,
            DType::I8,
            DType::I16,
            DType::I32,
        ] {
            assert_eq!(DType::from_wire_code(d.wire_code().unwrap()), Some(d));
        }
        assert_eq!(DType::I8.wire_code(), Some(5));
        assert_eq!(DType::I16.wire_code(), Some(6));
        assert_eq!(DType::I32.wire_code(), Some(7));
        for bad in [0u32, 2, 8, u32::MAX] {
            assert_eq!(DType::from_wire_code(bad), None);
        }
        assert_eq!(DType::BF16.wire_code(), Some(1));
        assert_eq!(DType::F32.wire_code(), Some(3));
        assert_eq!(DType::F16.wire_code(), Some(4));
    }
}
