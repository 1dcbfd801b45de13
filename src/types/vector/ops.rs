//! Distances, norms, elementwise arithmetic, slicing and ordering of `vector`.
//!
//! The accumulating computations (distances and norms) come from `vector_distance`, which
//! reproduces pgvector's compiled summation order bit for bit; elementwise operations are
//! single IEEE operations and need no such care.

use super::{check_same_dims, float_overflow, float_underflow, TYPE_NAME};
use crate::fmgr::{self, FnCall};
use crate::types::dense_slices;
use crate::types::layout::{VectorMut, VectorRef, VECTOR_MAX_DIM};
use pgrx::pg_sys;
use std::cmp::Ordering;
use vector_distance::f32 as distance;
use vector_formats::varlena::{bit_size, BIT_HEADER, BIT_LEN_OFFSET};

/// The two vector arguments of a binary function, checked to have the same length.
fn same_length_pair(call: &FnCall) -> (VectorRef<'static>, VectorRef<'static>) {
    let (a, b) = (call.vector(0), call.vector(1));
    check_same_dims(a.dim(), b.dim());
    (a, b)
}

crate::sql_function! {
    /// `l2_distance(vector, vector)` and `<->`.
    fn l2_distance(call) {
        let (a, b) = same_length_pair(&call);
        fmgr::float8_datum(distance::l2_distance(a.x, b.x))
    }
}

crate::sql_function! {
    /// `vector_l2_squared_distance(vector, vector)`: L2 distance without the square root.
    fn vector_l2_squared_distance(call) {
        let (a, b) = same_length_pair(&call);
        fmgr::float8_datum(distance::l2_squared_distance(a.x, b.x))
    }
}

crate::sql_function! {
    /// `inner_product(vector, vector)`.
    fn inner_product(call) {
        let (a, b) = same_length_pair(&call);
        fmgr::float8_datum(distance::inner_product(a.x, b.x))
    }
}

crate::sql_function! {
    /// `vector_negative_inner_product(vector, vector)` and `<#>`.
    fn vector_negative_inner_product(call) {
        let (a, b) = same_length_pair(&call);
        fmgr::float8_datum(distance::negative_inner_product(a.x, b.x))
    }
}

crate::sql_function! {
    /// `cosine_distance(vector, vector)` and `<=>`.
    fn cosine_distance(call) {
        let (a, b) = same_length_pair(&call);
        fmgr::float8_datum(distance::cosine_distance(a.x, b.x))
    }
}

crate::sql_function! {
    /// `vector_spherical_distance(vector, vector)`: angular distance of unit vectors.
    fn vector_spherical_distance(call) {
        let (a, b) = same_length_pair(&call);
        fmgr::float8_datum(distance::spherical_distance(a.x, b.x))
    }
}

crate::sql_function! {
    /// `l1_distance(vector, vector)` and `<+>`.
    fn l1_distance(call) {
        let (a, b) = same_length_pair(&call);
        fmgr::float8_datum(distance::l1_distance(a.x, b.x))
    }
}

crate::sql_function! {
    /// `vector_dims(vector)`.
    fn vector_dims(call) {
        fmgr::int32_datum(call.vector(0).dim() as i32)
    }
}

crate::sql_function! {
    /// `vector_norm(vector)`: the L2 norm, accumulated in double precision.
    fn vector_norm(call) {
        fmgr::float8_datum(distance::norm(call.vector(0).x))
    }
}

crate::sql_function! {
    /// `l2_normalize(vector)`: divides by the L2 norm; a zero vector stays zero.
    fn l2_normalize(call) {
        let a = call.vector(0);
        let mut result = VectorMut::new(a.dim());
        distance::l2_normalize_into(a.x, result.x());
        check_overflow(&mut result);
        result.into_datum()
    }
}

/// Applies `op` to each pair of elements of the two (equally long) arguments.
fn elementwise(a: VectorRef, b: VectorRef, op: impl Fn(f32, f32) -> f32) -> VectorMut {
    let mut result = VectorMut::new(a.dim());
    for ((r, &x), &y) in result.x().iter_mut().zip(a.x).zip(b.x) {
        *r = op(x, y);
    }
    result
}

/// Raises an overflow error if any element became infinite.
fn check_overflow(result: &mut VectorMut) {
    if result.x().iter().any(|r| r.is_infinite()) {
        float_overflow();
    }
}

crate::sql_function! {
    /// `vector_add(vector, vector)` and `+`.
    fn vector_add(call) {
        let (a, b) = same_length_pair(&call);
        let mut result = elementwise(a, b, |x, y| x + y);
        check_overflow(&mut result);
        result.into_datum()
    }
}

