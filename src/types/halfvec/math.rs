//! Elementwise arithmetic, norms, quantization and slicing of `halfvec`.

use half::f16;

use super::{check_same_dims, float_overflow, float_underflow, to_half, TYPE_NAME};
use crate::fmgr;
use crate::types::dense_slices;
use crate::types::layout::{HalfvecMut, HalfvecRef, HALFVEC_MAX_DIM};

crate::sql_function! {
    /// `vector_dims(halfvec)`.
    fn halfvec_vector_dims(call) {
        fmgr::int32_datum(call.halfvec(0).dim() as i32)
    }
}

crate::sql_function! {
    /// `l2_norm(halfvec)`.
    fn halfvec_l2_norm(call) {
        fmgr::float8_datum(vector_distance::f16::norm(call.halfvec(0).x))
    }
}

crate::sql_function! {
    /// `l2_normalize(halfvec)`: each element over the norm (a zero vector stays zero).
    fn halfvec_l2_normalize(call) {
        let v = call.halfvec(0);
        let mut result = HalfvecMut::new(v.dim());
        vector_distance::f16::l2_normalize_into(v.x, result.x());
        // Kept from pgvector although |x| <= norm makes it unreachable.
        check_no_overflow(&mut result);
        result.into_datum()
    }
}

/// Applies `op` in single precision to each pair of elements and rounds the results to half.
fn elementwise(a: HalfvecRef, b: HalfvecRef, op: impl Fn(f32, f32) -> f32) -> HalfvecMut {
    check_same_dims(a, b);
    let mut result = HalfvecMut::new(a.dim());
    for ((r, x), y) in result.x().iter_mut().zip(a.x).zip(b.x) {
        *r = to_half(op(x.to_f32(), y.to_f32()));
    }
    result
}

/// Raises the overflow error if any element of `result` is infinite.
fn check_no_overflow(result: &mut HalfvecMut) {
    if result.x().iter().any(|r| r.is_infinite()) {
        float_overflow();
    }
}

crate::sql_function! {
    fn halfvec_add(call) {
        let mut result = elementwise(call.halfvec(0), call.halfvec(1), |x, y| x + y);
        check_no_overflow(&mut result);
        result.into_datum()
    }
}

crate::sql_function! {
    fn halfvec_sub(call) {
        let mut result = elementwise(call.halfvec(0), call.halfvec(1), |x, y| x - y);
        check_no_overflow(&mut result);
        result.into_datum()
    }
}

crate::sql_function! {
    fn halfvec_mul(call) {
        let (a, b) = (call.halfvec(0), call.halfvec(1));
        let mut result = elementwise(a, b, |x, y| x * y);
        // Per element, in order: overflow first, then a zero product of two non-zero halves.
        for ((r, x), y) in result.x().iter().zip(a.x).zip(b.x) {
            if r.is_infinite() {
                float_overflow();
            }
            if is_zero(*r) && !(is_zero(*x) || is_zero(*y)) {
                float_underflow();
            }
        }
        result.into_datum()
    }
}

fn is_zero(h: f16) -> bool {
    h.to_bits() & 0x7fff == 0
}

crate::sql_function! {
    fn halfvec_concat(call) {
        let (a, b) = (call.halfvec(0), call.halfvec(1));
        dense_slices::concat(a, b, TYPE_NAME, HALFVEC_MAX_DIM).into_datum()
    }
}

crate::sql_function! {
    /// `binary_quantize(halfvec) -> bit`: one bit per element, set when the element is > 0,
    /// first element in the most significant bit.
    fn halfvec_binary_quantize(call) {
        let v = call.halfvec(0);
        let nbytes = v.dim().div_ceil(8);
        // A varbit: 4-byte varlena header, int32 bit length, then the bits.
        let bits = fmgr::palloc_varlena(8 + nbytes);
        // SAFETY: the block is 8 + nbytes bytes, zeroed by palloc_varlena; the bit length sits
        // at offset 4 and the bit bytes follow.
        let bytes = unsafe {
            bits.cast::<u8>().add(4).cast::<i32>().write(v.dim() as i32);
            std::slice::from_raw_parts_mut(bits.cast::<u8>().add(8), nbytes)
        };
        for (i, h) in v.x.iter().enumerate() {
            if h.to_f32() > 0.0 {
                bytes[i / 8] |= 0x80 >> (i % 8);
            }
        }
        fmgr::pointer_datum(bits)
    }
}

crate::sql_function! {
    /// `subvector(halfvec, start, count)`: `count` elements from 1-based `start`, clipped to the
    /// vector like `substring`.
    fn halfvec_subvector(call) {
        let (v, start, count) = (call.halfvec(0), call.i32(1), call.i32(2));
        dense_slices::subvector(v, start, count, TYPE_NAME, HALFVEC_MAX_DIM).into_datum()
    }
}
