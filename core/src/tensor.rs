//! Tensor specs and their admission into normalized views.
//!
//! The public spec is const-generic over the rank, [`TensorSpec<R>`]; `R > 6` fails to
//! build (SPEC §2). Admission normalizes a spec into a [`View`]: six-capacity arrays (unused
//! axes zero), byte strides with extent-0/1 axes normalized to stride 0, a checked element
//! count and accessed span, and the conservative nonoverlap proof.
//!
//! ```compile_fail
//! use simak_core::{DType, TensorSpec};
//! // Rank 7 does not build.
//! let _ = TensorSpec::contiguous([1u64; 7], DType::F32);
//! ```
#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::dtype::DType;
use crate::error::{AdmissionError, Port};

/// Largest admitted rank (SPEC §2).
pub const MAX_RANK: usize = 6;

/// Storage layout of one port, with strides in **bytes**.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout<const R: usize> {
    /// Row-major packed: stride of axis i = element size × product of the later extents.
    Contiguous,
    /// Explicit byte strides, one per logical axis. Nonnegative and multiples of the element
    /// size; axes of extent > 1 need positive strides.
    Strided([u64; R]),
}

/// A tensor port as the caller describes it: logical extents, dtype and layout.
///
/// `R` is the rank, 0 to 6. A rank-0 spec is a scalar holding one element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorSpec<const R: usize> {
    extents: [u64; R],
    dtype: DType,
    layout: Layout<R>,
}

impl<const R: usize> TensorSpec<R> {
    const RANK_OK: () = assert!(R <= MAX_RANK, "tensor rank must be at most 6");

    /// A row-major contiguous spec with `extents` in elements.
    ///
    /// Builds only for `R ≤ 6` (SPEC §2).
    pub const fn contiguous(extents: [u64; R], dtype: DType) -> Self {
        let () = Self::RANK_OK;
        TensorSpec {
            extents,
            dtype,
            layout: Layout::Contiguous,
        }
    }

    /// A strided spec: `extents` in elements, `strides` in **bytes** per logical axis.
    ///
    /// Nothing is checked here; admission (`check_inference`) checks the strides.
    pub const fn strided(extents: [u64; R], strides: [u64; R], dtype: DType) -> Self {
        let () = Self::RANK_OK;
        TensorSpec {
            extents,
            dtype,
            layout: Layout::Strided(strides),
        }
    }

    /// Logical extents in elements.
    pub const fn extents(&self) -> &[u64; R] {
        &self.extents
    }

    /// Element type.
    pub const fn dtype(&self) -> DType {
        self.dtype
    }

    /// Storage layout.
    pub const fn layout(&self) -> &Layout<R> {
        &self.layout
    }

    /// The rank `R`.
    pub const fn rank(&self) -> usize {
        R
    }

    /// This spec with its rank known at run time ([`DynSpec`]).
    pub fn as_dyn(&self) -> DynSpec<'_> {
        DynSpec {
            extents: &self.extents,
            strides: match &self.layout {
                Layout::Contiguous => None,
                Layout::Strided(s) => Some(s),
            },
            dtype: self.dtype,
        }
    }

    /// Admits this spec on `port` into a normalized [`View`] (SPEC §2).
    ///
    /// # Errors
    ///
    /// [`AdmissionError::StrideNotMultiple`], [`AdmissionError::ZeroStride`],
    /// [`AdmissionError::SpanOverflow`] and [`AdmissionError::Overlap`], each naming `port`.
    pub fn admit(&self, port: Port) -> Result<View, AdmissionError> {
        self.as_dyn().admit(port)
    }
}

/// A tensor port whose rank is known only at run time (a file's header, a NumPy array, a C
/// struct): logical extents in elements, optional byte strides (one per axis; `None` for
/// row-major contiguous) and the dtype. Admission is [`View::new`]'s, as for the
/// const-generic [`TensorSpec`], which is the primary typed API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynSpec<'a> {
    /// Logical extents in elements; the rank is their number (0 to 6).
    pub extents: &'a [u64],
    /// Byte strides, one per axis; `None`: row-major contiguous.
    pub strides: Option<&'a [u64]>,
    /// Element type.
    pub dtype: DType,
}

