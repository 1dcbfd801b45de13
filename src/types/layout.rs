//! Byte layouts of pgvector's varlena types, shared by every function that reads or builds them.
//!
//! vector:    int32 vl_len_, int16 dim, int16 unused, float4 x[dim]
//! halfvec:   int32 vl_len_, int16 dim, int16 unused, half x[dim]
//! sparsevec: int32 vl_len_, int32 dim, int32 nnz, int32 unused, int32 indices[nnz] (0-based),
//!            float4 values[nnz]

use crate::fmgr;
use half::f16;
use pgrx::pg_sys;

pub const VECTOR_MAX_DIM: usize = 16000;
pub const HALFVEC_MAX_DIM: usize = 16000;
pub const SPARSEVEC_MAX_DIM: usize = 1_000_000_000;
pub const SPARSEVEC_MAX_NNZ: usize = 16000;

const VECTOR_HEADER: usize = 8;
const SPARSEVEC_HEADER: usize = 16;

/// Reads the int16 `dim` at offset 4 of a detoasted vector or halfvec.
///
/// # Safety
/// `ptr` must point to a detoasted varlena of at least 8 bytes.
unsafe fn dim16(ptr: *const pg_sys::varlena) -> usize {
    // SAFETY: the caller guarantees 8 readable bytes; the 4-byte header keeps offset 4 aligned.
    unsafe { ptr.cast::<u8>().add(4).cast::<i16>().read() as usize }
}

/// A detoasted `vector` datum.
#[derive(Clone, Copy)]
pub struct VectorRef<'a> {
    pub x: &'a [f32],
}

impl<'a> VectorRef<'a> {
    /// # Safety
    /// `ptr` must be a detoasted `vector` with a 4-byte header that outlives `'a`.
    pub unsafe fn from_varlena(ptr: *const pg_sys::varlena) -> Self {
        // SAFETY: a vector holds `dim` float4s after its 8-byte header (layout above).
        unsafe {
            let dim = dim16(ptr);
            let x = std::slice::from_raw_parts(ptr.cast::<u8>().add(VECTOR_HEADER).cast(), dim);
            Self { x }
        }
    }

    pub fn dim(&self) -> usize {
        self.x.len()
    }
}

/// A `vector` being built in a palloc'd varlena; `into_datum` hands it to Postgres.
pub struct VectorMut {
    ptr: *mut pg_sys::varlena,
    dim: usize,
}

impl VectorMut {
    /// A zeroed vector of `dim` dimensions (the caller checks `dim` against the limits).
    pub fn new(dim: usize) -> Self {
        let ptr = fmgr::palloc_varlena(VECTOR_HEADER + 4 * dim);
        // SAFETY: the block is VECTOR_HEADER + 4*dim bytes; dim fits int16 by the caller's check.
        unsafe { ptr.cast::<u8>().add(4).cast::<i16>().write(dim as i16) };
        Self { ptr, dim }
    }

    pub fn x(&mut self) -> &mut [f32] {
        // SAFETY: the block holds `dim` float4s after the header and is exclusively ours.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr.cast::<u8>().add(VECTOR_HEADER).cast(),
                self.dim,
            )
        }
    }

    pub fn into_datum(self) -> pg_sys::Datum {
        fmgr::pointer_datum(self.ptr)
    }

    pub fn as_ptr(&self) -> *mut pg_sys::varlena {
        self.ptr
    }
}

/// A detoasted `halfvec` datum.
#[derive(Clone, Copy)]
pub struct HalfvecRef<'a> {
    pub x: &'a [f16],
}

impl<'a> HalfvecRef<'a> {
    /// # Safety
    /// `ptr` must be a detoasted `halfvec` with a 4-byte header that outlives `'a`.
    pub unsafe fn from_varlena(ptr: *const pg_sys::varlena) -> Self {
        // SAFETY: a halfvec holds `dim` halves after its 8-byte header (layout above).
        unsafe {
            let dim = dim16(ptr);
            let x = std::slice::from_raw_parts(ptr.cast::<u8>().add(VECTOR_HEADER).cast(), dim);
            Self { x }
        }
    }

    pub fn dim(&self) -> usize {
        self.x.len()
    }
}

/// A `halfvec` being built in a palloc'd varlena.
pub struct HalfvecMut {
    ptr: *mut pg_sys::varlena,
    dim: usize,
}

impl HalfvecMut {
    pub fn new(dim: usize) -> Self {
        let ptr = fmgr::palloc_varlena(VECTOR_HEADER + 2 * dim);
        // SAFETY: the block is VECTOR_HEADER + 2*dim bytes; dim fits int16 by the caller's check.
        unsafe { ptr.cast::<u8>().add(4).cast::<i16>().write(dim as i16) };
        Self { ptr, dim }
    }

    pub fn x(&mut self) -> &mut [f16] {
        // SAFETY: the block holds `dim` halves after the header and is exclusively ours.
        unsafe {
            std::slice::from_raw_parts_mut(
                self.ptr.cast::<u8>().add(VECTOR_HEADER).cast(),
                self.dim,
            )
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
