//! Quant descriptor v1: 224 bytes, little-endian (SPEC §7): the shared prefix, then the
//! output port and the Quant parameters.
//!
//! Native entry `simaai_kernels_ev74_quant_v1`, route 47 (0x2F).
//!
//! | offset | field |
//! | --- | --- |
//! | 0..160 | the prefix ([`crate::wire::prefix`]): magic `b"SKQT"`, byte length 224, flags (bit 0 input contiguous, bit 1 output contiguous), the span at 56 is the output's accessed span |
//! | 160 | `[u64; 6]` output byte strides |
//! | 208, 212, 216 | u32 multiplier bits, i32 zero point, u32 rounding code |
//! | 220 | u32 reserved = 0 |
//!
//! [`QuantDescriptorV1`] is the raw view (any bytes); [`QuantRepr`] is the validated
//! representation: [`QuantRepr::parse`] checks every rule of SPEC §7 (each rejection is a
//! [`DecodeError`] with a stable code) and [`QuantRepr::emit`] cannot fail. The output port
//! is admitted by the same `View` admission as the input (and as host admission). Address
//! slots of zero are accepted by `parse` (relocatable packets); the device-side decode
//! additionally rejects unbound nonempty packets.
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use static_assertions::const_assert_eq;
use zerocopy::little_endian::{I32, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::arith::quant::{Multiplier, Rounding};
use crate::dtype::DType;
use crate::error::Port;
use crate::tensor::MAX_RANK;
use crate::wire::fields::{self, FieldValue, Fields};
use crate::wire::prefix::{
    self, Format, PortAlign, PortFormat, PortLayout, Prefix, PrefixRepr, SpanKind, Tail, load_u64s,
    store_u64s,
};
use crate::wire::prefix::{FlagName, FlagNames};
use crate::wire::rules::{DecodeCode, DecodeError, merge_codes};

pub use crate::wire::prefix::{ADDRESS_LIMIT, VERSION};

/// The magic word at offset 0.
pub const MAGIC: [u8; 4] = *b"SKQT";
/// Size of the descriptor in bytes.
pub const SIZE: usize = 224;

/// The prefix facts of Quant v1.
pub const FORMAT: Format = Format {
    magic: MAGIC,
    // SIZE is 224 (statically asserted), which fits u16.
    size: SIZE as u16,
    flag_mask: QuantFlags::all().bits(),
    flag_names: FlagNames {
        bits: &[
            FlagName {
                bit: QuantFlags::INPUT_CONTIGUOUS.bits(),
                set: "input contiguous",
                clear: None,
            },
            FlagName {
                bit: QuantFlags::OUTPUT_CONTIGUOUS.bits(),
                set: "output contiguous",
                clear: None,
            },
        ],
        none: "strided",
    },
    input: prefix::FLOAT_INPUT,
    output: PortFormat {
        layout: PortLayout::Strided,
        dtypes: &[DType::I8],
        span: SpanKind::Accessed,
        align: PortAlign::Element,
    },
    prefix_port: Port::Input,
};

/// The codes a Quant v1 descriptor can be rejected with (`docs/errors.md`): the prefix's
/// and the tail's, in numeric order.
pub const CODES: [DecodeCode; 40] = merge_codes(prefix::CODES, TAIL_CODES);

/// The codes of the Quant v1 tail's own rules (its fields, and its output port where the
/// prefix does not check it).
pub const TAIL_CODES: [DecodeCode; 11] = [
    DecodeCode::Reserved220,
    DecodeCode::UnusedOutputStride,
    DecodeCode::MultiplierNotFinite,
    DecodeCode::MultiplierNotPositive,
    DecodeCode::ZeroPoint,
    DecodeCode::Rounding,
    DecodeCode::OutputZeroStride,
    DecodeCode::OutputSingletonStride,
    DecodeCode::OutputOverlap,
    DecodeCode::InputContiguousFlag,
    DecodeCode::OutputContiguousFlag,
];

/// Byte offsets of every field (SPEC §7): the prefix's, then the tail's, pinned against
/// the struct below.
pub mod field {
    pub use crate::wire::prefix::field::*;
    /// `[u64; 6]` output byte strides.
    pub const OUTPUT_STRIDES: usize = 160;
    /// `u32` multiplier binary32 bits.
    pub const MULTIPLIER: usize = 208;
    /// `i32` zero point.
    pub const ZERO_POINT: usize = 212;
    /// `u32` rounding code.
    pub const ROUNDING: usize = 216;
    /// `u32` trailing reserved word.
    pub const RESERVED_220: usize = 220;
}

/// The raw Quant v1 descriptor: 224 little-endian bytes, alignment 1, no padding.
///
/// Fields hold whatever the bytes say; nothing is validated here (see [`QuantRepr::parse`]).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct QuantDescriptorV1 {
    /// The shared prefix (bytes 0..160).
    pub prefix: Prefix,
    /// Output strides in bytes, unused and extent-0/1 axes 0.
    pub output_strides: [U64; MAX_RANK],
    /// Multiplier binary32 bits.
    pub multiplier: U32,
    /// Zero point, in [-128, 127].
    pub zero_point: I32,
    /// Rounding code (TowardZero = 0, NearestEven = 1, TowardPositive = 2, TowardNegative = 3).
    pub rounding: U32,
    /// Reserved, 0.
    pub reserved_220: U32,
}

