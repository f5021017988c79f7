//! Coordinate carry walker over two strided ports.
//!
//! Preparation coalesces the logical axes of both ports (dropping extent-1 axes and merging
//! a slower axis into the next faster one where both ports are packed across the pair) into
//! at most six loops; the innermost becomes a run. The walker then advances outer
//! coordinates with a carry, never dividing per element.

use simak_core::{MAX_RANK, View};

/// A coalesced traversal shared by both ports: `n_outer` outer axes (slowest first) and one
/// inner run of `inner_len` elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Traversal {
    n_outer: usize,
    extents: [u64; MAX_RANK],
    in_strides: [u64; MAX_RANK],
    out_strides: [u64; MAX_RANK],
    /// Elements in the innermost run.
    pub inner_len: usize,
    /// Input byte stride along the run.
    pub inner_in_stride: usize,
    /// Output byte stride along the run.
    pub inner_out_stride: usize,
}

impl Traversal {
    /// Coalesces two views of the same logical shape. Empty views give a zero-length run.
    pub fn new(input: &View, output: &View) -> Traversal {
        let mut extents = [0u64; MAX_RANK];
        let mut ins = [0u64; MAX_RANK];
        let mut outs = [0u64; MAX_RANK];
        let mut n = 0usize;
        for axis in 0..input.rank() {
            let e = input.extents()[axis];
            if e == 1 {
                continue;
            }
            let (si, so) = (input.strides()[axis], output.strides()[axis]);
            if n > 0 {
                // Merge with the previous (slower) axis when the previous stride equals this
                // stride times this extent on both ports: the previous becomes a multiple.
                let p = n - 1;
                if ins[p] == si * e && outs[p] == so * e {
                    extents[p] *= e;
                    ins[p] = si;
                    outs[p] = so;
                    continue;
                }
            }
            extents[n] = e;
            ins[n] = si;
            outs[n] = so;
            n += 1;
        }
        let empty = input.is_empty();
        let (inner_len, inner_in_stride, inner_out_stride, n_outer) = if empty {
            (0, 0, 0, 0)
        } else if n == 0 {
            (1, 0, 0, 0)
        } else {
            (
                extents[n - 1] as usize,
                ins[n - 1] as usize,
                outs[n - 1] as usize,
                n - 1,
            )
        };
        Traversal {
            n_outer,
            extents,
            in_strides: ins,
            out_strides: outs,
            inner_len,
            inner_in_stride,
            inner_out_stride,
        }
    }

    /// Calls `f(input_offset, output_offset)` in bytes for the start of every inner run, in
    /// row-major order of the outer axes, with a carry (no division).
    #[inline]
    pub fn for_each_run(&self, mut f: impl FnMut(usize, usize)) {
        if self.inner_len == 0 {
            return;
        }
        let n = self.n_outer;
        if n == 0 {
            f(0, 0);
            return;
        }
        let mut index = [0u64; MAX_RANK];
        let (mut off_in, mut off_out) = (0usize, 0usize);
        loop {
            f(off_in, off_out);
            // Carry from the fastest outer axis.
            let mut axis = n;
            loop {
                if axis == 0 {
                    return;
                }
                axis -= 1;
                index[axis] += 1;
                off_in += self.in_strides[axis] as usize;
                off_out += self.out_strides[axis] as usize;
                if index[axis] < self.extents[axis] {
                    break;
                }
                off_in -= (self.in_strides[axis] * self.extents[axis]) as usize;
                off_out -= (self.out_strides[axis] * self.extents[axis]) as usize;
                index[axis] = 0;
            }
        }
    }
}
