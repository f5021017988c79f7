//! The codec tests every native entry passes, written once over the entry and instantiated
//! by each entry's test module with [`codec_suite!`]: the encoder against hand-written
//! goldens, every wrong length, rebinding, the bind rules both ports share, the prefix rows of the rejection
//! matrix (and that the entry's rows with them exercise every code it has), every unknown
//! flag bit, and every single-bit corruption. The expected values are literals of the
//! entry's [`Fixture`], read off its goldens, never recomputed by the codec under test.

extern crate std;

use core::ops::Range;
use std::collections::BTreeSet;
use std::vec::Vec;

use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, IntoBytes};

use super::*;
use crate::error::Port;

/// A golden encoding: a plan, the regions it is bound to (`None`: relocatable), the bytes.
pub(crate) type Golden<E> = (
    DevicePlan<E>,
    Option<(DeviceRegion, DeviceRegion)>,
    &'static [u8],
);

/// Rows of a rejection matrix: the code expected, the decoder's answer.
pub(crate) type Cases<E> = Vec<(DecodeCode, Result<<E as NativeEntry>::Repr, DecodeError>)>;

/// One entry's test data. The constants are written by hand from the entry's goldens.
pub(crate) trait Fixture: NativeEntry {
    /// The plan the bind rules are checked on; it binds at [`Fixture::INPUT`] and
    /// [`Fixture::OUTPUT`], whose lengths are its spans.
    fn plan() -> DevicePlan<Self>;
    /// Another plan of the entry, whose packet differs from [`Fixture::plan`]'s.
    fn other() -> DevicePlan<Self>;
    /// The input region of [`Fixture::plan`]'s golden binding: address, span in bytes.
    const INPUT: DeviceRegion;
    /// The output region of [`Fixture::plan`]'s golden binding: address, span in bytes.
    const OUTPUT: DeviceRegion;
    /// The input address alignment of [`Fixture::plan`] in bytes.
    const INPUT_ALIGN: u64;
    /// The output address alignment of the entry in bytes (written out, not the codec's).
    const OUTPUT_GRANULE: u32;
    /// The flag bits the entry defines.
    const FLAG_BITS: u32;
    /// The entry's route, title and descriptor size (SPEC §7, written out, not the codec's).
    const ROW: (u8, &'static str, usize);
    /// Encodings the encoder must reproduce: a plan, the regions it is bound to (`None`:
    /// relocatable) and the hand-written bytes.
    fn goldens() -> Vec<Golden<Self>>;
    /// A bound, nonempty golden of rank < 6 that the rejection matrix corrupts.
    fn matrix_golden() -> &'static [u8];
    /// The byte ranges of [`Fixture::matrix_golden`] whose every value is meaningful
    /// (addresses, parameters): flipping a bit there may give another valid packet.
    const FREE_BYTES: &'static [Range<usize>];
    /// The entry's own rows of the rejection matrix (its tail, and prefix rows that need
    /// the entry's values).
    fn tail_cases() -> Cases<Self>;
}

/// Applies `f` to the prefix of a copy of `golden` and decodes the result.
pub(crate) fn corrupt_prefix<E: NativeEntry>(
    golden: &[u8],
    f: impl FnOnce(&mut Prefix),
) -> Result<E::Repr, DecodeError> {
    let mut copy = golden.to_vec();
    let (prefix, _) = Prefix::mut_from_prefix(&mut copy).unwrap();
    f(prefix);
    decode::<E>(&copy)
}

/// The rule of a rejection.
pub(crate) fn code_of<R>(r: Result<R, DecodeError>) -> Option<DecodeCode> {
    r.err().map(|e| e.rule())
}

fn golden_prefix(golden: &[u8]) -> Prefix {
    Prefix::read_from_prefix(golden).unwrap().0
}

pub(crate) fn encoder_matches_hand_written_goldens<E: Fixture>() {
    for (k, (plan, regions, golden)) in E::goldens().into_iter().enumerate() {
        match regions {
            None => {
                let packet = encode_relocatable(&plan);
                assert_eq!(packet.as_bytes().as_ref(), golden, "golden {k}");
                // A relocatable nonempty packet is unbound: the device refuses it.
                if !plan.is_empty() {
                    assert_eq!(
                        decode::<E>(golden),
                        Err(DecodeError::Unbound { port: Port::Input }),
                        "golden {k}"
                    );
                }
            }
            Some((input, output)) => {
                let packet = encode(&plan, input, output).unwrap();
                assert_eq!(packet.as_bytes().as_ref(), golden, "golden {k}");
                assert_eq!(
                    (packet.input_address(), packet.output_address()),
                    (input.address, output.address)
                );
                let mut want = *plan.repr();
                let prefix = E::prefix_mut(&mut want);
                prefix.input_address = input.address;
                prefix.output_address = output.address;
                assert_eq!(decode::<E>(golden), Ok(want), "golden {k}");
            }
        }
    }
}

pub(crate) fn every_wrong_length_is_rejected<E: Fixture>() {
    let g = E::matrix_golden();
    let mut long = g.to_vec();
    long.push(0);
    for len in 0..=g.len() + 1 {
        let r = E::parse(&long[..len]);
        if len == g.len() {
            assert!(r.is_ok());
        } else {
            assert_eq!(
                r,
                Err(DecodeError::Length {
                    found: len,
                    expected: E::DESCRIPTOR_SIZE
                })
            );
        }
    }
}

pub(crate) fn rebinding_leaves_the_encoded_packet_intact<E: Fixture>() {
    let plan = E::plan();
    let encoded = encode_relocatable(&plan);
    let before = *encoded.as_bytes();
    let a = bind(&plan, &encoded, E::INPUT, E::OUTPUT).unwrap();
    let b = bind(
        &plan,
        &encoded,
        DeviceRegion::new(0x8000, E::INPUT.len.max(64)),
        DeviceRegion::new(0x40, E::OUTPUT.len),
    )
    .unwrap();
    assert_eq!(encoded.as_bytes(), &before);
    assert_eq!(a.input_address(), E::INPUT.address);
    assert_eq!((b.input_address(), b.output_address()), (0x8000, 0x40));
    assert_eq!(encoded.state(), "encoded");
    assert_eq!(b.state(), "bound");
    assert_eq!(
        (a.input_span(), a.output_span()),
        (E::INPUT.len, E::OUTPUT.len)
    );
}

pub(crate) fn bind_rejections<E: Fixture>() {
    let plan = E::plan();
    let enc = encode_relocatable(&plan);
    let r = DeviceRegion::new;
    let (ok_in, ok_out) = (E::INPUT, E::OUTPUT);
    let (in_span, out_span) = (ok_in.len, ok_out.len);
    assert!(bind(&plan, &enc, ok_in, ok_out).is_ok());
    assert_eq!(
        bind(&plan, &encode_relocatable(&E::other()), ok_in, ok_out),
        Err(BindError::PacketMismatch)
    );
    assert_eq!(
        bind(&plan, &enc, r(0, in_span), ok_out),
        Err(BindError::Unbound { port: Port::Input })
    );
    assert_eq!(
        bind(&plan, &enc, ok_in, r(0, out_span)),
        Err(BindError::Unbound { port: Port::Output })
    );
    assert_eq!(
        bind(&plan, &enc, r(ok_in.address, in_span - 1), ok_out),
        Err(BindError::Capacity {
            port: Port::Input,
            required: in_span,
            found: in_span - 1
        })
    );
    assert_eq!(
        bind(&plan, &enc, ok_in, r(ok_out.address, out_span - 1)),
        Err(BindError::Capacity {
            port: Port::Output,
            required: out_span,
            found: out_span - 1
        })
    );
    let half = (E::INPUT_ALIGN / 2) as u32;
    let misaligned = bind(&plan, &enc, r(ok_in.address + 1, in_span), ok_out);
    if E::INPUT_ALIGN > 1 {
        assert_eq!(
            bind(&plan, &enc, r(ok_in.address + half, in_span), ok_out),
            Err(BindError::Misaligned {
                port: Port::Input,
                address: ok_in.address + half,
                align: E::INPUT_ALIGN
            })
        );
        assert!(misaligned.is_err());
    } else {
        // An input bound at any byte.
        assert!(misaligned.is_ok(), "{misaligned:?}");
    }
    // Address + span past 2^32 by the alignment; exactly 2^32 is fine.
    let last = ((1u64 << 32) - in_span) as u32;
    let past = last + E::INPUT_ALIGN as u32;
    assert_eq!(
        bind(&plan, &enc, r(past, in_span), ok_out),
        Err(BindError::Range {
            port: Port::Input,
            address: past,
            span: in_span
        })
    );
    assert!(bind(&plan, &enc, r(last, in_span), ok_out).is_ok());
    let align = E::OUTPUT_GRANULE;
    let end = ok_in.address + in_span as u32;
    // An output starting on the input's last aligned granule overlaps it.
    let inside = (end - 1) / align * align;
    assert_eq!(
        bind(&plan, &enc, ok_in, r(inside, out_span)),
        Err(BindError::Overlap)
    );
    // Adjacent ranges, on either side, do not overlap.
    let below = ok_in.address - out_span as u32;
    assert!(bind(&plan, &enc, ok_in, r(below, out_span)).is_ok());
    let above = end.div_ceil(align) * align;
    assert!(bind(&plan, &enc, ok_in, r(above, out_span)).is_ok());
}

/// The relocation path: a complete table gives bind's bytes (the regions' addresses at
/// bytes 24 and 32, read back as literals), in either order; every table rule fails with its
/// own error; and every region pair of [`bind_rejections`] fails through a table exactly as
/// through `bind`.
pub(crate) fn relocations_follow_the_bind_rules<E: Fixture>() {
    let plan = E::plan();
    let enc = encode_relocatable(&plan);
    let r = DeviceRegion::new;
    let (ok_in, ok_out) = (E::INPUT, E::OUTPUT);
    let input = |region| Relocation::at_slot(24, region);
    let output = |region| Relocation::at_slot(32, region);
    let bound = bind(&plan, &enc, ok_in, ok_out).unwrap();
    for table in [
        [input(ok_in), output(ok_out)],
        [output(ok_out), input(ok_in)],
        [
            Relocation::new(Port::Input, ok_in),
            Relocation::new(Port::Output, ok_out),
        ],
    ] {
        let relocated = relocate(&plan, &enc, &table).unwrap();
        assert_eq!(relocated.as_bytes(), bound.as_bytes());
        let bytes = relocated.as_bytes().as_ref();
        let slot = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
        assert_eq!(slot(24), u64::from(ok_in.address));
        assert_eq!(slot(32), u64::from(ok_out.address));
    }
    // The encoded packet is untouched.
    assert_eq!(enc.as_bytes(), encode_relocatable(&plan).as_bytes());
    for bad in [
        0usize,
        8,
        16,
        20,
        23,
        25,
        28,
        31,
        33,
        40,
        48,
        56,
        E::DESCRIPTOR_SIZE,
    ] {
        assert_eq!(slot_port(bad), None);
        let err = relocate(
            &plan,
            &enc,
            &[input(ok_in), Relocation::at_slot(bad, ok_out)],
        );
        assert_eq!(err, Err(BindError::UnknownSlot { slot: bad }), "slot {bad}");
        assert_eq!(err.unwrap_err().code(), 0x313);
    }
    assert_eq!(
        relocate(&plan, &enc, &[input(ok_in), output(ok_out), input(ok_in)]),
        Err(BindError::DuplicateRelocation { port: Port::Input })
    );
    assert_eq!(
        relocate(&plan, &enc, &[output(ok_out), input(ok_in), output(ok_out)]),
        Err(BindError::DuplicateRelocation { port: Port::Output })
    );
    // As in bind, the packet is checked first: a packet mismatch comes before the table's
    // errors, which come before the regions'.
    let other = encode_relocatable(&E::other());
    assert_eq!(
        relocate(
            &plan,
            &other,
            &[input(ok_in), output(ok_out), output(ok_out)]
        ),
        Err(BindError::PacketMismatch)
    );
    assert_eq!(
        relocate(
            &plan,
            &enc,
            &[input(r(0, 0)), Relocation::at_slot(40, ok_out)]
        ),
        Err(BindError::UnknownSlot { slot: 40 })
    );
    assert_eq!(
        relocate(&plan, &other, &[input(ok_in), output(ok_out)]),
        Err(BindError::PacketMismatch)
    );
    // A missing relocation leaves its slot unbound.
    assert_eq!(
        relocate(&plan, &enc, &[output(ok_out)]),
        Err(BindError::Unbound { port: Port::Input })
    );
    assert_eq!(
        relocate(&plan, &enc, &[input(ok_in)]),
        Err(BindError::Unbound { port: Port::Output })
    );
    assert_eq!(
        relocate(&plan, &enc, &[]),
        Err(BindError::Unbound { port: Port::Input })
    );
    // Every region rule: the same answer through a table as through bind.
    let (in_span, out_span) = (ok_in.len, ok_out.len);
    let half = (E::INPUT_ALIGN / 2) as u32;
    let last = ((1u64 << 32) - in_span) as u32;
    let end = ok_in.address + in_span as u32;
    let granule = E::OUTPUT_GRANULE;
    let pairs = [
        (r(ok_in.address, in_span - 1), ok_out),
        (ok_in, r(ok_out.address, out_span - 1)),
        (r(ok_in.address + half, in_span), ok_out),
        (ok_in, r(ok_out.address + granule / 2, out_span)),
        (r(last + E::INPUT_ALIGN as u32, in_span), ok_out),
        (r(last, in_span), ok_out),
        (ok_in, r((end - 1) / granule * granule, out_span)),
        (ok_in, r(ok_in.address, out_span)),
        (ok_in, r(ok_in.address - out_span as u32, out_span)),
    ];
    let mut refused = BTreeSet::new();
    for (i, o) in pairs {
        let want = bind(&plan, &enc, i, o);
        if let Err(e) = want {
            refused.insert(e.code());
        }
        assert_eq!(
            relocate(&plan, &enc, &[output(o), input(i)]),
            want,
            "{i:?} {o:?}"
        );
    }
    // Capacity, alignment (the output's only where it needs more than a byte), range and
    // overlap were each exercised.
    let mut every = BTreeSet::from([0x311, 0x312, 34, 37]);
    if E::INPUT_ALIGN > 1 {
        every.insert(36);
    }
    if granule > 1 {
        every.insert(50);
    }
    assert_eq!(refused, every, "the pairs cover every region rule");
}

pub(crate) fn rejection_matrix<E: Fixture>() {
    use DecodeCode as C;
    let g = E::matrix_golden();
    assert!(decode::<E>(g).is_ok());
    let p = golden_prefix(g);
    let (rank, elements) = (p.rank.get(), p.elements.get());
    let (in_span, out_span) = (p.input_span.get(), p.output_span.get());
    let in_address = p.input_address.get();
    let magic = E::MAGIC;
    let size = u16::try_from(E::DESCRIPTOR_SIZE).unwrap();
    let unknown = (!E::FLAG_BITS).trailing_zeros();
    let c = |f: &dyn Fn(&mut Prefix)| corrupt_prefix::<E>(g, f);
    let mut cases: Cases<E> = std::vec![
        (C::Length, decode::<E>(&g[..g.len() - 1])),
        (
            C::Magic,
            c(&|d| d.magic = [magic[3], magic[2], magic[1], magic[0]])
        ),
        (C::Version, c(&|d| d.version = U16::new(2))),
        (C::Version, c(&|d| d.version = U16::new(0))),
        (C::ByteLength, c(&|d| d.byte_length = U16::new(size + 8))),
        (C::DType, c(&|d| d.dtype = U32::new(0))),
        (C::DType, c(&|d| d.dtype = U32::new(2))),
        (C::DType, c(&|d| d.dtype = U32::new(8))),
        (C::Rank, c(&|d| d.rank = U32::new(0))),
        (C::Rank, c(&|d| d.rank = U32::new(7))),
        (C::Rank, c(&|d| d.rank = U32::new(1 << 8 | rank))),
        (
            C::UnknownFlags,
            c(&|d| d.flags = U32::new(d.flags.get() | 1 << unknown))
        ),
        (C::Reserved20, c(&|d| d.reserved_20 = U32::new(1))),
        (C::UnusedExtent, c(&|d| d.extents[5] = U64::new(1 << 40))),
        (
            match E::FORMAT.prefix_port {
                Port::Input => C::UnusedInputStride,
                Port::Output => C::UnusedOutputStride,
            },
            c(&|d| d.input_strides[5] = U64::new(8))
        ),
        (C::ElementCount, c(&|d| d.elements = U64::new(elements - 1))),
        (C::ElementCount, c(&|d| d.elements = U64::new(elements + 1))),
        (
            C::ElementsOverflow,
            c(&|d| {
                d.extents[0] = U64::new(1 << 32);
                d.extents[1] = U64::new(1 << 32);
            })
        ),
        (C::InputSpan, c(&|d| d.input_span = U64::new(in_span - 1))),
        (C::InputSpan, c(&|d| d.input_span = U64::new(in_span + 1))),
        (
            C::OutputSpan,
            c(&|d| d.output_span = U64::new(out_span - 1))
        ),
        (
            C::OutputSpan,
            c(&|d| d.output_span = U64::new(out_span + 1))
        ),
        (C::InputAddress, c(&|d| d.input_address = U64::new(1 << 32))),
        (
            C::OutputAddress,
            c(&|d| d.output_address = U64::new(1 << 32))
        ),
        // Address + span = 2^32 + 1 on each port (the range is checked before alignment).
        (
            C::InputRange,
            c(&|d| d.input_address = U64::new((1 << 32) - in_span + 1))
        ),
        (
            C::OutputRange,
            c(&|d| d.output_address = U64::new((1 << 32) - out_span + 1))
        ),
        (C::InputUnbound, c(&|d| d.input_address = U64::new(0))),
        (C::OutputUnbound, c(&|d| d.output_address = U64::new(0))),
    ];
    // An input bound at any byte (Preproc's frame) has no alignment rule.
    if E::INPUT_ALIGN > 1 {
        cases.push((
            C::InputMisaligned,
            c(&|d| d.input_address = U64::new(in_address + 1)),
        ));
    }
    cases.extend(E::tail_cases());
    let mut seen = BTreeSet::new();
    for (k, (want, got)) in cases.into_iter().enumerate() {
        assert_eq!(code_of(got), Some(want), "case {k}: {got:?}");
        seen.insert(want.get());
    }
    // Every code of the entry's decoder is reachable and exercised (but the conversion of
    // host rules without a twin, which the shared admission never reports here).
    for c in E::CODES.iter().filter(|&&c| c != DecodeCode::Inadmissible) {
        assert!(seen.contains(&c.get()), "{c:?} not exercised");
    }
}

pub(crate) fn every_unknown_flag_bit_is_rejected<E: Fixture>() {
    let g = E::matrix_golden();
    let flags = golden_prefix(g).flags.get();
    for bit in (0..32).filter(|b| E::FLAG_BITS & 1 << b == 0) {
        let got = corrupt_prefix::<E>(g, |d| d.flags = U32::new(flags | 1 << bit));
        assert_eq!(
            got,
            Err(DecodeError::UnknownFlags {
                bits: flags | 1 << bit
            }),
            "bit {bit}"
        );
    }
}

pub(crate) fn every_single_byte_corruption_is_rejected_or_harmless<E: Fixture>() {
    // Flipping any bit of any byte either gives a precise rejection or (for the few fields
    // whose every value is meaningful) a packet that decodes to a different, still
    // consistent representation.
    let g = E::matrix_golden();
    let base = decode::<E>(g).unwrap();
    let mut copy = g.to_vec();
    for byte in 0..g.len() {
        for bit in 0..8 {
            copy[byte] ^= 1 << bit;
            match decode::<E>(&copy) {
                Err(e) => assert_ne!(e.code(), 0),
                Ok(r) => {
                    assert_ne!(r, base, "byte {byte} bit {bit} decoded to the same repr");
                    assert!(
                        E::FREE_BYTES.iter().any(|f| f.contains(&byte)),
                        "byte {byte} bit {bit} accepted"
                    );
                    // An accepted packet encodes back to the same bytes.
                    assert_eq!(E::to_bytes(&r).as_ref(), copy.as_bytes());
                }
            }
            copy[byte] ^= 1 << bit;
        }
    }
}

/// The entry table ([`ENTRIES`]) tells every golden's entry, by magic and by size: a
/// golden is its entry, a truncated golden still is (by its magic, and its verdict is a
/// length), a golden with a foreign magic is its entry by size (verdict: the magic), and
/// a truncated one with a foreign magic is no entry (its verdict is the first entry's).
pub(crate) fn entry_table_tells_every_golden<E: Fixture>() {
    let (route, title, size) = E::ROW;
    let row = ENTRIES.iter().find(|e| e.route == route).unwrap();
    assert_eq!((row.title, row.size), (title, size));
    for (_, _, golden) in E::goldens() {
        assert_eq!(golden.len(), size);
        let entry = entry_of(golden).unwrap();
        assert_eq!((entry.route, entry.title), (route, title));
        assert_eq!(entry_or_first(golden).route, route);
        let v = verdict(golden);
        assert!(matches!(v, Verdict::Relocatable | Verdict::Bound), "{v:?}");
        assert_eq!(v.error(), None);

        let truncated = &golden[..size - 1];
        assert_eq!(entry_of(truncated).unwrap().route, route);
        assert_eq!(
            verdict(truncated),
            Verdict::Invalid(DecodeError::Length {
                found: size - 1,
                expected: size
            })
        );
        assert_eq!(entry_of(&golden[..4]).unwrap().route, route);

        // A foreign magic: the entry by its size when no other row has that size, else
        // none (then the first entry's rules judge it); the verdict names the magic.
        let mut foreign = golden.to_vec();
        foreign[..4].copy_from_slice(b"SKXX");
        let size_is_unique = ENTRIES.iter().filter(|e| e.size == size).count() == 1;
        assert_eq!(
            entry_of(&foreign).map(|e| e.route),
            size_is_unique.then_some(route)
        );
        assert_eq!(
            verdict(&foreign),
            Verdict::Invalid(DecodeError::Magic { found: *b"SKXX" })
        );
        assert_eq!(entry_of(&foreign[..size - 1]), None);
        assert_eq!(entry_or_first(&foreign[..size - 1]).route, 0x2f);
        assert_eq!(entry_of(&foreign[..3]), None);
    }
}

/// The generic codec tests as `#[test]` functions of the calling module, for entry
/// `$entry` (which implements [`Fixture`]).
macro_rules! codec_suite {
    ($entry:ty) => {
        mod codec_suite {
            use super::*;

            #[test]
            fn encoder_matches_hand_written_goldens() {
                crate::ev74::suite::encoder_matches_hand_written_goldens::<$entry>();
            }

            #[test]
            fn every_wrong_length_is_rejected() {
                crate::ev74::suite::every_wrong_length_is_rejected::<$entry>();
            }

            #[test]
            fn rebinding_leaves_the_encoded_packet_intact() {
                crate::ev74::suite::rebinding_leaves_the_encoded_packet_intact::<$entry>();
            }

            #[test]
            fn bind_rejections() {
                crate::ev74::suite::bind_rejections::<$entry>();
            }

            #[test]
            fn relocations_follow_the_bind_rules() {
                crate::ev74::suite::relocations_follow_the_bind_rules::<$entry>();
            }

            #[test]
            fn rejection_matrix() {
                crate::ev74::suite::rejection_matrix::<$entry>();
            }

            #[test]
            fn entry_table_tells_every_golden() {
                crate::ev74::suite::entry_table_tells_every_golden::<$entry>();
            }

            #[test]
            fn every_unknown_flag_bit_is_rejected() {
                crate::ev74::suite::every_unknown_flag_bit_is_rejected::<$entry>();
            }

            #[test]
            fn every_single_byte_corruption_is_rejected_or_harmless() {
                crate::ev74::suite::every_single_byte_corruption_is_rejected_or_harmless::<$entry>(
                );
            }
        }
    };
}

pub(crate) use codec_suite;