const_assert_eq!(core::mem::size_of::<QuantDescriptorV1>(), SIZE);
const_assert_eq!(core::mem::align_of::<QuantDescriptorV1>(), 1);
const_assert_eq!(core::mem::offset_of!(QuantDescriptorV1, prefix), 0);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, output_strides),
    field::OUTPUT_STRIDES
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, multiplier),
    field::MULTIPLIER
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, zero_point),
    field::ZERO_POINT
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, rounding),
    field::ROUNDING
);
const_assert_eq!(
    core::mem::offset_of!(QuantDescriptorV1, reserved_220),
    field::RESERVED_220
);

/// The Quant v1 flag word (SPEC §7). Bits other than these two must be zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[repr(transparent)]
pub struct QuantFlags(u32);

bitflags::bitflags! {
    impl QuantFlags: u32 {
        /// Bit 0: every input axis of extent > 1 has the row-major packed stride.
        const INPUT_CONTIGUOUS = 1 << 0;
        /// Bit 1: every output axis of extent > 1 has the row-major packed stride.
        const OUTPUT_CONTIGUOUS = 1 << 1;
    }
}

/// A validated Quant v1 descriptor (SPEC §7): the validated prefix, the output port, real
/// enums and flags, the decoded multiplier, every derived field consistent with its
/// recomputation.
///
/// Fields are public so a codec can build one; [`QuantRepr::emit`] writes whatever it holds
/// and [`QuantRepr::parse`] is the only way to know a descriptor is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantRepr {
    /// The shared fields (dtype, rank, addresses, element count, spans, extents, input
    /// strides; `prefix.output_span` is the output's accessed span).
    pub prefix: PrefixRepr,
    /// Contiguity flags.
    pub flags: QuantFlags,
    /// Output byte strides, unused and extent-0/1 axes 0.
    pub output_strides: [u64; MAX_RANK],
    /// The multiplier, decoded.
    pub multiplier: Multiplier,
    /// Zero point, in [-128, 127].
    pub zero_point: i32,
    /// Integer rounding mode.
    pub rounding: Rounding,
}

/// The Quant wire contiguity rule (SPEC §7): every axis of extent > 1 among the first
/// `rank` has stride = `elem` × product of the later extents.
pub fn is_contiguous(
    rank: usize,
    extents: &[u64; MAX_RANK],
    strides: &[u64; MAX_RANK],
    elem: u64,
) -> bool {
    let mut expected = Some(elem);
    for (e, s) in extents.iter().zip(strides.iter()).take(rank).rev() {
        if *e > 1 && Some(*s) != expected {
            return false;
        }
        expected = expected.and_then(|x| x.checked_mul(*e));
    }
    true
}