impl<'a> DynSpec<'a> {
    /// A row-major contiguous spec of `extents` in elements.
    pub const fn contiguous(extents: &'a [u64], dtype: DType) -> DynSpec<'a> {
        DynSpec {
            extents,
            strides: None,
            dtype,
        }
    }

    /// A strided spec: `extents` in elements, `strides` in **bytes** per axis.
    pub const fn strided(extents: &'a [u64], strides: &'a [u64], dtype: DType) -> DynSpec<'a> {
        DynSpec {
            extents,
            strides: Some(strides),
            dtype,
        }
    }

    /// The rank: the number of extents.
    pub const fn rank(&self) -> usize {
        self.extents.len()
    }

    /// Admits this spec on `port` into a normalized [`View`] (SPEC §2).
    ///
    /// # Errors
    ///
    /// [`AdmissionError::Rank`] above rank 6; [`AdmissionError::StridesRank`] when the
    /// strides are not one per axis; then as [`TensorSpec::admit`].
    pub fn admit(&self, port: Port) -> Result<View, AdmissionError> {
        let rank = self.extents.len();
        if rank > MAX_RANK {
            return Err(AdmissionError::Rank {
                rank,
                min: 0,
                max: MAX_RANK,
            });
        }
        let mut extents = [0u64; MAX_RANK];
        let mut strides = [0u64; MAX_RANK];
        for (slot, &e) in extents.iter_mut().zip(self.extents) {
            *slot = e;
        }
        match self.strides {
            Some(given) if given.len() != rank => {
                return Err(AdmissionError::StridesRank {
                    port,
                    extents: rank,
                    strides: given.len(),
                });
            }
            Some(given) => {
                for (slot, &s) in strides.iter_mut().zip(given) {
                    *slot = s;
                }
            }
            None => {
                // Packed strides, with zero extents counted as 1 so that an empty tensor
                // still gets positive strides on its axes of extent > 1. A packed stride
                // never exceeds the span of a nonempty tensor (telescoping sum), so its
                // overflow is a span overflow.
                let mut stride = Some(self.dtype.size_u64());
                for axis in (0..rank).rev() {
                    let extent = *extents.get(axis).unwrap_or(&0);
                    let value = match stride {
                        _ if extent <= 1 => 0,
                        Some(s) => s,
                        None => return Err(AdmissionError::SpanOverflow { port }),
                    };
                    set(&mut strides, axis, value);
                    stride = stride.and_then(|s| s.checked_mul(extent.max(1)));
                }
            }
        }
        View::new(rank, extents, strides, self.dtype, port)
    }
}

/// An admitted port: rank, six-capacity extents and byte strides (unused axes zero), dtype,
/// element count and accessed span in bytes.
///
/// Invariants (established by admission, SPEC §2): strides are multiples of the element size;
/// axes of extent 0 or 1 have stride 0; axes of extent > 1 have positive strides and pass the
/// nonoverlap proof (also when the tensor is empty); `span = elem + Σ stride_i·(extent_i − 1)`
/// fits `u64` (0 when empty: an empty tensor needs no storage).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct View {
    rank: u8,
    extents: [u64; MAX_RANK],
    strides: [u64; MAX_RANK],
    dtype: DType,
    elements: u64,
    span: u64,
}

fn set(array: &mut [u64; MAX_RANK], axis: usize, value: u64) {
    if let Some(slot) = array.get_mut(axis) {
        *slot = value;
    }
}

