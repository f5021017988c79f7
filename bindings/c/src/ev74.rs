//! The EV74 host codec (SPEC §6, §7): the representability check, relocatable encoding,
//! binding to device regions, the device decoder's validation and decoding into a fields
//! struct, for Quant v1 (224 bytes), CastTess v1 (216 bytes) and the Detess-family entries
//! Detess v1, DetessCast v1 and DetessDequant v1 (224 bytes each) and Preproc v1 (368
//! bytes; the functions of these take the length of every buffer they write).

use simak::ev74::{
    self, BindError, CastTess, DecodeError, Detess, DetessCast, DetessDequant, DevicePlan,
    DeviceRegion, NativeEntry, Packet, Preproc, Quant, Relocation,
};
use simak::state::{Bound, Encoded};

use crate::plan::PlanHandle;
use crate::{
    Failure, SIMAK_ERROR_CAPACITY, borrow, dtype_code, guard, put, simak_casttess_plan,
    simak_channels, simak_detess_plan, simak_detesscast_plan, simak_detessdequant_plan,
    simak_error, simak_preproc_plan, simak_quant_plan,
};

/// Bytes of a Quant v1 descriptor.
pub const SIMAK_EV74_QUANT_DESCRIPTOR_SIZE: u32 = 224;
/// Bytes of a CastTess v1 descriptor.
pub const SIMAK_EV74_CASTTESS_DESCRIPTOR_SIZE: u32 = 216;
/// Bytes of a Detess v1, DetessCast v1 or DetessDequant v1 descriptor.
pub const SIMAK_EV74_DETESS_DESCRIPTOR_SIZE: u32 = 224;
/// Bytes of a Preproc v1 descriptor.
pub const SIMAK_EV74_PREPROC_DESCRIPTOR_SIZE: u32 = 368;

// The C constants are literals (cbindgen writes them as `#define`s); they are the table's.
const _: () = assert!(
    ev74::ENTRIES.len() == 6
        && ev74::ENTRIES[0].is::<Quant>()
        && ev74::ENTRIES[0].size == SIMAK_EV74_QUANT_DESCRIPTOR_SIZE as usize
        && ev74::ENTRIES[1].is::<CastTess>()
        && ev74::ENTRIES[1].size == SIMAK_EV74_CASTTESS_DESCRIPTOR_SIZE as usize
        && ev74::ENTRIES[2].is::<Detess>()
        && ev74::ENTRIES[3].is::<DetessCast>()
        && ev74::ENTRIES[4].is::<DetessDequant>()
        && ev74::ENTRIES[2].size == SIMAK_EV74_DETESS_DESCRIPTOR_SIZE as usize
        && ev74::ENTRIES[3].size == SIMAK_EV74_DETESS_DESCRIPTOR_SIZE as usize
        && ev74::ENTRIES[4].size == SIMAK_EV74_DETESS_DESCRIPTOR_SIZE as usize
        && ev74::ENTRIES[5].is::<Preproc>()
        && ev74::ENTRIES[5].size == SIMAK_EV74_PREPROC_DESCRIPTOR_SIZE as usize
);

/// The fields of a Quant v1 descriptor that passed the decoder's rules (SPEC §7).
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy, Default)]
pub struct simak_ev74_quant_fields {
    /// Element count (0 when empty).
    pub elements: u64,
    /// Input accessed span in bytes.
    pub input_span: u64,
    /// Output accessed span in bytes.
    pub output_span: u64,
    /// Extents; slots from `rank` on are 0. A scalar is rank 1, extent 1.
    pub extents: [u64; 6],
    /// Input byte strides (0 for extent-0/1 axes and unused slots).
    pub input_strides: [u64; 6],
    /// Output byte strides (0 for extent-0/1 axes and unused slots).
    pub output_strides: [u64; 6],
    /// Input `simak_dtype` code (the wire code).
    pub dtype: u32,
    /// Rank on the wire, 1 to 6.
    pub rank: u32,
    /// Flag word: bit 0 input contiguous, bit 1 output contiguous.
    pub flags: u32,
    /// Input bus address (0: unbound).
    pub input_address: u32,
    /// Output bus address (0: unbound).
    pub output_address: u32,
    /// The multiplier's binary32 bits.
    pub multiplier_bits: u32,
    /// Zero point.
    pub zero_point: i32,
    /// A `simak_rounding` code.
    pub rounding: u32,
}

/// The fields of a CastTess v1 descriptor that passed the decoder's rules (SPEC §7).
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy, Default)]
pub struct simak_ev74_casttess_fields {
    /// Element count (0 when empty).
    pub elements: u64,
    /// Input accessed span in bytes.
    pub input_span: u64,
    /// Output physical span in bytes (the `MlaTiled` capacity).
    pub output_span: u64,
    /// Output bytes per outer index.
    pub bytes_per_outer: u64,
    /// Extents; slots from `rank` on are 0.
    pub extents: [u64; 6],
    /// Input byte strides (0 for extent-0/1 axes and unused slots).
    pub input_strides: [u64; 6],
    /// Input `simak_dtype` code (the wire code).
    pub dtype: u32,
    /// Rank, 1 to 6.
    pub rank: u32,
    /// 1 when channels are padded to 16, else 0.
    pub pad_to_16: u32,
    /// Input bus address (0: unbound).
    pub input_address: u32,
    /// Output bus address (0: unbound).
    pub output_address: u32,
    /// Logical axis of D, H, W, C; -1 absent.
    pub axes: [i32; 4],
    /// Tile extents of D, H, W, C.
    pub tile: [u32; 4],
    /// Tiles along D, H, W, C.
    pub tile_counts: [u32; 4],
    /// Always 0 (keeps the struct free of padding).
    pub reserved: u32,
}

/// Copies `bytes` to the caller's `out`.
///
/// # Safety
///
/// `out` is null or writable for `bytes.len()` bytes.
unsafe fn copy_out(bytes: &[u8], out: *mut u8, what: &str) -> Result<(), Failure> {
    if out.is_null() {
        return Err(Failure::null(what));
    }
    // SAFETY: `out` is writable for `bytes.len()` bytes by the caller's contract, and
    // `bytes` is this crate's own memory, so the two do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out, bytes.len()) };
    Ok(())
}