/// The Quant parameters (step 3 of the shared parse).
pub(crate) struct Params {
    multiplier: Multiplier,
    zero_point: i32,
    rounding: Rounding,
}

impl Tail for QuantDescriptorV1 {
    type Params = Params;
    type Output = [u64; MAX_RANK];
    type Repr = QuantRepr;
    const FORMAT: Format = FORMAT;
    const RESERVED: &'static [u16] = &[220];

    fn prefix(&self) -> &Prefix {
        &self.prefix
    }

    fn check_unused(&self, axis: usize) -> Result<(), DecodeError> {
        match self.output_strides.get(axis).map_or(0, |s| s.get()) {
            0 => Ok(()),
            value => Err(DecodeError::UnusedStride {
                port: Port::Output,
                axis: crate::wire::rules::axis_u8(axis),
                value,
            }),
        }
    }

    fn check_params(&self, _rank: u8) -> Result<Params, DecodeError> {
        let multiplier = Multiplier::from_bits(self.multiplier.get())?;
        let zero_point = self.zero_point.get();
        if !(-128..=127).contains(&zero_point) {
            return Err(DecodeError::ZeroPoint { value: zero_point });
        }
        let code = self.rounding.get();
        let rounding = Rounding::try_from(code).map_err(|_| DecodeError::Rounding { code })?;
        Ok(Params {
            multiplier,
            zero_point,
            rounding,
        })
    }

    fn check_output(
        &self,
        p: &PrefixRepr,
        flags: u32,
        _params: &Params,
    ) -> Result<[u64; MAX_RANK], DecodeError> {
        let rank = usize::from(p.rank);
        let strides = load_u64s(&self.output_strides);
        let output = prefix::admit_port(rank, &p.extents, &strides, DType::I8, Port::Output)?;
        prefix::check_span(Port::Output, output.span(), p.output_span)?;
        let flags = QuantFlags::from_bits_retain(flags);
        let elem = p.dtype.size_u64();
        for (port, flag, strides, elem) in [
            (
                Port::Input,
                QuantFlags::INPUT_CONTIGUOUS,
                &p.input_strides,
                elem,
            ),
            (Port::Output, QuantFlags::OUTPUT_CONTIGUOUS, &strides, 1),
        ] {
            let expected = is_contiguous(rank, &p.extents, strides, elem);
            if flags.contains(flag) != expected {
                return Err(DecodeError::ContiguousFlag { port, expected });
            }
        }
        Ok(strides)
    }

    fn finish(
        prefix: PrefixRepr,
        flags: u32,
        params: Params,
        output: [u64; MAX_RANK],
    ) -> QuantRepr {
        QuantRepr {
            prefix,
            flags: QuantFlags::from_bits_retain(flags),
            output_strides: output,
            multiplier: params.multiplier,
            zero_point: params.zero_point,
            rounding: params.rounding,
        }
    }
}

prefix::descriptor_items!(QuantDescriptorV1, QuantRepr);

impl QuantRepr {
    /// Checks every rule of SPEC §7 on a raw descriptor, recomputing each derived field, in
    /// the shared order of [`crate::wire::prefix`]: header (the reserved word at 220 after
    /// the prefix's), unused slots (output strides after each axis's prefix slots), the
    /// multiplier, zero point and rounding, the element count, the input port, the output
    /// port (the same `View` admission, its span, then both contiguous flags), addresses.
    ///
    /// Zero address slots are accepted (relocatable packets); nonzero slots are checked for
    /// the 32-bit domain, range, input alignment and port overlap.
    ///
    /// # Errors
    ///
    /// The first failing rule, as a [`DecodeError`].
    pub fn parse(raw: &QuantDescriptorV1) -> Result<QuantRepr, DecodeError> {
        prefix::parse::<QuantDescriptorV1>(raw)
    }

    /// Writes this representation into a raw descriptor (every byte is written).
    pub fn emit(&self, raw: &mut QuantDescriptorV1) {
        *raw = QuantDescriptorV1 {
            prefix: self.prefix.emit(&FORMAT, self.flags.bits()),
            output_strides: store_u64s(&self.output_strides),
            multiplier: U32::new(self.multiplier.bits()),
            zero_point: I32::new(self.zero_point),
            rounding: U32::new(self.rounding.code()),
            reserved_220: U32::ZERO,
        };
    }
}

