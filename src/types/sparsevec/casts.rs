//! Casts between sparsevec and vector, halfvec, sparsevec (typmod check) and arrays.

use super::{check_dim, check_element, check_expected_dim, check_nnz};
use crate::fmgr;
use crate::types::arrays::{array_elements, float4_reader};
use crate::types::checks;
use crate::types::layout::{
    FromVarlena, HalfvecMut, SparsevecMut, SparsevecRef, VectorMut, HALFVEC_MAX_DIM, VECTOR_MAX_DIM,
};
use half::f16;

/// Builds a sparsevec of `dim` dimensions from the non-zero entries of `dense` (already
/// converted to float4, in dimension order).
fn from_dense(dim: i32, nnz: usize, dense: impl Iterator<Item = f32>) -> SparsevecMut {
    let mut result = SparsevecMut::new(dim, nnz);
    let (indices, values) = result.parts();
    let mut k = 0;
    for (i, value) in dense.enumerate() {
        if value != 0.0 {
            indices[k] = i as i32;
            values[k] = value;
            k += 1;
        }
    }
    result
}

crate::sql_function! {
    fn sparsevec(call) {
        let ptr = call.varlena(0);
        // SAFETY: the argument is a detoasted sparsevec that lives for the call.
        let svec = unsafe { SparsevecRef::from_varlena(ptr) };
        check_expected_dim(call.i32(1), svec.dim as i64);
        fmgr::pointer_datum(ptr)
    }
}

crate::sql_function! {
    fn vector_to_sparsevec(call) {
        let vec = call.vector(0);
        let dim = vec.dim() as i64;
        check_dim(dim);
        check_expected_dim(call.i32(1), dim);
        let nnz = vec.x.iter().filter(|&&v| v != 0.0).count();
        check_nnz(nnz as i64, dim);
        from_dense(dim as i32, nnz, vec.x.iter().copied()).into_datum()
    }
}

crate::sql_function! {
    fn halfvec_to_sparsevec(call) {
        let vec = call.halfvec(0);
        let dim = vec.dim() as i64;
        check_dim(dim);
        check_expected_dim(call.i32(1), dim);
        // Both zeros (+0 and -0) are left out.
        let nnz = vec.x.iter().filter(|v| v.to_bits() & 0x7fff != 0).count();
        check_nnz(nnz as i64, dim);
        from_dense(dim as i32, nnz, vec.x.iter().map(|v| v.to_f32())).into_datum()
    }
}

crate::sql_function! {
    fn sparsevec_to_vector(call) {
        let svec = call.sparsevec(0);
        checks::check_dim("vector", VECTOR_MAX_DIM, svec.dim);
        check_expected_dim(call.i32(1), svec.dim as i64);
        let mut result = VectorMut::new(svec.dim as usize);
        let x = result.x();
        for (&index, &value) in svec.indices.iter().zip(svec.values) {
            // Stored indices are in range; `get_mut` only guards against corrupt data.
            if let Some(slot) = x.get_mut(index as usize) {
                *slot = value;
            }
        }
        result.into_datum()
    }
}

crate::sql_function! {
    fn sparsevec_to_halfvec(call) {
        let svec = call.sparsevec(0);
        checks::check_dim("halfvec", HALFVEC_MAX_DIM, svec.dim);
        check_expected_dim(call.i32(1), svec.dim as i64);
        let mut result = HalfvecMut::new(svec.dim as usize);
        let x = result.x();
        for (&index, &value) in svec.indices.iter().zip(svec.values) {
            let half = f16::from_f32(value);
            if half.is_infinite() && !value.is_infinite() {
                let mut spelled = String::new();
                fmgr::push_float4_shortest(&mut spelled, value);
                checks::out_of_range("halfvec", &spelled);
            }
            // Stored indices are in range; `get_mut` only guards against corrupt data.
            if let Some(slot) = x.get_mut(index as usize) {
                *slot = half;
            }
        }
        result.into_datum()
    }
}

crate::sql_function! {
    fn array_to_sparsevec(call) {
        let typmod = call.i32(1);
        let (elemtype, datums) = array_elements(&call, 0);
        let dim = datums.len() as i64;
        check_dim(dim);
        check_expected_dim(typmod, dim);
        let to_float4 = float4_reader(elemtype);
        let dense: Vec<f32> = datums.iter().map(|&d| to_float4(d)).collect();
        // NaN compares unequal to zero, so it is kept here and rejected below.
        let nnz = dense.iter().filter(|&&v| v != 0.0).count();
        check_nnz(nnz as i64, dim);
        let mut result = from_dense(dim as i32, nnz, dense.into_iter());
        for &value in result.parts().1.iter() {
            check_element(value);
        }
        result.into_datum()
    }
}