/// The caller's `length` bytes at `bytes`.
///
/// # Safety
///
/// `bytes` is null or readable for `length` bytes, unchanged during the call.
unsafe fn bytes_in<'a, E: NativeEntry>(
    bytes: *const u8,
    length: usize,
) -> Result<&'a [u8], Failure> {
    if bytes.is_null() {
        return Err(Failure::null("bytes"));
    }
    if isize::try_from(length).is_err() {
        // No readable buffer is this long; it is not the descriptor's size either.
        return Err(DecodeError::Length {
            found: length,
            expected: E::DESCRIPTOR_SIZE,
        }
        .into());
    }
    // SAFETY: not null, readable for `length` ≤ isize::MAX bytes by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(bytes, length) })
}

/// The caller's buffer `what` of `capacity` bytes must hold entry `E`'s descriptor (`None`:
/// a length-less function of SONAME 0, whose contract is the descriptor's size); a shorter
/// one is [`SIMAK_ERROR_CAPACITY`].
fn check_capacity<E: NativeEntry>(capacity: Option<usize>, what: &str) -> Result<(), Failure> {
    let size = E::DESCRIPTOR_SIZE;
    match capacity.filter(|&c| c < size) {
        None => Ok(()),
        Some(capacity) => Err(Failure::new(
            SIMAK_ERROR_CAPACITY,
            format!(
                "the {what} buffer holds {capacity} bytes; the {} descriptor takes {size}",
                E::ENTRY_TITLE
            ),
        )),
    }
}

/// The body of every `simak_ev74_*_encode_relocatable[_into]`: the device check of the
/// plan, then its relocatable packet into `packet`. `capacity` is the caller's length of
/// `packet` in bytes (`None` for the length-less functions of SONAME 0, whose contract is
/// the descriptor's size); a shorter one is [`SIMAK_ERROR_CAPACITY`], nothing written.
///
/// # Safety
///
/// `plan` is NULL or a live handle; `packet` NULL or writable for `capacity` bytes (the
/// descriptor's size when `None`); `error` NULL or writable.
unsafe fn encode_relocatable<H>(
    plan: *const H,
    packet: *mut u8,
    capacity: Option<usize>,
    error: *mut simak_error,
) -> u32
where
    H: PlanHandle,
    H::Op: NativeEntry,
{
    let body = || {
        // SAFETY: this function's contract.
        let plan = unsafe { borrow(plan, "plan") }?;
        if packet.is_null() {
            return Err(Failure::null("packet"));
        }
        check_capacity::<H::Op>(capacity, "packet")?;
        let device = ev74::check_inference(plan.planned().plan())?;
        let encoded = ev74::encode_relocatable(&device);
        // SAFETY: this function's contract.
        unsafe { copy_out(encoded.as_bytes().as_ref(), packet, "packet") }
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}

/// The body of every `simak_ev74_*_bind`: binds the caller's encoded packet to the regions
/// (bus address, capacity in bytes) `input` and `output`, into `bound` (SPEC §6).
///
/// # Safety
///
/// `plan` is NULL or a live handle; `encoded` NULL or readable, `bound` NULL or writable,
/// for the descriptor's size (they may be the same buffer); `error` NULL or writable.
unsafe fn bind<H>(
    plan: *const H,
    encoded: *const u8,
    (input_address, input_capacity): (u32, u64),
    (output_address, output_capacity): (u32, u64),
    bound: *mut u8,
    error: *mut simak_error,
) -> u32
where
    H: PlanHandle,
    H::Op: NativeEntry,
{
    let input = DeviceRegion::new(input_address, input_capacity);
    let output = DeviceRegion::new(output_address, output_capacity);
    // SAFETY: this function's contract is `bind_with`'s (`None`: `bound` holds the
    // descriptor's size).
    unsafe {
        bind_with(plan, encoded, bound, None, error, |device, relocatable| {
            ev74::bind(device, relocatable, input, output)
        })
    }
}

/// One DMA-BUF relocation for `simak_ev74_*_relocate` (SPEC §6): the address slot at byte
/// `slot` of the descriptor (24 for the input, 32 for the output) is to hold the resolved
/// region of `capacity` bytes at bus `address`.
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy, Default)]
pub struct simak_ev74_relocation {
    /// Byte offset of the address slot in the descriptor: 24 (input) or 32 (output).
    pub slot: u32,
    /// Bus address the slot is to hold.
    pub address: u32,
    /// Capacity of the region in bytes.
    pub capacity: u64,
}

/// The body of every `simak_ev74_*_relocate`: applies the caller's relocation table to the
/// caller's encoded packet with `ev74::relocate`, into `bound` of `bound_capacity` bytes
/// (shorter than the descriptor: [`SIMAK_ERROR_CAPACITY`], nothing written).
///
/// # Safety
///
/// As [`bind`], with `bound` NULL or writable for `bound_capacity` bytes; `relocations`
/// NULL or readable for `count` relocations.
unsafe fn relocate<H>(
    plan: *const H,
    encoded: *const u8,
    relocations: *const simak_ev74_relocation,
    count: usize,
    bound: *mut u8,
    bound_capacity: usize,
    error: *mut simak_error,
) -> u32
where
    H: PlanHandle,
    H::Op: NativeEntry,
{
    let table: Vec<Relocation> = if count == 0 {
        Vec::new()
    } else if relocations.is_null() || isize::try_from(count).is_err() {
        // SAFETY: `error` is null or writable by this function's contract.
        return unsafe { guard(error, || Err(Failure::null("relocations"))) };
    } else {
        // SAFETY: not null, readable for `count` relocations by this function's contract.
        unsafe { std::slice::from_raw_parts(relocations, count) }
            .iter()
            .map(|r| Relocation::at_slot(r.slot as usize, DeviceRegion::new(r.address, r.capacity)))
            .collect()
    };
    // SAFETY: this function's contract is `bind_with`'s.
    unsafe {
        bind_with(
            plan,
            encoded,
            bound,
            Some(bound_capacity),
            error,
            |device, relocatable| ev74::relocate(device, relocatable, &table),
        )
    }
}