impl View {
    /// Admits normalized arrays: `rank` ≤ 6, `extents` in elements and `strides` in bytes for
    /// axes `0..rank` (slots from `rank` on are ignored and zeroed).
    ///
    /// # Errors
    ///
    /// As [`TensorSpec::admit`]; a `rank` above 6 is [`AdmissionError::Rank`].
    pub fn new(
        rank: usize,
        extents: [u64; MAX_RANK],
        strides: [u64; MAX_RANK],
        dtype: DType,
        port: Port,
    ) -> Result<View, AdmissionError> {
        if rank > MAX_RANK {
            return Err(AdmissionError::Rank {
                rank,
                min: 0,
                max: MAX_RANK,
            });
        }
        let elem = dtype.size_u64();
        let mut ext = [0u64; MAX_RANK];
        let mut str = [0u64; MAX_RANK];
        let mut elements: u64 = 1;
        let mut overflow = false;
        for axis in 0..rank {
            let extent = *extents.get(axis).unwrap_or(&0);
            let stride = *strides.get(axis).unwrap_or(&0);
            // SPEC §2: any stride is accepted for an extent-1 axis and normalized to 0.
            if extent != 1 && stride.checked_rem(elem) != Some(0) {
                return Err(AdmissionError::StrideNotMultiple {
                    port,
                    axis,
                    stride,
                    elem_size: elem,
                });
            }
            if extent > 1 && stride == 0 {
                return Err(AdmissionError::ZeroStride { port, axis, extent });
            }
            set(&mut ext, axis, extent);
            set(&mut str, axis, if extent > 1 { stride } else { 0 });
            match elements.checked_mul(extent) {
                Some(n) => elements = n,
                None => overflow = true,
            }
        }
        let empty = ext.iter().take(rank).any(|&e| e == 0);
        if empty {
            // SPEC §2: an empty tensor needs no storage; its strides are still validated
            // (and stay on the wire for axes of extent > 1, SPEC §7).
            nonoverlap_proof(&ext, &str, elem, port)?;
            return Ok(View {
                rank: rank as u8,
                extents: ext,
                strides: str,
                dtype,
                elements: 0,
                span: 0,
            });
        }
        if overflow {
            return Err(AdmissionError::SpanOverflow { port });
        }
        let span = span_of(&ext, &str, elem).ok_or(AdmissionError::SpanOverflow { port })?;
        nonoverlap_proof(&ext, &str, elem, port)?;
        Ok(View {
            rank: rank as u8,
            extents: ext,
            strides: str,
            dtype,
            elements,
            span,
        })
    }

    /// Rank (0 to 6).
    pub const fn rank(&self) -> usize {
        self.rank as usize
    }

    /// Extents in elements, six slots, unused axes zero.
    pub const fn extents(&self) -> &[u64; MAX_RANK] {
        &self.extents
    }

    /// Byte strides, six slots, unused and extent-0/1 axes zero.
    pub const fn strides(&self) -> &[u64; MAX_RANK] {
        &self.strides
    }

    /// Element type.
    pub const fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements (product of the extents; 1 for a scalar; 0 when empty).
    pub const fn elements(&self) -> u64 {
        self.elements
    }

    /// Accessed span in bytes: `elem + Σ stride_i·(extent_i − 1)`, or 0 when empty.
    pub const fn span(&self) -> u64 {
        self.span
    }

    /// Whether any extent is zero (the call is a no-op).
    pub const fn is_empty(&self) -> bool {
        self.elements == 0
    }

    /// Whether every axis of extent > 1 has stride = element size × product of the later
    /// extents (the Quant wire "contiguous" flag, SPEC §7). Empty views are contiguous.
    pub fn is_contiguous(&self) -> bool {
        let mut expected = self.dtype.size_u64();
        for axis in (0..self.rank()).rev() {
            let extent = *self.extents.get(axis).unwrap_or(&0);
            let stride = *self.strides.get(axis).unwrap_or(&0);
            if extent > 1 && stride != expected {
                return false;
            }
            expected = expected.saturating_mul(extent);
        }
        true
    }

    /// Byte offset of the element at logical `index` (slots past the rank ignored).
    ///
    /// # Panics
    ///
    /// Never for an in-range index of an admitted view; out-of-range coordinates give an
    /// offset past the span (saturating, never wrapping).
    pub fn offset_of(&self, index: &[u64; MAX_RANK]) -> u64 {
        let mut offset: u64 = 0;
        for axis in 0..self.rank() {
            let i = *index.get(axis).unwrap_or(&0);
            let s = *self.strides.get(axis).unwrap_or(&0);
            offset = offset.saturating_add(i.saturating_mul(s));
        }
        offset
    }

