//! AArch64 Quant kernels: NEON with FP32 arithmetic.
//!
//! Per lane: `p = x · m` in binary32 (FPCR checked: round-to-nearest, no FZ/FZ16/FIZ, traps
//! disabled); `FCVT{Z,N,P,M}S` converts with the plan's rounding mode, saturating, NaN → 0;
//! saturating narrows to INT16, saturating zero-point add, saturating narrow to INT8. Every
//! step preserves `saturate(round(p) + zp)`.
//!
//! BF16 is widened in registers (`bits << 16`); FP16 is widened exactly with integer
//! operations and one multiplication by 2^112 (exact, gradual underflow assumed).

pub(crate) mod half;
pub(crate) mod neon;

use simak_core::DType;
use simak_core::arith::quant::RunFn;
use simak_core::ops::quant::Rounding;

/// Reads FPCR.
pub(crate) fn read_fpcr() -> u64 {
    let value: u64;
    // SAFETY: `mrs` of FPCR only reads the calling thread's FP control register into a
    // general register; it touches no memory.
    unsafe {
        core::arch::asm!("mrs {v}, fpcr", v = out(reg) value, options(nomem, nostack, preserves_flags));
    }
    value
}

/// FPCR default check: RMode (bits 22–23) nearest, FZ (24), FZ16 (19), FIZ (0) and AH (1)
/// clear, trap enables IOE..IXE (8–12) and IDE (15) clear.
pub(crate) fn fpcr_ok(control: u64) -> bool {
    let mask = (3 << 22) | (1 << 24) | (1 << 19) | (0x1f << 8) | (1 << 15) | 0b11;
    control & mask == 0
}

/// The NEON run function (NEON is part of the AArch64 baseline).
pub(crate) fn run_fn(dtype: DType, rounding: Rounding) -> Option<RunFn> {
    let input = match dtype {
        DType::F32 => 0,
        DType::BF16 => 1,
        DType::F16 => 2,
        DType::I8 => return None,
    };
    Some(neon::select(input, rounding))
}
