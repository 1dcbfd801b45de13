//! Byte layouts of pgvector's varlena types, shared by every function that reads or builds them.
//!
//! vector:    int32 vl_len_, int16 dim, int16 unused, float4 x[dim]
//! halfvec:   int32 vl_len_, int16 dim, int16 unused, half x[dim]
//! sparsevec: int32 vl_len_, int32 dim, int32 nnz, int32 unused, int32 indices[nnz] (0-based),
//!            float4 values[nnz]

use crate::fmgr;
use half::f16;
use pgrx::pg_sys;
use std::marker::PhantomData;

pub const VECTOR_MAX_DIM: usize = 16000;
pub const HALFVEC_MAX_DIM: usize = 16000;
pub const SPARSEVEC_MAX_DIM: usize = 1_000_000_000;
pub const SPARSEVEC_MAX_NNZ: usize = 16000;

/// The header of a vector or halfvec: vl_len_, dim, unused.
const DENSE_HEADER: usize = 8;
const SPARSEVEC_HEADER: usize = 16;

/// The element types of the dense layouts: float4 for `vector`, half for `halfvec`.
///
/// # Safety
/// An implementor must be plain data for which every bit pattern, all zeros included, is a
/// valid value, with an alignment of at most 4 (the header keeps the elements 8-aligned
/// within a block that palloc aligns to MAXALIGN).
pub unsafe trait DenseElement: Copy {}

// SAFETY: float4 is plain 4-byte data; every bit pattern is some float.
unsafe impl DenseElement for f32 {}
// SAFETY: half is plain 2-byte data; every bit pattern is some half.
unsafe impl DenseElement for f16 {}

/// A detoasted `vector` (`T = f32`) or `halfvec` (`T = f16`) datum: the two share one layout
/// and differ only in the element type.
#[derive(Clone, Copy)]
pub struct DenseRef<'a, T> {
    pub x: &'a [T],
}

pub type VectorRef<'a> = DenseRef<'a, f32>;
pub type HalfvecRef<'a> = DenseRef<'a, f16>;

impl<'a, T: DenseElement> DenseRef<'a, T> {
    /// # Safety
    /// `ptr` must be a detoasted `vector` (for `f32`) or `halfvec` (for `f16`) with a 4-byte
    /// header that outlives `'a`.
    pub unsafe fn from_varlena(ptr: *const pg_sys::varlena) -> Self {
        // SAFETY: the caller guarantees the layout above: an int16 `dim` at offset 4 (aligned
        // after the 4-byte header) and `dim` elements after the 8-byte header.
        unsafe {
            let dim = ptr.cast::<u8>().add(4).cast::<i16>().read() as usize;
            let x = std::slice::from_raw_parts(ptr.cast::<u8>().add(DENSE_HEADER).cast(), dim);
            Self { x }
        }
    }

    pub fn dim(&self) -> usize {
        self.x.len()
    }
}

/// A `vector` or `halfvec` being built in a palloc'd varlena; `into_datum` hands it to
/// Postgres.
pub struct DenseMut<T> {
    ptr: *mut pg_sys::varlena,
    dim: usize,
    elements: PhantomData<T>,
}

pub type VectorMut = DenseMut<f32>;
pub type HalfvecMut = DenseMut<f16>;

impl<T: DenseElement> DenseMut<T> {
    /// A zeroed value of `dim` dimensions (the caller checks `dim` against the limits).
    pub fn new(dim: usize) -> Self {
        let ptr = fmgr::palloc_varlena(DENSE_HEADER + size_of::<T>() * dim);
        // SAFETY: the block is DENSE_HEADER + dim elements; dim fits int16 by the caller's check.
        unsafe { ptr.cast::<u8>().add(4).cast::<i16>().write(dim as i16) };
        Self {
            ptr,
            dim,
            elements: PhantomData,
        }
    }

