//! x86-64 lanes, one file per level of the ISA table (`super::isa`): SSE4.1, AVX2 + F16C,
//! AVX-512 F/BW/VL and AVX-512 VBMI; and MXCSR.

pub(crate) mod avx2;
pub(crate) mod avx512;
pub(crate) mod avx512vbmi;
pub(crate) mod sse41;

/// Upper clamp of the Quant product before conversion to INT32 (NaN-free by then).
pub(crate) const CLAMP_HI: f32 = 1024.0;

/// Reads MXCSR.
#[inline]
pub(crate) fn read_mxcsr() -> u32 {
    let mut value: u32 = 0;
    // SAFETY: `stmxcsr` stores the 32-bit MXCSR to the given address; it points to a live,
    // writable, aligned local `u32`. SSE is part of the x86-64 baseline.
    unsafe {
        core::arch::asm!(
            "stmxcsr [{ptr}]",
            ptr = in(reg) &mut value as *mut u32,
            options(nostack, preserves_flags)
        );
    }
    value
}

/// MXCSR default check: all six exception masks set (bits 7–12), RC = nearest (bits 13–14),
/// FTZ (bit 15) and DAZ (bit 6) clear. Status flags (bits 0–5) are ignored.
#[inline]
pub(crate) fn mxcsr_ok(control: u64) -> bool {
    control & 0xffc0 == 0x1f80
}