impl QuantDescriptorV1 {
    /// Every field with its byte offset, in wire order ([`FIELD_COUNT`] entries; array
    /// slots separately), for listings such as `simak packet decode`. Values are shown raw,
    /// whatever they are.
    pub fn fields(&self) -> Fields {
        let mut out = Fields::new();
        self.prefix.fields(&mut out);
        fields::push_u64s(
            &mut out,
            field::OUTPUT_STRIDES,
            &OUTPUT_STRIDE_NAMES,
            &self.output_strides,
        );
        fields::push(
            &mut out,
            field::MULTIPLIER,
            "multiplier",
            FieldValue::Hex32(self.multiplier.get()),
        );
        fields::push(
            &mut out,
            field::ZERO_POINT,
            "zero_point",
            FieldValue::I32(self.zero_point.get()),
        );
        fields::push(
            &mut out,
            field::ROUNDING,
            "rounding",
            FieldValue::U32(self.rounding.get()),
        );
        fields::push(
            &mut out,
            field::RESERVED_220,
            "reserved_220",
            FieldValue::Hex32(self.reserved_220.get()),
        );
        out
    }
}

/// Number of entries returned by [`QuantDescriptorV1::fields`].
pub const FIELD_COUNT: usize = 34;

const OUTPUT_STRIDE_NAMES: [&str; MAX_RANK] = [
    "output_strides[0]",
    "output_strides[1]",
    "output_strides[2]",
    "output_strides[3]",
    "output_strides[4]",
    "output_strides[5]",
];

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test {
    use super::*;
    use zerocopy::FromZeros;

    /// FP32 [2, 3] contiguous, multiplier 1.0, zero point -3, toward-zero, bound at
    /// input 0x1000 and output 0x2000. Written by hand from the SPEC §7 table.
    #[rustfmt::skip]
    const GOLDEN_F32_2X3: [u8; SIZE] = [
        // 0: magic "SKQT", version 1, byte length 224 (0xe0)
        b'S', b'K', b'Q', b'T', 0x01, 0x00, 0xe0, 0x00,
        // 8: dtype FP32 = 3, rank 2
        0x03, 0, 0, 0, 0x02, 0, 0, 0,
        // 16: flags = input|output contiguous = 3, reserved 0
        0x03, 0, 0, 0, 0, 0, 0, 0,
        // 24: input address 0x1000
        0x00, 0x10, 0, 0, 0, 0, 0, 0,
        // 32: output address 0x2000
        0x00, 0x20, 0, 0, 0, 0, 0, 0,
        // 40: elements 6
        0x06, 0, 0, 0, 0, 0, 0, 0,
        // 48: input span 24
        0x18, 0, 0, 0, 0, 0, 0, 0,
        // 56: output span 6
        0x06, 0, 0, 0, 0, 0, 0, 0,
        // 64: extents 2, 3, 0, 0, 0, 0
        0x02, 0, 0, 0, 0, 0, 0, 0,  0x03, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
        // 112: input strides 12, 4
        0x0c, 0, 0, 0, 0, 0, 0, 0,  0x04, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
        // 160: output strides 3, 1
        0x03, 0, 0, 0, 0, 0, 0, 0,  0x01, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0,  0, 0, 0, 0, 0, 0, 0, 0,
        // 208: multiplier 1.0 = 0x3f800000, zero point -3, rounding toward-zero 0
        0x00, 0x00, 0x80, 0x3f,  0xfd, 0xff, 0xff, 0xff,  0, 0, 0, 0,
        // 220: reserved
        0, 0, 0, 0,
    ];

    fn repr_f32_2x3() -> QuantRepr {
        QuantRepr {
            prefix: PrefixRepr {
                dtype: DType::F32,
                rank: 2,
                input_address: 0x1000,
                output_address: 0x2000,
                elements: 6,
                input_span: 24,
                output_span: 6,
                extents: [2, 3, 0, 0, 0, 0],
                input_strides: [12, 4, 0, 0, 0, 0],
            },
            flags: QuantFlags::INPUT_CONTIGUOUS | QuantFlags::OUTPUT_CONTIGUOUS,
            output_strides: [3, 1, 0, 0, 0, 0],
            multiplier: Multiplier::from_bits(0x3f80_0000).unwrap(),
            zero_point: -3,
            rounding: Rounding::TowardZero,
        }
    }

    #[test]
    fn field_reads() {
        let raw = QuantDescriptorV1::new_checked(&GOLDEN_F32_2X3).unwrap();
        assert_eq!(raw.prefix.magic, *b"SKQT");
        assert_eq!(raw.prefix.version.get(), 1);
        assert_eq!(raw.prefix.byte_length.get(), 224);
        assert_eq!(raw.prefix.dtype.get(), 3);
        assert_eq!(raw.prefix.rank.get(), 2);
        assert_eq!(raw.prefix.flags.get(), 3);
        assert_eq!(raw.prefix.input_address.get(), 0x1000);
        assert_eq!(raw.prefix.output_address.get(), 0x2000);
        assert_eq!(raw.prefix.elements.get(), 6);
        assert_eq!(raw.prefix.input_span.get(), 24);
        assert_eq!(raw.prefix.output_span.get(), 6);
        assert_eq!(raw.prefix.extents[1].get(), 3);
        assert_eq!(raw.prefix.input_strides[0].get(), 12);
        assert_eq!(raw.output_strides[1].get(), 1);
        assert_eq!(raw.multiplier.get(), 0x3f80_0000);
        assert_eq!(raw.zero_point.get(), -3);
        assert_eq!(raw.rounding.get(), 0);
    }

    #[test]
    fn field_writes_land_at_their_offsets() {
        let mut raw = QuantDescriptorV1::new_zeroed();
        raw.zero_point = I32::new(-2);
        raw.output_strides[5] = U64::new(0x0102_0304_0506_0708);
        let bytes = raw.as_bytes();
        assert_eq!(
            &bytes[field::ZERO_POINT..field::ZERO_POINT + 4],
            &[0xfe, 0xff, 0xff, 0xff]
        );
        assert_eq!(
            &bytes[field::OUTPUT_STRIDES + 40..field::OUTPUT_STRIDES + 48],
            &[8, 7, 6, 5, 4, 3, 2, 1]
        );
        assert_eq!(bytes.iter().filter(|&&b| b != 0).count(), 12);
    }

    #[test]
    fn parse_golden() {
        assert_eq!(QuantRepr::parse_bytes(&GOLDEN_F32_2X3), Ok(repr_f32_2x3()));
    }

    #[test]
    fn emit_golden() {
        assert_eq!(repr_f32_2x3().to_bytes(), GOLDEN_F32_2X3);
    }

    #[test]
    fn codes_keep_their_numbers() {
        // Quant v1's codes: 1..=39 as first numbered, and 51, the host-rule conversion.
        let numbers: std::vec::Vec<u16> = CODES.iter().map(|c| c.get()).collect();
        let mut expected: std::vec::Vec<u16> = (1..=39).collect();
        expected.push(51);
        assert_eq!(numbers, expected);
    }

    #[test]
    fn listing_names_offsets() {
        let raw = QuantDescriptorV1::new_checked(&GOLDEN_F32_2X3).unwrap();
        let fields = raw.fields();
        let offsets: std::vec::Vec<usize> = fields.iter().map(|f| f.offset).collect();
        let mut sorted = offsets.clone();
        sorted.sort_unstable();
        assert_eq!(offsets, sorted);
        assert_eq!(fields[13].name, "extents[1]");
        assert_eq!(fields[13].offset, 72);
        assert_eq!(fields[13].value, FieldValue::U64(3));
        let text = std::format!("{raw}");
        assert!(
            text.starts_with("  0  magic              \"SKQT\"\n"),
            "{text}"
        );
        assert!(text.contains("212  zero_point         -3\n"), "{text}");
    }

    extern crate std;
}