crate::sql_function! {
    /// `vector_sub(vector, vector)` and `-`.
    fn vector_sub(call) {
        let (a, b) = same_length_pair(&call);
        let mut result = elementwise(a, b, |x, y| x - y);
        check_overflow(&mut result);
        result.into_datum()
    }
}

crate::sql_function! {
    /// `vector_mul(vector, vector)` and `*`: elementwise product. The first bad element
    /// decides the error: overflow to infinity, or underflow to zero from nonzero factors.
    fn vector_mul(call) {
        let (a, b) = same_length_pair(&call);
        let mut result = elementwise(a, b, |x, y| x * y);
        for ((&r, &x), &y) in result.x().iter().zip(a.x).zip(b.x) {
            if r.is_infinite() {
                float_overflow();
            }
            if r == 0.0 && !(x == 0.0 || y == 0.0) {
                float_underflow();
            }
        }
        result.into_datum()
    }
}

crate::sql_function! {
    /// `vector_concat(vector, vector)` and `||`.
    fn vector_concat(call) {
        let (a, b) = (call.vector(0), call.vector(1));
        dense_slices::concat(a, b, TYPE_NAME, VECTOR_MAX_DIM).into_datum()
    }
}

/// Allocates a `bit(len)` value (int32 varlena header, int32 bit count, bytes MSB first).
fn new_bit_string(len: usize) -> (*mut pg_sys::varlena, &'static mut [u8]) {
    let total = bit_size(len);
    let ptr = fmgr::palloc_varlena(total);
    // SAFETY: the zeroed block holds the header and the data bytes; it lives in the current
    // memory context, beyond this call's use of the slice.
    unsafe {
        let base = ptr.cast::<u8>();
        base.add(BIT_LEN_OFFSET).cast::<i32>().write(len as i32);
        (
            ptr,
            std::slice::from_raw_parts_mut(base.add(BIT_HEADER), total - BIT_HEADER),
        )
    }
}

crate::sql_function! {
    /// `binary_quantize(vector)`: one bit per element, set where the element is positive.
    fn binary_quantize(call) {
        let a = call.vector(0);
        let (bits, bytes) = new_bit_string(a.dim());
        for (byte, chunk) in bytes.iter_mut().zip(a.x.chunks(8)) {
            *byte = chunk
                .iter()
                .enumerate()
                .fold(0u8, |acc, (j, &x)| acc | (u8::from(x > 0.0) << (7 - j)));
        }
        fmgr::pointer_datum(bits)
    }
}

crate::sql_function! {
    /// `subvector(vector, start, count)`: `count` elements from 1-based `start`, clipped to
    /// the vector like `substring`.
    fn subvector(call) {
        let (v, start, count) = (call.vector(0), call.i32(1), call.i32(2));
        dense_slices::subvector(v, start, count, TYPE_NAME, VECTOR_MAX_DIM).into_datum()
    }
}

/// Orders vectors element by element, then by length (like arrays).
fn compare_vectors(a: &[f32], b: &[f32]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        if x < y {
            return Ordering::Less;
        }
        if x > y {
            return Ordering::Greater;
        }
    }
    a.len().cmp(&b.len())
}

fn compare_args(call: &FnCall) -> Ordering {
    compare_vectors(call.vector(0).x, call.vector(1).x)
}

crate::sql_function! {
    /// `vector_lt(vector, vector)` and `<`.
    fn vector_lt(call) {
        fmgr::bool_datum(compare_args(&call).is_lt())
    }
}

crate::sql_function! {
    /// `vector_le(vector, vector)` and `<=`.
    fn vector_le(call) {
        fmgr::bool_datum(compare_args(&call).is_le())
    }
}

crate::sql_function! {
    /// `vector_eq(vector, vector)` and `=`.
    fn vector_eq(call) {
        fmgr::bool_datum(compare_args(&call).is_eq())
    }
}

crate::sql_function! {
    /// `vector_ne(vector, vector)` and `<>`.
    fn vector_ne(call) {
        fmgr::bool_datum(compare_args(&call).is_ne())
    }
}

crate::sql_function! {
    /// `vector_ge(vector, vector)` and `>=`.
    fn vector_ge(call) {
        fmgr::bool_datum(compare_args(&call).is_ge())
    }
}

crate::sql_function! {
    /// `vector_gt(vector, vector)` and `>`.
    fn vector_gt(call) {
        fmgr::bool_datum(compare_args(&call).is_gt())
    }
}

crate::sql_function! {
    /// `vector_cmp(vector, vector)`: the btree support function, -1, 0 or 1.
    fn vector_cmp(call) {
        fmgr::int32_datum(compare_args(&call) as i32)
    }
}