/// The shared body of `bind` and `relocate`: the caller's bytes must be the plan's
/// relocatable encoding (bind's first rule), then `apply` gives the bound packet, copied to
/// `bound`. `capacity` is the caller's length of `bound` (`None`: the descriptor's size,
/// for `bind`, whose header declares fixed-size arrays); it is checked with the null
/// pointers, before the packet.
///
/// # Safety
///
/// `plan` is NULL or a live handle; `encoded` NULL or readable for the descriptor's size,
/// `bound` NULL or writable for `capacity` bytes (the descriptor's size when `None`; they
/// may be the same buffer); `error` NULL or writable.
unsafe fn bind_with<H>(
    plan: *const H,
    encoded: *const u8,
    bound: *mut u8,
    capacity: Option<usize>,
    error: *mut simak_error,
    apply: impl FnOnce(
        &DevicePlan<H::Op>,
        &Packet<H::Op, Encoded>,
    ) -> Result<Packet<H::Op, Bound>, BindError>,
) -> u32
where
    H: PlanHandle,
    H::Op: NativeEntry,
{
    let body = || {
        // SAFETY: this function's contract.
        let plan = unsafe { borrow(plan, "plan") }?;
        if encoded.is_null() {
            return Err(Failure::null("encoded"));
        }
        if bound.is_null() {
            return Err(Failure::null("bound"));
        }
        check_capacity::<H::Op>(capacity, "bound")?;
        let device = ev74::check_inference(plan.planned().plan())?;
        let relocatable = ev74::encode_relocatable(&device);
        let mut given = [0u8; ev74::MAX_DESCRIPTOR_SIZE];
        let given = &mut given[..<H::Op as NativeEntry>::DESCRIPTOR_SIZE];
        // SAFETY: `encoded` is readable for the descriptor's size by this function's
        // contract; `given` is this function's own buffer.
        unsafe { std::ptr::copy_nonoverlapping(encoded, given.as_mut_ptr(), given.len()) };
        // The library binds only packets it made: the caller's bytes must be this plan's
        // relocatable encoding (bind's first rule).
        if given != relocatable.as_bytes().as_ref() {
            return Err(BindError::PacketMismatch.into());
        }
        let packet = apply(&device, &relocatable)?;
        // SAFETY: this function's contract.
        unsafe { copy_out(packet.as_bytes().as_ref(), bound, "bound") }
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}

/// The body of every `simak_ev74_*_validate`: the device decoder's checks of entry `E` on
/// the caller's bytes (SPEC §7).
///
/// # Safety
///
/// `bytes` is NULL or readable for `length` bytes, unchanged during the call; `error` NULL
/// or writable.
unsafe fn validate<E: NativeEntry>(
    bytes: *const u8,
    length: usize,
    error: *mut simak_error,
) -> u32 {
    let body = || {
        // SAFETY: this function's contract.
        let bytes = unsafe { bytes_in::<E>(bytes, length) }?;
        ev74::decode::<E>(bytes)?;
        Ok(())
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}

/// The body of every `simak_ev74_*_decode`: every rule of entry `E` but the bound-address
/// one, then the descriptor's fields (`to_fields` of the validated representation) into
/// `fields`, written only on success.
///
/// # Safety
///
/// `bytes` is NULL or readable for `length` bytes; `fields` NULL or writable; `error` NULL
/// or writable.
unsafe fn decode<E: NativeEntry, F>(
    bytes: *const u8,
    length: usize,
    fields: *mut F,
    error: *mut simak_error,
    to_fields: fn(&E::Repr) -> F,
) -> u32 {
    let body = || {
        // SAFETY: this function's contract.
        let bytes = unsafe { bytes_in::<E>(bytes, length) }?;
        if fields.is_null() {
            return Err(Failure::null("fields"));
        }
        let out = to_fields(&E::parse(bytes)?);
        // SAFETY: `fields` is not null and writable by this function's contract.
        unsafe { put(fields, out) };
        Ok(())
    };
    // SAFETY: `error` is null or writable by this function's contract.
    unsafe { guard(error, body) }
}

/// The C fields of a Quant v1 representation.
fn quant_fields(r: &<Quant as NativeEntry>::Repr) -> simak_ev74_quant_fields {
    let p = &r.prefix;
    simak_ev74_quant_fields {
        elements: p.elements,
        input_span: p.input_span,
        output_span: p.output_span,
        extents: p.extents,
        input_strides: p.input_strides,
        output_strides: r.output_strides,
        dtype: dtype_code(p.dtype),
        rank: u32::from(p.rank),
        flags: r.flags.bits(),
        input_address: p.input_address,
        output_address: p.output_address,
        multiplier_bits: r.multiplier.bits(),
        zero_point: r.zero_point,
        rounding: r.rounding.code(),
    }
}

/// The C fields of a CastTess v1 representation.
fn casttess_fields(r: &<CastTess as NativeEntry>::Repr) -> simak_ev74_casttess_fields {
    let p = &r.prefix;
    simak_ev74_casttess_fields {
        elements: p.elements,
        input_span: p.input_span,
        output_span: p.output_span,
        bytes_per_outer: r.bytes_per_outer,
        extents: p.extents,
        input_strides: p.input_strides,
        dtype: dtype_code(p.dtype),
        rank: u32::from(p.rank),
        pad_to_16: u32::from(r.channels == simak::layout::Channels::PadTo16),
        input_address: p.input_address,
        output_address: p.output_address,
        axes: r.axes.map(|a| a.map_or(-1, i32::from)),
        tile: r.tile,
        tile_counts: r.tile_counts,
        reserved: 0,
    }
}

/// The fields of a Detess-family descriptor (Detess v1, DetessCast v1, DetessDequant v1)
/// that passed the decoder's rules (SPEC §7, §12). The prefix describes the strided
/// output: `output_dtype`, `output_strides` and `output_span` are the output's; the tiled
/// input is the rest.
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy, Default)]
pub struct simak_ev74_detess_fields {
    /// Element count (0 when empty).
    pub elements: u64,
    /// The tiled input's physical span in bytes (the `MlaTiled` capacity).
    pub input_span: u64,
    /// The output's accessed span in bytes.
    pub output_span: u64,
    /// Input bytes per outer index.
    pub bytes_per_outer: u64,
    /// Extents (the logical shape); slots from `rank` on are 0.
    pub extents: [u64; 6],
    /// Output byte strides (0 for extent-0/1 axes and unused slots).
    pub output_strides: [u64; 6],
    /// Which op: 0 Detess, 1 DetessCast, 2 DetessDequant (the magic word).
    pub conversion: u32,
    /// The tiled input's `simak_dtype` code.
    pub input_dtype: u32,
    /// The output's `simak_dtype` code.
    pub output_dtype: u32,
    /// Rank, 1 to 6.
    pub rank: u32,
    /// A `simak_channels` code: the channel encoding.
    pub channels: u32,
    /// Tile alignment in bytes: 16 or 1.
    pub tile_align: u32,
    /// Input bus address (0: unbound).
    pub input_address: u32,
    /// Output bus address (0: unbound).
    pub output_address: u32,
    /// Logical axis of D, H, W, C; -1 absent.
    pub axes: [i32; 4],
    /// Tile extents of D, H, W, C.
    pub tile: [u32; 4],
    /// Tiles along D, H, W, C.
    pub tile_counts: [u32; 4],
    /// DetessDequant: the multiplier's binary32 bits (0 for the other ops).
    pub multiplier_bits: u32,
    /// DetessDequant: the zero point (0 for the other ops).
    pub zero_point: i32,
}

