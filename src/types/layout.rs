//! The types' datums in Postgres memory: the checked readers of `vector_formats::varlena`
//! applied to detoasted arguments, and builders of new values in palloc'd varlenas. The
//! layouts themselves (and their constants) are `vector_formats::varlena`'s.

use crate::fmgr;
use crate::types::checks::OrRaise;
use pgrx::pg_sys;
use std::marker::PhantomData;
use vector_formats::varlena::{
    dense_size, sparsevec_size, DENSE_DIM_OFFSET, DENSE_HEADER, SPARSEVEC_DIM_OFFSET,
    SPARSEVEC_HEADER, SPARSEVEC_NNZ_OFFSET,
};

pub use vector_formats::varlena::{
    BitRef, DenseElement, DenseRef, HalfvecRef, SparsevecRef, VectorRef, HALFVEC_MAX_DIM,
    SPARSEVEC_MAX_DIM, SPARSEVEC_MAX_NNZ, VECTOR_MAX_DIM,
};

/// Readers of detoasted datums that raise `data_corrupted` for one that is not a valid
/// value of its type.
pub trait FromVarlena<'a>: Sized {
    /// # Safety
    /// `ptr` must be a detoasted datum (4-byte header) of the reader's type that outlives
    /// `'a`.
    unsafe fn from_varlena(ptr: *const pg_sys::varlena) -> Self;
}

/// The whole datum at `ptr`, header included.
///
/// # Safety
/// `ptr` must be a detoasted varlena (4-byte header) that outlives `'a`.
unsafe fn varlena_bytes<'a>(ptr: *const pg_sys::varlena) -> &'a [u8] {
    // SAFETY: a 4-byte-header varlena is VARSIZE bytes long, header included (the contract).
    unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), pgrx::varsize_4b(ptr)) }
}

impl<'a, T: DenseElement> FromVarlena<'a> for DenseRef<'a, T> {
    unsafe fn from_varlena(ptr: *const pg_sys::varlena) -> Self {
        // SAFETY: the caller's contract is varlena_bytes'.
        DenseRef::read(unsafe { varlena_bytes(ptr) }).or_raise()
    }
}

impl<'a> FromVarlena<'a> for SparsevecRef<'a> {
    unsafe fn from_varlena(ptr: *const pg_sys::varlena) -> Self {
        // SAFETY: the caller's contract is varlena_bytes'.
        SparsevecRef::read(unsafe { varlena_bytes(ptr) }).or_raise()
    }
}

impl<'a> FromVarlena<'a> for BitRef<'a> {
    unsafe fn from_varlena(ptr: *const pg_sys::varlena) -> Self {
        // SAFETY: the caller's contract is varlena_bytes'.
        BitRef::read(unsafe { varlena_bytes(ptr) }).or_raise()
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
pub type HalfvecMut = DenseMut<half::f16>;

impl<T: DenseElement> DenseMut<T> {
    /// A zeroed value of `dim` dimensions (the caller checks `dim` against the limits).
    pub fn new(dim: usize) -> Self {
        let ptr = fmgr::palloc_varlena(dense_size::<T>(dim));
        // SAFETY: the block holds the header and dim elements; dim fits int16 by the caller's
        // check.
        unsafe {
            ptr.cast::<u8>()
                .add(DENSE_DIM_OFFSET)
                .cast::<i16>()
                .write(dim as i16)
        };
        Self {
            ptr,
            dim,
            elements: PhantomData,
        }
    }

    pub fn x(&mut self) -> &mut [T] {
        // SAFETY: the block holds `dim` zero-initialized elements after the header (any bit
        // pattern is a valid T, and palloc aligns them), and is exclusively ours.
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

/// A `sparsevec` being built in a palloc'd varlena.
pub struct SparsevecMut {
    ptr: *mut pg_sys::varlena,
    nnz: usize,
}

impl SparsevecMut {
    pub fn new(dim: i32, nnz: usize) -> Self {
        let ptr = fmgr::palloc_varlena(sparsevec_size(nnz));
        // SAFETY: the block holds the header and both arrays; nnz fits int32 by the caller.
        unsafe {
            let base = ptr.cast::<u8>();
            base.add(SPARSEVEC_DIM_OFFSET).cast::<i32>().write(dim);
            base.add(SPARSEVEC_NNZ_OFFSET)
                .cast::<i32>()
                .write(nnz as i32);
        }
        Self { ptr, nnz }
    }

    /// The index and value arrays, to fill in.
    pub fn parts(&mut self) -> (&mut [i32], &mut [f32]) {
        // SAFETY: the two arrays are disjoint regions of our exclusive block (the layout).
        unsafe {
            let base = self.ptr.cast::<u8>().add(SPARSEVEC_HEADER);
            let indices = std::slice::from_raw_parts_mut(base.cast(), self.nnz);
            let values = std::slice::from_raw_parts_mut(base.add(4 * self.nnz).cast(), self.nnz);
            (indices, values)
        }
    }

    /// A value holding `indices` and `values` (as many of each).
    pub fn from_parts(dim: i32, indices: &[i32], values: &[f32]) -> Self {
        let mut result = Self::new(dim, indices.len());
        let (to_indices, to_values) = result.parts();
        to_indices.copy_from_slice(indices);
        to_values.copy_from_slice(values);
        result
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

    pub fn bit(&self, n: usize) -> BitRef<'static> {
        // SAFETY: as for `vector`, with the declared type bit.
        unsafe { BitRef::from_varlena(self.varlena(n)) }
    }
}
