//! AArch64 lanes (NEON, part of the baseline) and the half-precision Quant routes
//! (FEAT_FP16); and FPCR.
//!
//! The NEON Quant loop converts with `FCVT{Z,N,P,M}S` (saturating, NaN → 0) after the
//! binary32 product (FPCR checked: round-to-nearest, no FZ/FIZ/AH, traps disabled; FZ16
//! only for the half routes, which use FP16 arithmetic). BF16
//! is widened in registers (`bits << 16`); FP16 is widened exactly with integer operations
//! and one multiplication by 2^112 (exact, gradual underflow assumed).

pub(crate) mod half;
pub(crate) mod neon;

/// Reads FPCR.
#[inline]
pub(crate) fn read_fpcr() -> u64 {
    let value: u64;
    // SAFETY: `mrs` of FPCR only reads the calling thread's FP control register into a
    // general register; it touches no memory.
    unsafe {
        core::arch::asm!("mrs {v}, fpcr", v = out(reg) value, options(nomem, nostack, preserves_flags));
    }
    value
}

/// FPCR.FZ16 (bit 19): flush-to-zero of half-precision arithmetic.
pub(crate) const FPCR_FZ16: u64 = 1 << 19;

/// The FPCR bits of the FP rule (all zero by default): RMode (bits 22–23), FZ (24), FZ16
/// (19), FIZ (0), AH (1), trap enables IOE..IXE (8–12) and IDE (15).
pub(crate) const FPCR_RULE: u64 =
    (3 << 22) | (1 << 24) | FPCR_FZ16 | (0x1f << 8) | (1 << 15) | 0b11;