/// The C fields of a Detess-family representation.
fn detess_fields(r: &<Detess as NativeEntry>::Repr) -> simak_ev74_detess_fields {
    let p = &r.prefix;
    let channels = match r.layout.channels {
        simak::layout::Channels::Compact => simak_channels::SIMAK_CHANNELS_COMPACT,
        simak::layout::Channels::PadTo16 => simak_channels::SIMAK_CHANNELS_PAD_TO_16,
        simak::layout::Channels::CBlock16 => simak_channels::SIMAK_CHANNELS_CBLOCK16,
    };
    simak_ev74_detess_fields {
        elements: p.elements,
        input_span: p.input_span,
        output_span: p.output_span,
        bytes_per_outer: r.bytes_per_outer,
        extents: p.extents,
        output_strides: *r.output_strides(),
        conversion: u32::from(r.conversion.code()),
        input_dtype: dtype_code(r.input_dtype),
        output_dtype: dtype_code(p.dtype),
        rank: u32::from(p.rank),
        channels: channels as u32,
        // 16 or 1.
        tile_align: r.layout.tile_align.bytes() as u32,
        input_address: p.input_address,
        output_address: p.output_address,
        axes: r.layout.axes.map(|a| a.map_or(-1, i32::from)),
        tile: r.layout.tile,
        tile_counts: r.tile_counts,
        multiplier_bits: r.multiplier_bits,
        zero_point: r.zero_point,
    }
}

/// Checks `plan` for the EV74 (each span at most 2^32 - 1 bytes: 0x301, 0x302) and writes
/// its relocatable Quant v1 descriptor (both address slots 0) into `packet`. No device work
/// runs.
///
/// Kept for SONAME 0: it takes no length and writes 224 bytes whatever the buffer; new
/// code calls `simak_ev74_quant_encode_relocatable_into`, which takes the buffer's length.
///
/// # Safety
///
/// `plan` is NULL or a live handle; `packet` NULL or writable for 224 bytes; `error` NULL
/// or writable.
///
/// cbindgen:ptrs-as-arrays=[[packet;224]]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_quant_encode_relocatable(
    plan: *const simak_quant_plan,
    packet: *mut u8,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `encode_relocatable`'s.
    unsafe { encode_relocatable(plan, packet, None, error) }
}

/// `simak_ev74_quant_encode_relocatable` with the length of `packet`: `capacity` bytes
/// (at least 224; exactly 224 are written). A shorter buffer is `SIMAK_ERROR_CAPACITY`
/// (0x609) and nothing is written; a null `packet` is `SIMAK_ERROR_NULL_ARGUMENT`. The
/// other errors are those of `simak_ev74_quant_encode_relocatable`.
///
/// # Safety
///
/// `plan` is NULL or a live handle; `packet` NULL or writable for `capacity` bytes; `error`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_quant_encode_relocatable_into(
    plan: *const simak_quant_plan,
    packet: *mut u8,
    capacity: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `encode_relocatable`'s.
    unsafe { encode_relocatable(plan, packet, Some(capacity), error) }
}

/// Binds the relocatable packet `encoded` (from `simak_ev74_quant_encode_relocatable` of
/// the same plan) to device regions, writing the bound packet to `bound` (which may be
/// `encoded` itself; `encoded` is otherwise untouched, so it can be bound again).
///
/// Checks, in order: the packet is this plan's encoding (0x310); for a nonempty plan, for
/// the input then the output region, a nonzero address (38, 39), capacity >= span (0x311,
/// 0x312), alignment (36, 50), address + span <= 2^32 (34, 35); then disjoint regions (37).
/// An empty plan binds any regions.
///
/// # Safety
///
/// `plan` is NULL or a live handle; `encoded` NULL or readable and `bound` NULL or writable
/// for 224 bytes; `error` NULL or writable.
///
/// cbindgen:ptrs-as-arrays=[[encoded;224], [bound;224]]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_quant_bind(
    plan: *const simak_quant_plan,
    encoded: *const u8,
    input_address: u32,
    input_capacity: u64,
    output_address: u32,
    output_capacity: u64,
    bound: *mut u8,
    error: *mut simak_error,
) -> u32 {
    let (input, output) = (
        (input_address, input_capacity),
        (output_address, output_capacity),
    );
    // SAFETY: this function's contract is `bind`'s.
    unsafe { bind(plan, encoded, input, output, bound, error) }
}

/// Applies `count` DMA-BUF relocations to the relocatable packet `encoded` (from
/// `simak_ev74_quant_encode_relocatable` of the same plan), writing the bound packet to
/// `bound` of `bound_capacity` bytes (at least 224; exactly 224 are written; it may be
/// `encoded` itself): the other way to bind (SPEC §6), with the same rules and the same
/// bytes as `simak_ev74_quant_bind` for the same regions.
///
/// Checks, in order: NULL arguments, `bound_capacity` (`SIMAK_ERROR_CAPACITY`, 0x609); the
/// packet is this plan's encoding (0x310); each relocation's `slot` is
/// 24 (input) or 32 (output) (0x313), none named twice (0x314 input, 0x315 output); then, on
/// the named regions, `simak_ev74_quant_bind`'s region rules (a slot no relocation names is
/// unbound: 38, 39 for a nonempty plan). `relocations` may be NULL when `count` is 0.
///
/// # Safety
///
/// `plan` is NULL or a live handle; `encoded` NULL or readable for 224 bytes; `bound` NULL
/// or writable for `bound_capacity` bytes; `relocations` NULL or readable for `count`
/// relocations; `error` NULL or writable.
///
/// cbindgen:ptrs-as-arrays=[[encoded;224]]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_quant_relocate(
    plan: *const simak_quant_plan,
    encoded: *const u8,
    relocations: *const simak_ev74_relocation,
    count: usize,
    bound: *mut u8,
    bound_capacity: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `relocate`'s.
    unsafe {
        relocate(
            plan,
            encoded,
            relocations,
            count,
            bound,
            bound_capacity,
            error,
        )
    }
}

/// Runs the EV74 device decoder's checks on `length` bytes (SPEC §7: every rule in its
/// fixed order, then both address slots bound for a nonempty packet) and returns the first
/// broken rule's code (1..=255, docs/errors.md), or 0 when the device would accept the
/// packet.
///
/// # Safety
///
/// `bytes` is NULL or readable for `length` bytes; `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_quant_validate(
    bytes: *const u8,
    length: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `validate`'s.
    unsafe { validate::<Quant>(bytes, length, error) }
}