    /// The byte offset of every element, in logical row-major order (the last axis
    /// fastest): `Σ index_i · stride_i` for each index, from the view's first element.
    ///
    /// This is the one strided element walk of the workspace (SPEC §2): no allocation, no
    /// division per element; the index advances with a carry, fastest axis first, adding
    /// the axis stride and, on wrap, subtracting `stride · extent`. An empty view yields
    /// nothing, a scalar (rank 0) yields `0` once. Every offset is below the view's span
    /// (admission proves it), so `data.get(o..o + elem)` of a buffer of `span` bytes is in
    /// bounds for each.
    ///
    /// ```
    /// use simak_core::{DType, Port, TensorSpec};
    ///
    /// // A 2 × 3 FP32 tensor stored column-major (Fortran order): strides 4 and 8 bytes.
    /// let view = TensorSpec::strided([2, 3], [4, 8], DType::F32).admit(Port::Input)?;
    /// let offsets: Vec<u64> = view.offsets().collect();
    /// assert_eq!(offsets, [0, 8, 16, 4, 12, 20]);
    /// # Ok::<(), simak_core::AdmissionError>(())
    /// ```
    pub fn offsets(&self) -> Offsets {
        Offsets {
            extents: self.extents,
            strides: self.strides,
            rank: self.rank(),
            index: [0; MAX_RANK],
            offset: 0,
            remaining: self.elements,
        }
    }
}

/// The iterator of [`View::offsets`]: byte offsets (`u64`) of a view's elements in logical
/// row-major order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offsets {
    extents: [u64; MAX_RANK],
    strides: [u64; MAX_RANK],
    rank: usize,
    index: [u64; MAX_RANK],
    offset: u64,
    remaining: u64,
}

impl Offsets {
    /// The logical index (six slots, those past the rank zero) of the element the next
    /// call to [`Iterator::next`] yields; unspecified once the iterator is exhausted.
    pub const fn index(&self) -> &[u64; MAX_RANK] {
        &self.index
    }

    /// Elements not yet yielded.
    pub const fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Moves the index to the next element with a carry, fastest axis first. Only called
    /// while an element remains, so the index stays in range; the offset arithmetic wraps
    /// because `offset + stride` may pass `u64` for a moment before the wrap subtracts
    /// `stride · extent` (the results are the exact offsets, all below the span).
    #[inline]
    fn advance(&mut self) {
        let mut axis = self.rank;
        while axis > 0 {
            axis = axis.wrapping_sub(1);
            let (Some(i), Some(&e), Some(&s)) = (
                self.index.get_mut(axis),
                self.extents.get(axis),
                self.strides.get(axis),
            ) else {
                return;
            };
            *i = i.wrapping_add(1);
            self.offset = self.offset.wrapping_add(s);
            if *i < e {
                return;
            }
            self.offset = self.offset.wrapping_sub(s.wrapping_mul(e));
            *i = 0;
        }
    }
}

impl Iterator for Offsets {
    type Item = u64;

    #[inline]
    fn next(&mut self) -> Option<u64> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining = self.remaining.wrapping_sub(1);
        let at = self.offset;
        if self.remaining != 0 {
            self.advance();
        }
        Some(at)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match usize::try_from(self.remaining) {
            Ok(n) => (n, Some(n)),
            Err(_) => (usize::MAX, None),
        }
    }
}

impl core::iter::FusedIterator for Offsets {}

/// `elem + Σ stride_i·(extent_i − 1)` with checked arithmetic; extents must be nonzero.
fn span_of(extents: &[u64; MAX_RANK], strides: &[u64; MAX_RANK], elem: u64) -> Option<u64> {
    let mut span = elem;
    for (e, s) in extents.iter().zip(strides.iter()) {
        if *e > 1 {
            span = span.checked_add(s.checked_mul(e.checked_sub(1)?)?)?;
        }
    }
    Some(span)
}