    pub fn x(&mut self) -> &mut [T] {
        // SAFETY: the block holds `dim` elements after the header and is exclusively ours.
        unsafe {
            std::slice::from_raw_parts_mut(self.ptr.cast::<u8>().add(DENSE_HEADER).cast(), self.dim)
        }
    }

    pub fn into_datum(self) -> pg_sys::Datum {
        fmgr::pointer_datum(self.ptr)
    }

    pub fn as_ptr(&self) -> *mut pg_sys::varlena {
        self.ptr
    }
}

/// A detoasted `sparsevec` datum. `indices` are 0-based and strictly increasing.
#[derive(Clone, Copy)]
pub struct SparsevecRef<'a> {
    pub dim: i32,
    pub indices: &'a [i32],
    pub values: &'a [f32],
}

impl<'a> SparsevecRef<'a> {
    /// # Safety
    /// `ptr` must be a detoasted `sparsevec` with a 4-byte header that outlives `'a`.
    pub unsafe fn from_varlena(ptr: *const pg_sys::varlena) -> Self {
        // SAFETY: a sparsevec holds nnz int32 indices then nnz float4 values after its 16-byte
        // header (layout above).
        unsafe {
            let base = ptr.cast::<u8>();
            let dim = base.add(4).cast::<i32>().read();
            let nnz = base.add(8).cast::<i32>().read() as usize;
            let indices = std::slice::from_raw_parts(base.add(SPARSEVEC_HEADER).cast(), nnz);
            let values =
                std::slice::from_raw_parts(base.add(SPARSEVEC_HEADER + 4 * nnz).cast(), nnz);
            Self {
                dim,
                indices,
                values,
            }
        }
    }

    pub fn nnz(&self) -> usize {
        self.indices.len()
    }
}

/// A `sparsevec` being built in a palloc'd varlena.
pub struct SparsevecMut {
    ptr: *mut pg_sys::varlena,
    nnz: usize,
}

impl SparsevecMut {
    pub fn new(dim: i32, nnz: usize) -> Self {
        let ptr = fmgr::palloc_varlena(SPARSEVEC_HEADER + 8 * nnz);
        // SAFETY: the block is SPARSEVEC_HEADER + 8*nnz bytes; nnz fits int32 by the caller.
        unsafe {
            ptr.cast::<u8>().add(4).cast::<i32>().write(dim);
            ptr.cast::<u8>().add(8).cast::<i32>().write(nnz as i32);
        }
        Self { ptr, nnz }
    }

    /// The index and value arrays, to fill in.
    pub fn parts(&mut self) -> (&mut [i32], &mut [f32]) {
        // SAFETY: the two arrays are disjoint regions of our exclusive block (layout above).
        unsafe {
            let base = self.ptr.cast::<u8>().add(SPARSEVEC_HEADER);
            let indices = std::slice::from_raw_parts_mut(base.cast(), self.nnz);
            let values = std::slice::from_raw_parts_mut(base.add(4 * self.nnz).cast(), self.nnz);
            (indices, values)
        }
    }

    pub fn into_datum(self) -> pg_sys::Datum {
        fmgr::pointer_datum(self.ptr)
    }

    pub fn as_ptr(&self) -> *mut pg_sys::varlena {
        self.ptr
    }
}

impl crate::fmgr::FnCall {
    pub fn vector(&self, n: usize) -> VectorRef<'static> {
        // SAFETY: the declared argument type is vector; the detoasted copy lives for the call,
        // which is the longest any caller holds it.
        unsafe { VectorRef::from_varlena(self.varlena(n)) }
    }

    pub fn halfvec(&self, n: usize) -> HalfvecRef<'static> {
        // SAFETY: as for `vector`, with the declared type halfvec.
        unsafe { HalfvecRef::from_varlena(self.varlena(n)) }
    }

    pub fn sparsevec(&self, n: usize) -> SparsevecRef<'static> {
        // SAFETY: as for `vector`, with the declared type sparsevec.
        unsafe { SparsevecRef::from_varlena(self.varlena(n)) }
    }
}