/// Decodes a Quant v1 descriptor into `fields`: every rule of `simak_ev74_quant_validate`
/// except the bound-address rule (codes 38, 39), so a relocatable packet decodes too.
/// `fields` is written only on success.
///
/// # Safety
///
/// `bytes` is NULL or readable for `length` bytes; `fields` NULL or writable; `error` NULL
/// or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_quant_decode(
    bytes: *const u8,
    length: usize,
    fields: *mut simak_ev74_quant_fields,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `decode`'s.
    unsafe { decode::<Quant, _>(bytes, length, fields, error, quant_fields) }
}

/// Checks `plan` for the EV74 (input span and output capacity at most 2^32 - 1 bytes) and
/// writes its relocatable CastTess v1 descriptor into `packet`.
///
/// Kept for SONAME 0: it takes no length and writes 216 bytes whatever the buffer; new
/// code calls `simak_ev74_casttess_encode_relocatable_into`, which takes the buffer's
/// length.
///
/// # Safety
///
/// `plan` is NULL or a live handle; `packet` NULL or writable for 216 bytes; `error` NULL
/// or writable.
///
/// cbindgen:ptrs-as-arrays=[[packet;216]]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_casttess_encode_relocatable(
    plan: *const simak_casttess_plan,
    packet: *mut u8,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `encode_relocatable`'s.
    unsafe { encode_relocatable(plan, packet, None, error) }
}

/// `simak_ev74_casttess_encode_relocatable` with the length of `packet`: `capacity` bytes
/// (at least 216; exactly 216 are written). A shorter buffer is `SIMAK_ERROR_CAPACITY`
/// (0x609) and nothing is written; a null `packet` is `SIMAK_ERROR_NULL_ARGUMENT`.
///
/// # Safety
///
/// `plan` is NULL or a live handle; `packet` NULL or writable for `capacity` bytes; `error`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_casttess_encode_relocatable_into(
    plan: *const simak_casttess_plan,
    packet: *mut u8,
    capacity: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `encode_relocatable`'s.
    unsafe { encode_relocatable(plan, packet, Some(capacity), error) }
}

/// Binds a relocatable CastTess packet as `simak_ev74_quant_bind` does; the output region
/// must be 16-byte aligned (50) and hold the capacity (0x312).
///
/// # Safety
///
/// As `simak_ev74_quant_bind`, with 216-byte packets.
///
/// cbindgen:ptrs-as-arrays=[[encoded;216], [bound;216]]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_casttess_bind(
    plan: *const simak_casttess_plan,
    encoded: *const u8,
    input_address: u32,
    input_capacity: u64,
    output_address: u32,
    output_capacity: u64,
    bound: *mut u8,
    error: *mut simak_error,
) -> u32 {
    let (input, output) = (
        (input_address, input_capacity),
        (output_address, output_capacity),
    );
    // SAFETY: this function's contract is `bind`'s.
    unsafe { bind(plan, encoded, input, output, bound, error) }
}

/// Applies DMA-BUF relocations to a relocatable CastTess packet as
/// `simak_ev74_quant_relocate` does; the output region must be 16-byte aligned (50) and
/// hold the capacity (0x312).
///
/// # Safety
///
/// As `simak_ev74_quant_relocate`, with 216-byte packets (`bound_capacity` at least 216).
///
/// cbindgen:ptrs-as-arrays=[[encoded;216]]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_casttess_relocate(
    plan: *const simak_casttess_plan,
    encoded: *const u8,
    relocations: *const simak_ev74_relocation,
    count: usize,
    bound: *mut u8,
    bound_capacity: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `relocate`'s.
    unsafe {
        relocate(
            plan,
            encoded,
            relocations,
            count,
            bound,
            bound_capacity,
            error,
        )
    }
}

/// The CastTess v1 device decoder's checks, as `simak_ev74_quant_validate`.
///
/// # Safety
///
/// `bytes` is NULL or readable for `length` bytes; `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_casttess_validate(
    bytes: *const u8,
    length: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `validate`'s.
    unsafe { validate::<CastTess>(bytes, length, error) }
}

/// Decodes a CastTess v1 descriptor into `fields`, as `simak_ev74_quant_decode`.
///
/// # Safety
///
/// As `simak_ev74_quant_decode`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_casttess_decode(
    bytes: *const u8,
    length: usize,
    fields: *mut simak_ev74_casttess_fields,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `decode`'s.
    unsafe { decode::<CastTess, _>(bytes, length, fields, error, casttess_fields) }
}

/// Checks the Detess head `plan` for the EV74 (the tiled input's physical span and the
/// output's span at most 2^32 - 1 bytes: 0x301, 0x302) and writes its relocatable Detess
/// v1 descriptor (224 bytes, both address slots 0) into `packet` of `capacity` bytes (at
/// least 224; exactly 224 are written). A shorter buffer is `SIMAK_ERROR_CAPACITY` (0x609)
/// and nothing is written. One descriptor per head: a multi-head OFM is one packet per
/// head.
///
/// # Safety
///
/// `plan` is NULL or a live handle; `packet` NULL or writable for `capacity` bytes; `error`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detess_encode_relocatable(
    plan: *const simak_detess_plan,
    packet: *mut u8,
    capacity: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `encode_relocatable`'s.
    unsafe { encode_relocatable(plan, packet, Some(capacity), error) }
}

/// Binds a relocatable Detess packet (224 bytes at `encoded`, this plan's own encoding:
/// else 0x310) to the tiled input region and the strided output region (bus address,
/// capacity in bytes), into `bound` of `bound_capacity` bytes (at least 224), as
/// `simak_ev74_quant_bind` does. The input must be aligned to 16 bytes at tile alignment
/// 16, else to its element size (36), and hold the physical span (0x311); the output must
/// be aligned to its element size (50) and hold its span (0x312).
///
/// # Safety
///
/// `plan` is NULL or a live handle; `encoded` NULL or readable for 224 bytes; `bound` NULL
/// or writable for `bound_capacity` bytes (it may be `encoded`); `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detess_bind(
    plan: *const simak_detess_plan,
    encoded: *const u8,
    input_address: u32,
    input_capacity: u64,
    output_address: u32,
    output_capacity: u64,
    bound: *mut u8,
    bound_capacity: usize,
    error: *mut simak_error,
) -> u32 {
    let input = DeviceRegion::new(input_address, input_capacity);
    let output = DeviceRegion::new(output_address, output_capacity);
    // SAFETY: this function's contract is `bind_with`'s.
    unsafe {
        bind_with(
            plan,
            encoded,
            bound,
            Some(bound_capacity),
            error,
            |device, relocatable| ev74::bind(device, relocatable, input, output),
        )
    }
}