/// The conservative nonoverlap proof of SPEC §2: sort active axes (extent > 1) by stride;
/// each stride must be ≥ the span of all smaller-stride axes together.
fn nonoverlap_proof(
    extents: &[u64; MAX_RANK],
    strides: &[u64; MAX_RANK],
    elem: u64,
    port: Port,
) -> Result<(), AdmissionError> {
    let mut order: heapless::Vec<(u64, u64, usize), MAX_RANK> = heapless::Vec::new();
    for (axis, (e, s)) in extents.iter().zip(strides.iter()).enumerate() {
        if *e > 1 {
            // At most MAX_RANK axes exist, so the push cannot fail.
            let _ = order.push((*s, *e, axis));
        }
    }
    order.sort_unstable_by_key(|&(s, _, axis)| (s, axis));
    // Span of the axes checked so far; `None` once it overflows u64, which only matters
    // if a slower axis follows (it would need a stride beyond u64).
    let mut covered = Some(elem);
    for &(stride, extent, axis) in order.iter() {
        match covered {
            None => return Err(AdmissionError::SpanOverflow { port }),
            Some(required) if stride < required => {
                return Err(AdmissionError::Overlap {
                    port,
                    axis,
                    stride,
                    required,
                });
            }
            Some(c) => {
                covered = stride
                    .checked_mul(extent.saturating_sub(1))
                    .and_then(|x| x.checked_add(c));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod test {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    #[test]
    fn contiguous_strides_and_span() {
        let v = TensorSpec::contiguous([2, 3, 4], DType::F32)
            .admit(Port::Input)
            .unwrap();
        assert_eq!(&v.strides()[..3], &[48, 16, 4]);
        assert_eq!(v.elements(), 24);
        assert_eq!(v.span(), 96);
        assert!(v.is_contiguous());
    }

    #[test]
    fn scalar_has_one_element() {
        let v = TensorSpec::<0>::contiguous([], DType::BF16)
            .admit(Port::Input)
            .unwrap();
        assert_eq!(v.rank(), 0);
        assert_eq!(v.elements(), 1);
        assert_eq!(v.span(), 2);
    }

    #[test]
    fn singleton_strides_normalize_to_zero() {
        let v = TensorSpec::strided([1, 3], [12345, 2], DType::F16)
            .admit(Port::Output)
            .unwrap();
        assert_eq!(&v.strides()[..2], &[0, 2]);
    }

    #[test]
    fn empty_needs_no_storage_but_strides_are_checked() {
        let v = TensorSpec::strided([0, 3], [4, 4], DType::F32)
            .admit(Port::Input)
            .unwrap();
        assert_eq!((v.elements(), v.span()), (0, 0));
        // Zero-extent axes normalize to stride 0; the others keep theirs (SPEC §7).
        assert_eq!(v.strides(), &[0, 4, 0, 0, 0, 0]);
        assert_eq!(
            TensorSpec::strided([0, 3], [4, 3], DType::F32).admit(Port::Input),
            Err(AdmissionError::StrideNotMultiple {
                port: Port::Input,
                axis: 1,
                stride: 3,
                elem_size: 4
            })
        );
    }

    #[test]
    fn overlap_proof_rejects_interleaved_axes() {
        // [3, 4] with strides (8, 4): rows overlap (row span 16 > 8).
        assert_eq!(
            TensorSpec::strided([3, 4], [8, 4], DType::F32).admit(Port::Input),
            Err(AdmissionError::Overlap {
                port: Port::Input,
                axis: 0,
                stride: 8,
                required: 16
            })
        );
        // Transposed packed view is fine.
        assert!(
            TensorSpec::strided([4, 3], [4, 16], DType::F32)
                .admit(Port::Input)
                .is_ok()
        );
    }

    #[test]
    fn empty_contiguous_specs_are_accepted_whatever_their_extents() {
        for extents in [[0, 1 << 63], [1 << 63, 0]] {
            let v = TensorSpec::contiguous(extents, DType::F32)
                .admit(Port::Input)
                .unwrap();
            assert_eq!((v.elements(), v.span()), (0, 0));
        }
    }

    /// A small deterministic generator for the offsets oracle (xorshift64).
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    /// `View::offsets` against an oracle that decomposes each linear element number into
    /// its row-major index by division and sums `index · stride`, over ranks 0 to 6 with
    /// zero extents, gaps between axes and permuted axis orders.
    #[test]
    fn offsets_match_the_division_oracle() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut cases = 0;
        let mut empty = 0;
        for round in 0..3000 {
            let rank = round % 7;
            let dtype = [DType::F32, DType::BF16, DType::F16, DType::I8][round % 4];
            let elem = dtype.size() as u64;
            let mut extents = [0u64; MAX_RANK];
            for e in extents.iter_mut().take(rank) {
                // Mostly 1..=4, sometimes 0.
                *e = if rng.below(16) == 0 {
                    0
                } else {
                    1 + rng.below(4)
                };
            }
            // Physical order: a random permutation of the axes, the last one fastest.
            let mut order: Vec<usize> = (0..rank).collect();
            for i in (1..rank).rev() {
                order.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let mut strides = [0u64; MAX_RANK];
            let mut pitch = elem * (1 + rng.below(3));
            for &axis in order.iter().rev() {
                strides[axis] = pitch;
                // The next slower axis starts past this one, plus a gap of 0..2 elements.
                pitch = pitch * extents[axis].max(1) + elem * rng.below(3);
            }
            let view = View::new(rank, extents, strides, dtype, Port::Input).unwrap();
            let n: u64 = extents[..rank].iter().product();
            let mut expected = Vec::new();
            let mut indices = Vec::new();
            for k in 0..n {
                let mut rest = k;
                let mut index = [0u64; MAX_RANK];
                for axis in (0..rank).rev() {
                    index[axis] = rest % extents[axis];
                    rest /= extents[axis];
                }
                let o: u64 = (0..rank).map(|a| index[a] * strides[a]).sum();
                expected.push(o);
                indices.push(index);
            }
            let mut it = view.offsets();
            assert_eq!(it.size_hint(), (n as usize, Some(n as usize)));
            let mut got = Vec::new();
            let mut got_indices = Vec::new();
            loop {
                let index = *it.index();
                let Some(o) = it.next() else { break };
                assert!(o + elem <= view.span(), "{o} past the span {}", view.span());
                got.push(o);
                got_indices.push(index);
            }
            assert_eq!(got, expected, "extents {extents:?} strides {strides:?}");
            assert_eq!(got_indices, indices);
            assert_eq!(it.next(), None);
            assert_eq!(it.remaining(), 0);
            cases += 1;
            empty += usize::from(n == 0);
        }
        assert!(cases == 3000 && empty > 100, "{empty} empty cases");
    }

    #[test]
    fn offsets_of_scalars_and_huge_empty_views() {
        let scalar = TensorSpec::<0>::contiguous([], DType::F32)
            .admit(Port::Input)
            .unwrap();
        assert_eq!(scalar.offsets().collect::<Vec<_>>(), [0]);
        let empty = TensorSpec::contiguous([1 << 63, 0], DType::F32)
            .admit(Port::Input)
            .unwrap();
        assert_eq!(empty.offsets().next(), None);
        // Offsets near the top of u64: the carry's intermediate sum wraps, the results
        // do not.
        let top = (u64::MAX / 2 + 1) & !3;
        let v = TensorSpec::strided([2, 2], [top, 4], DType::F32)
            .admit(Port::Input)
            .unwrap();
        assert_eq!(v.offsets().collect::<Vec<_>>(), [0, 4, top, top + 4]);
    }

    #[test]
    fn span_overflow_is_an_error() {
        assert_eq!(
            TensorSpec::strided([3, 3], [(u64::MAX / 2) & !3, 4], DType::F32).admit(Port::Input),
            Err(AdmissionError::SpanOverflow { port: Port::Input })
        );
        assert_eq!(
            TensorSpec::contiguous([u64::MAX, 3], DType::F32).admit(Port::Input),
            Err(AdmissionError::SpanOverflow { port: Port::Input })
        );
    }
}
