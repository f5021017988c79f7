//! Coordinate carry walker over two strided ports.
//!
//! Preparation orders the active axes (extent > 1) by decreasing input or output stride — one
//! port's physical order, whichever gives the longer innermost run; for an elementwise
//! operation any visiting order is valid — then merges a
//! slower axis into the next faster one wherever both ports are packed across the pair. The
//! innermost loop becomes a run handed to a numerical kernel; the outer loops advance with a
//! carry, never dividing per element.

use simak_core::{MAX_RANK, View};

/// A coalesced traversal shared by both ports: `n_outer` outer axes (slowest first) and one
/// inner run of `inner_len` elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Traversal {
    n_outer: usize,
    extents: [usize; MAX_RANK],
    in_strides: [usize; MAX_RANK],
    out_strides: [usize; MAX_RANK],
    /// Elements in the innermost run.
    pub inner_len: usize,
    /// Input byte stride along the run.
    pub inner_in_stride: usize,
    /// Output byte stride along the run.
    pub inner_out_stride: usize,
}

impl Traversal {
    /// Coalesces two admitted views of the same logical shape whose spans fit in `usize`
    /// (the caller's buffers prove it), visiting axes in the input's physical order or in
    /// the output's, whichever gives the longer innermost run (the input's on a tie). Empty
    /// views give a zero-length run.
    pub fn new(input: &View, output: &View) -> Traversal {
        let by_input = Traversal::ordered(input, output, false);
        let by_output = Traversal::ordered(input, output, true);
        if by_output.inner_len > by_input.inner_len {
            by_output
        } else {
            by_input
        }
    }

    /// Coalesces with the axes sorted by decreasing input stride, or output stride when
    /// `by_output`.
    fn ordered(input: &View, output: &View, by_output: bool) -> Traversal {
        if input.is_empty() {
            // Nothing is visited. Only the span of an empty view is bounded (it is 0): the
            // product of its other extents may pass `usize`, so merging axes could overflow.
            return Traversal {
                n_outer: 0,
                extents: [0; MAX_RANK],
                in_strides: [0; MAX_RANK],
                out_strides: [0; MAX_RANK],
                inner_len: 0,
                inner_in_stride: 0,
                inner_out_stride: 0,
            };
        }
        let mut axes: [(usize, usize, usize); MAX_RANK] = [(0, 0, 0); MAX_RANK];
        let mut n_active = 0;
        for axis in 0..input.rank() {
            let e = input.extents()[axis] as usize;
            if e > 1 {
                axes[n_active] = (
                    e,
                    input.strides()[axis] as usize,
                    output.strides()[axis] as usize,
                );
                n_active += 1;
            }
        }
        // Slowest axis first (strides of active axes are distinct by the nonoverlap proof,
        // so the order is total).
        if by_output {
            axes[..n_active].sort_unstable_by_key(|a| core::cmp::Reverse(a.2));
        } else {
            axes[..n_active].sort_unstable_by_key(|a| core::cmp::Reverse(a.1));
        }
        let mut extents = [0usize; MAX_RANK];
        let mut ins = [0usize; MAX_RANK];
        let mut outs = [0usize; MAX_RANK];
        let mut n = 0usize;
        for &(e, si, so) in &axes[..n_active] {
            if n > 0 {
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
        let mut t = Traversal {
            n_outer: 0,
            extents,
            in_strides: ins,
            out_strides: outs,
            inner_len: 0,
            inner_in_stride: 0,
            inner_out_stride: 0,
        };
        if n == 0 {
            t.inner_len = 1;
            return t;
        }
        t.n_outer = n - 1;
        t.inner_len = extents[n - 1];
        t.inner_in_stride = ins[n - 1];
        t.inner_out_stride = outs[n - 1];
        t
    }

    /// Splits the traversal into at most `parts` pieces along the axis with the largest
    /// output stride. Returns, for each piece, its traversal and its input and output byte
    /// offsets. The pieces' output ranges `[offset, offset + extent · stride)` are disjoint
    /// because that stride covers every faster axis (nonoverlap proof).
    pub fn split(&self, parts: usize) -> impl Iterator<Item = (Traversal, usize, usize)> + '_ {
        let axes = self.n_outer + 1;
        // Axis index `n_outer` stands for the inner run.
        let axis = (0..axes).max_by_key(|&a| self.out_stride(a)).unwrap_or(0);
        let extent = if self.inner_len == 0 {
            0
        } else {
            self.extent(axis)
        };
        let parts = parts.clamp(1, extent.max(1));
        let base = extent / parts;
        let extra = extent % parts;
        (0..parts).filter_map(move |k| {
            let start = k * base + k.min(extra);
            let len = base + usize::from(k < extra);
            if len == 0 {
                return None;
            }
            let mut piece = *self;
            if axis == self.n_outer {
                piece.inner_len = len;
            } else {
                piece.extents[axis] = len;
            }
            Some((
                piece,
                start * self.in_stride(axis),
                start * self.out_stride(axis),
            ))
        })
    }

    fn extent(&self, axis: usize) -> usize {
        if axis == self.n_outer {
            self.inner_len
        } else {
            self.extents[axis]
        }
    }

    fn in_stride(&self, axis: usize) -> usize {
        if axis == self.n_outer {
            self.inner_in_stride
        } else {
            self.in_strides[axis]
        }
    }

    fn out_stride(&self, axis: usize) -> usize {
        if axis == self.n_outer {
            self.inner_out_stride
        } else {
            self.out_strides[axis]
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
        let mut index = [0usize; MAX_RANK];
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
                off_in += self.in_strides[axis];
                off_out += self.out_strides[axis];
                if index[axis] < self.extents[axis] {
                    break;
                }
                off_in -= self.in_strides[axis] * self.extents[axis];
                off_out -= self.out_strides[axis] * self.extents[axis];
                index[axis] = 0;
            }
        }
    }
}