/// Applies DMA-BUF relocations to a relocatable Detess packet as
/// `simak_ev74_quant_relocate` does, with the address rules of
/// `simak_ev74_detess_bind`.
///
/// # Safety
///
/// As `simak_ev74_quant_relocate`, with 224-byte packets (`bound_capacity` at least 224).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detess_relocate(
    plan: *const simak_detess_plan,
    encoded: *const u8,
    relocations: *const simak_ev74_relocation,
    count: usize,
    bound: *mut u8,
    bound_capacity: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `relocate`'s.
    unsafe {
        relocate(
            plan,
            encoded,
            relocations,
            count,
            bound,
            bound_capacity,
            error,
        )
    }
}

/// The Detess v1 device decoder's checks on the caller's `length` bytes, as
/// `simak_ev74_quant_validate` (a packet of another entry fails on its magic word, 2).
///
/// # Safety
///
/// `bytes` is NULL or readable for `length` bytes; `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detess_validate(
    bytes: *const u8,
    length: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `validate`'s.
    unsafe { validate::<Detess>(bytes, length, error) }
}

/// Decodes a Detess v1 descriptor into `fields` (every rule but the bound-address one),
/// as `simak_ev74_quant_decode`.
///
/// # Safety
///
/// As `simak_ev74_quant_decode`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detess_decode(
    bytes: *const u8,
    length: usize,
    fields: *mut simak_ev74_detess_fields,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `decode`'s.
    unsafe { decode::<Detess, _>(bytes, length, fields, error, detess_fields) }
}

/// Checks the DetessCast head `plan` for the EV74 (the tiled input's physical span and the
/// output's span at most 2^32 - 1 bytes: 0x301, 0x302) and writes its relocatable DetessCast
/// v1 descriptor (224 bytes, both address slots 0) into `packet` of `capacity` bytes (at
/// least 224; exactly 224 are written). A shorter buffer is `SIMAK_ERROR_CAPACITY` (0x609)
/// and nothing is written. One descriptor per head: a multi-head OFM is one packet per
/// head.
///
/// # Safety
///
/// `plan` is NULL or a live handle; `packet` NULL or writable for `capacity` bytes; `error`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detesscast_encode_relocatable(
    plan: *const simak_detesscast_plan,
    packet: *mut u8,
    capacity: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `encode_relocatable`'s.
    unsafe { encode_relocatable(plan, packet, Some(capacity), error) }
}

/// Binds a relocatable DetessCast packet (224 bytes at `encoded`, this plan's own encoding:
/// else 0x310) to the tiled input region and the strided output region (bus address,
/// capacity in bytes), into `bound` of `bound_capacity` bytes (at least 224), as
/// `simak_ev74_quant_bind` does. The input must be aligned to 16 bytes at tile alignment
/// 16, else to its element size (36), and hold the physical span (0x311); the output must
/// be aligned to its element size (50) and hold its span (0x312).
///
/// # Safety
///
/// `plan` is NULL or a live handle; `encoded` NULL or readable for 224 bytes; `bound` NULL
/// or writable for `bound_capacity` bytes (it may be `encoded`); `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detesscast_bind(
    plan: *const simak_detesscast_plan,
    encoded: *const u8,
    input_address: u32,
    input_capacity: u64,
    output_address: u32,
    output_capacity: u64,
    bound: *mut u8,
    bound_capacity: usize,
    error: *mut simak_error,
) -> u32 {
    let input = DeviceRegion::new(input_address, input_capacity);
    let output = DeviceRegion::new(output_address, output_capacity);
    // SAFETY: this function's contract is `bind_with`'s.
    unsafe {
        bind_with(
            plan,
            encoded,
            bound,
            Some(bound_capacity),
            error,
            |device, relocatable| ev74::bind(device, relocatable, input, output),
        )
    }
}

/// Applies DMA-BUF relocations to a relocatable DetessCast packet as
/// `simak_ev74_quant_relocate` does, with the address rules of
/// `simak_ev74_detesscast_bind`.
///
/// # Safety
///
/// As `simak_ev74_quant_relocate`, with 224-byte packets (`bound_capacity` at least 224).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detesscast_relocate(
    plan: *const simak_detesscast_plan,
    encoded: *const u8,
    relocations: *const simak_ev74_relocation,
    count: usize,
    bound: *mut u8,
    bound_capacity: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `relocate`'s.
    unsafe {
        relocate(
            plan,
            encoded,
            relocations,
            count,
            bound,
            bound_capacity,
            error,
        )
    }
}

/// The DetessCast v1 device decoder's checks on the caller's `length` bytes, as
/// `simak_ev74_quant_validate` (a packet of another entry fails on its magic word, 2).
///
/// # Safety
///
/// `bytes` is NULL or readable for `length` bytes; `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detesscast_validate(
    bytes: *const u8,
    length: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `validate`'s.
    unsafe { validate::<DetessCast>(bytes, length, error) }
}

/// Decodes a DetessCast v1 descriptor into `fields` (every rule but the bound-address one),
/// as `simak_ev74_quant_decode`.
///
/// # Safety
///
/// As `simak_ev74_quant_decode`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detesscast_decode(
    bytes: *const u8,
    length: usize,
    fields: *mut simak_ev74_detess_fields,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `decode`'s.
    unsafe { decode::<DetessCast, _>(bytes, length, fields, error, detess_fields) }
}

/// Checks the DetessDequant head `plan` for the EV74 (the tiled input's physical span and the
/// output's span at most 2^32 - 1 bytes: 0x301, 0x302) and writes its relocatable DetessDequant
/// v1 descriptor (224 bytes, both address slots 0) into `packet` of `capacity` bytes (at
/// least 224; exactly 224 are written). A shorter buffer is `SIMAK_ERROR_CAPACITY` (0x609)
/// and nothing is written. One descriptor per head: a multi-head OFM is one packet per
/// head.
///
/// # Safety
///
/// `plan` is NULL or a live handle; `packet` NULL or writable for `capacity` bytes; `error`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detessdequant_encode_relocatable(
    plan: *const simak_detessdequant_plan,
    packet: *mut u8,
    capacity: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `encode_relocatable`'s.
    unsafe { encode_relocatable(plan, packet, Some(capacity), error) }
}

/// Binds a relocatable DetessDequant packet (224 bytes at `encoded`, this plan's own encoding:
/// else 0x310) to the tiled input region and the strided output region (bus address,
/// capacity in bytes), into `bound` of `bound_capacity` bytes (at least 224), as
/// `simak_ev74_quant_bind` does. The input must be aligned to 16 bytes at tile alignment
/// 16, else to its element size (36), and hold the physical span (0x311); the output must
/// be aligned to its element size (50) and hold its span (0x312).
///
/// # Safety
///
/// `plan` is NULL or a live handle; `encoded` NULL or readable for 224 bytes; `bound` NULL
/// or writable for `bound_capacity` bytes (it may be `encoded`); `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detessdequant_bind(
    plan: *const simak_detessdequant_plan,
    encoded: *const u8,
    input_address: u32,
    input_capacity: u64,
    output_address: u32,
    output_capacity: u64,
    bound: *mut u8,
    bound_capacity: usize,
    error: *mut simak_error,
) -> u32 {
    let input = DeviceRegion::new(input_address, input_capacity);
    let output = DeviceRegion::new(output_address, output_capacity);
    // SAFETY: this function's contract is `bind_with`'s.
    unsafe {
        bind_with(
            plan,
            encoded,
            bound,
            Some(bound_capacity),
            error,
            |device, relocatable| ev74::bind(device, relocatable, input, output),
        )
    }
}

/// Applies DMA-BUF relocations to a relocatable DetessDequant packet as
/// `simak_ev74_quant_relocate` does, with the address rules of
/// `simak_ev74_detessdequant_bind`.
///
/// # Safety
///
/// As `simak_ev74_quant_relocate`, with 224-byte packets (`bound_capacity` at least 224).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detessdequant_relocate(
    plan: *const simak_detessdequant_plan,
    encoded: *const u8,
    relocations: *const simak_ev74_relocation,
    count: usize,
    bound: *mut u8,
    bound_capacity: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `relocate`'s.
    unsafe {
        relocate(
            plan,
            encoded,
            relocations,
            count,
            bound,
            bound_capacity,
            error,
        )
    }
}

/// The DetessDequant v1 device decoder's checks on the caller's `length` bytes, as
/// `simak_ev74_quant_validate` (a packet of another entry fails on its magic word, 2).
///
/// # Safety
///
/// `bytes` is NULL or readable for `length` bytes; `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detessdequant_validate(
    bytes: *const u8,
    length: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `validate`'s.
    unsafe { validate::<DetessDequant>(bytes, length, error) }
}

/// Decodes a DetessDequant v1 descriptor into `fields` (every rule but the bound-address one),
/// as `simak_ev74_quant_decode`.
///
/// # Safety
///
/// As `simak_ev74_quant_decode`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_detessdequant_decode(
    bytes: *const u8,
    length: usize,
    fields: *mut simak_ev74_detess_fields,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `decode`'s.
    unsafe { decode::<DetessDequant, _>(bytes, length, fields, error, detess_fields) }
}

/// The fields of a Preproc v1 descriptor that passed the decoder's rules (SPEC §7, §13).
#[repr(C)]
#[allow(non_camel_case_types, reason = "the C name")]
#[derive(Debug, Clone, Copy, Default)]
pub struct simak_ev74_preproc_fields {
    /// Output elements (0 when empty).
    pub elements: u64,
    /// The frame's accessed span in bytes (0 when empty).
    pub input_span: u64,
    /// The output's span in bytes: accessed (strided) or the `MlaTiled` capacity (tiled).
    pub output_span: u64,
    /// Output extents `[H', W', C]` or `[N, H', W', C]`; slots from `rank` on are 0.
    pub extents: [u64; 6],
    /// Output byte strides (strided outputs; 0 for extent-0/1 axes, unused slots and tiled
    /// outputs).
    pub output_strides: [u64; 6],
    /// Frame height and width in pixels.
    pub height: u64,
    /// Frame width in pixels.
    pub width: u64,
    /// Plane byte offsets from the frame's start (slots past the format's planes 0).
    pub plane_offsets: [u64; 3],
    /// Plane row strides in bytes (slots past the format's planes 0).
    pub row_strides: [u64; 3],
    /// Bytes from one frame to the next (0 for a single frame).
    pub frame_stride: u64,
    /// Border top, bottom, left, right in pixels.
    pub border: [u64; 4],
    /// Tiled outputs: output bytes per outer index (0 for strided outputs).
    pub bytes_per_outer: u64,
    /// A `simak_preproc_format` code.
    pub format: u32,
    /// A `simak_preproc_to` code: the output kind.
    pub to: u32,
    /// The output's `simak_dtype` code.
    pub output_dtype: u32,
    /// Rank, 3 or 4.
    pub rank: u32,
    /// 1 when the output channels are B, G, R.
    pub bgr: u32,
    /// Tiled outputs: a `simak_channels` code (Compact or PadTo16); 0 for strided outputs.
    pub channels: u32,
    /// Input bus address (0: unbound).
    pub input_address: u32,
    /// Output bus address (0: unbound).
    pub output_address: u32,
    /// The raw pad value per output channel (slots past C 0).
    pub pad_value: [u32; 3],
    /// The divisor's binary32 bits.
    pub divisor_bits: u32,
    /// The mean's binary32 bits per output channel (slots past C 0).
    pub mean_bits: [u32; 3],
    /// The std's binary32 bits per output channel (slots past C 0).
    pub std_bits: [u32; 3],
    /// INT8 outputs: the multiplier's binary32 bits (else 0).
    pub multiplier_bits: u32,
    /// INT8 outputs: the zero point (else 0).
    pub zero_point: i32,
    /// INT8 outputs: a `simak_rounding` code (else 0).
    pub rounding: u32,
    /// Tiled outputs: logical axis of D, H, W, C, -1 absent (0 for strided outputs).
    pub axes: [i32; 4],
    /// Tiled outputs: tile extents of D, H, W, C (0 for strided outputs).
    pub tile: [u32; 4],
    /// Tiled outputs: tiles along D, H, W, C (0 for strided outputs).
    pub tile_counts: [u32; 4],
}