/// What a strided input and a strided output need (SPEC §6): each its span; the input
/// aligned to its element size, the output unaligned.
pub(crate) fn strided_needs(input: &View, output: &View) -> (super::PortNeed, super::PortNeed) {
    (
        super::PortNeed {
            span: input.span(),
            align: input.dtype().size(),
        },
        super::PortNeed {
            span: output.span(),
            align: 1,
        },
    )
}

/// Cuts `output` into disjoint ranges starting at the ascending byte offsets `starts`:
/// each runs to the next start, the last to the end of `output` (bytes before the first
/// start belong to none).
pub(crate) fn carve<'a>(output: &'a mut [u8], starts: &[usize]) -> Vec<&'a mut [u8]> {
    let mut out = Vec::with_capacity(starts.len());
    let mut rest = output;
    for &start in starts.iter().rev() {
        let (head, tail) = core::mem::take(&mut rest).split_at_mut(start);
        out.push(tail);
        rest = head;
    }
    out.reverse();
    out
}

/// One part of a split strided call (Quant, Dequant): its traversal and its share of the
/// call's buffers, from its first input element and its first output byte.
#[derive(Debug)]
pub struct StridedPart<'a> {
    pub(crate) traversal: Traversal,
    pub(crate) input: &'a [u8],
    pub(crate) output: &'a mut [u8],
}

/// Splits a strided call over `t` into the parts of [`Traversal::split`], in output order;
/// their output byte ranges are disjoint.
pub(crate) fn strided_parts<'a>(
    t: &Traversal,
    parts: usize,
    input: &'a [u8],
    output: &'a mut [u8],
) -> Vec<StridedPart<'a>> {
    let splits: Vec<(Traversal, usize, usize)> = t.split(parts).collect();
    let starts: Vec<usize> = splits.iter().map(|s| s.2).collect();
    splits
        .into_iter()
        .zip(carve(output, &starts))
        .map(|((traversal, at, _), output)| StridedPart {
            traversal,
            input: &input[at..],
            output,
        })
        .collect()
}