/// The C fields of a Preproc v1 representation: the wire's fields, codes as the C enums
/// spell them (the raw descriptor's listing has the wire codes).
fn preproc_fields(r: &<Preproc as NativeEntry>::Repr) -> simak_ev74_preproc_fields {
    use simak::ops::preproc::PlanOutput;
    let p = &r.prefix;
    let plan = &r.plan;
    let frame = plan.frame();
    let b = plan.border();
    let (divisor, mean, std) = plan.normalization_bits();
    let channels = plan.channels().min(3);
    let mut out = simak_ev74_preproc_fields {
        elements: p.elements,
        input_span: p.input_span,
        output_span: p.output_span,
        extents: p.extents,
        output_strides: p.input_strides,
        height: frame.height,
        width: frame.width,
        plane_offsets: frame.planes.map(|q| q.offset),
        row_strides: frame.planes.map(|q| q.row_stride),
        frame_stride: frame.frame_stride,
        border: [b.top, b.bottom, b.left, b.right],
        format: crate::preproc::format_code(frame.format),
        to: match plan.output() {
            PlanOutput::F32(_) => crate::preproc::simak_preproc_to::SIMAK_PREPROC_TO_F32,
            PlanOutput::I8(..) => crate::preproc::simak_preproc_to::SIMAK_PREPROC_TO_I8,
            PlanOutput::QuantTess(..) => {
                crate::preproc::simak_preproc_to::SIMAK_PREPROC_TO_QUANTTESS
            }
            PlanOutput::CastTess(_) => crate::preproc::simak_preproc_to::SIMAK_PREPROC_TO_CASTTESS,
        } as u32,
        output_dtype: dtype_code(p.dtype),
        rank: u32::from(p.rank),
        bgr: u32::from(plan.bgr()),
        input_address: p.input_address,
        output_address: p.output_address,
        divisor_bits: divisor,
        ..simak_ev74_preproc_fields::default()
    };
    for c in 0..channels {
        out.pad_value[c] = u32::from(plan.pad_value()[c]);
        out.mean_bits[c] = mean[c];
        out.std_bits[c] = std[c];
    }
    match plan.output() {
        PlanOutput::I8(_, q) | PlanOutput::QuantTess(_, q) => {
            let q = q.params();
            out.multiplier_bits = q.multiplier_bits;
            out.zero_point = q.zero_point;
            out.rounding = q.rounding.code();
        }
        PlanOutput::F32(_) | PlanOutput::CastTess(_) => {}
    }
    if let PlanOutput::QuantTess(t, _) | PlanOutput::CastTess(t) = plan.output() {
        out.channels = match t.layout().channels {
            simak::layout::Channels::PadTo16 => simak_channels::SIMAK_CHANNELS_PAD_TO_16,
            _ => simak_channels::SIMAK_CHANNELS_COMPACT,
        } as u32;
        out.bytes_per_outer = t.bytes_per_outer();
        out.axes = t.layout().axes.map(|a| a.map_or(-1, i32::from));
        out.tile = t.layout().tile;
        for (o, c) in out.tile_counts.iter_mut().zip(t.tile_counts()) {
            *o = u32::try_from(*c).unwrap_or(u32::MAX);
        }
    }
    out
}

/// Checks the Preproc `plan` for the EV74 (the frame's span and the output's span at most
/// 2^32 - 1 bytes: 0x301, 0x302) and writes its relocatable Preproc v1 descriptor (368
/// bytes, both address slots 0) into `packet` of `capacity` bytes (at least 368; exactly
/// 368 are written). A shorter buffer is `SIMAK_ERROR_CAPACITY` (0x609) and nothing is
/// written. The descriptor holds the plan's frame geometry, normalization, border and
/// output (the firmware's Preproc entry runs it).
///
/// # Safety
///
/// `plan` is NULL or a live handle; `packet` NULL or writable for `capacity` bytes; `error`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_preproc_encode_relocatable(
    plan: *const simak_preproc_plan,
    packet: *mut u8,
    capacity: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `encode_relocatable`'s.
    unsafe { encode_relocatable(plan, packet, Some(capacity), error) }
}

/// Binds a relocatable Preproc packet (368 bytes at `encoded`, this plan's own encoding:
/// else 0x310) to the frame's region and the output's region (bus address, capacity in
/// bytes), into `bound` of `bound_capacity` bytes (at least 368), as
/// `simak_ev74_quant_bind` does. The frame binds at any byte and must hold its span
/// (0x311); the output must be aligned to its element size, or to 16 bytes when tiled
/// (50), and hold its span (0x312).
///
/// # Safety
///
/// `plan` is NULL or a live handle; `encoded` NULL or readable for 368 bytes; `bound` NULL
/// or writable for `bound_capacity` bytes (it may be `encoded`); `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_preproc_bind(
    plan: *const simak_preproc_plan,
    encoded: *const u8,
    input_address: u32,
    input_capacity: u64,
    output_address: u32,
    output_capacity: u64,
    bound: *mut u8,
    bound_capacity: usize,
    error: *mut simak_error,
) -> u32 {
    let input = DeviceRegion::new(input_address, input_capacity);
    let output = DeviceRegion::new(output_address, output_capacity);
    // SAFETY: this function's contract is `bind_with`'s.
    unsafe {
        bind_with(
            plan,
            encoded,
            bound,
            Some(bound_capacity),
            error,
            |device, relocatable| ev74::bind(device, relocatable, input, output),
        )
    }
}

/// Applies DMA-BUF relocations to a relocatable Preproc packet as
/// `simak_ev74_quant_relocate` does, with the address rules of `simak_ev74_preproc_bind`.
///
/// # Safety
///
/// As `simak_ev74_quant_relocate`, with 368-byte packets (`bound_capacity` at least 368).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_preproc_relocate(
    plan: *const simak_preproc_plan,
    encoded: *const u8,
    relocations: *const simak_ev74_relocation,
    count: usize,
    bound: *mut u8,
    bound_capacity: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `relocate`'s.
    unsafe {
        relocate(
            plan,
            encoded,
            relocations,
            count,
            bound,
            bound_capacity,
            error,
        )
    }
}

/// The Preproc v1 device decoder's checks on the caller's `length` bytes, as
/// `simak_ev74_quant_validate` (a packet of another entry fails on its magic word, 2).
///
/// # Safety
///
/// `bytes` is NULL or readable for `length` bytes; `error` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_preproc_validate(
    bytes: *const u8,
    length: usize,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `validate`'s.
    unsafe { validate::<Preproc>(bytes, length, error) }
}

/// Decodes a Preproc v1 descriptor into `fields` (every rule but the bound-address one),
/// as `simak_ev74_quant_decode`.
///
/// # Safety
///
/// As `simak_ev74_quant_decode`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simak_ev74_preproc_decode(
    bytes: *const u8,
    length: usize,
    fields: *mut simak_ev74_preproc_fields,
    error: *mut simak_error,
) -> u32 {
    // SAFETY: this function's contract is `decode`'s.
    unsafe { decode::<Preproc, _>(bytes, length, fields, error, preproc_fields) }
}
