//! Casts between `halfvec` and `halfvec(n)`, `vector`, and numeric arrays.

use super::{check_dim, check_element, check_expected_dim, to_half_in_range};
use crate::fmgr;
use crate::types::arrays::{array_elements, float4_array_datum, float4_reader};
use crate::types::checks;
use crate::types::layout::{FromVarlena, HalfvecMut, HalfvecRef, VectorMut, VECTOR_MAX_DIM};

crate::sql_function! {
    /// `halfvec(halfvec, typmod, explicit)`: applies a typmod to a halfvec.
    fn halfvec(call) {
        let ptr = call.varlena(0);
        // SAFETY: the argument is a detoasted halfvec that lives for the whole call.
        let v = unsafe { HalfvecRef::from_varlena(ptr) };
        check_expected_dim(call.i32(1), v.dim() as i32);
        fmgr::pointer_datum(ptr)
    }
}

crate::sql_function! {
    /// `array_to_halfvec(int4[] | float4[] | float8[] | numeric[], typmod, explicit)`.
    fn array_to_halfvec(call) {
        let typmod = call.i32(1);
        let (elemtype, datums) = array_elements(&call, 0);
        let dim = datums.len() as i32;
        check_dim(dim);
        check_expected_dim(typmod, dim);

        // Each element is first narrowed to float4, as pgvector does.
        let to_float4 = float4_reader(elemtype);
        let mut result = HalfvecMut::new(datums.len());
        for (x, &d) in result.x().iter_mut().zip(&datums) {
            *x = to_half_in_range(to_float4(d));
        }
        // NaN and infinity are rejected only once every element converted.
        for &x in result.x().iter() {
            check_element(x);
        }
        result.into_datum()
    }
}

crate::sql_function! {
    /// `halfvec_to_float4(halfvec, typmod, explicit)`: the cast to real[].
    fn halfvec_to_float4(call) {
        float4_array_datum(call.halfvec(0).x.iter().map(|h| h.to_f32()))
    }
}

crate::sql_function! {
    /// `vector_to_halfvec(vector, typmod, explicit)`: rounds each element to half precision.
    fn vector_to_halfvec(call) {
        let v = call.vector(0);
        let typmod = call.i32(1);
        check_dim(v.dim() as i32);
        check_expected_dim(typmod, v.dim() as i32);
        let mut result = HalfvecMut::new(v.dim());
        for (h, &f) in result.x().iter_mut().zip(v.x) {
            *h = to_half_in_range(f);
        }
        result.into_datum()
    }
}

crate::sql_function! {
    /// `halfvec_to_vector(halfvec, typmod, explicit)`: widens each element exactly.
    fn halfvec_to_vector(call) {
        let v = call.halfvec(0);
        let typmod = call.i32(1);
        let dim = v.dim() as i32;
        // pgvector checks the result against the vector type's limits here.
        checks::check_dim("vector", VECTOR_MAX_DIM, dim);
        check_expected_dim(typmod, dim);
        let mut result = VectorMut::new(v.dim());
        for (f, h) in result.x().iter_mut().zip(v.x) {
            *f = h.to_f32();
        }
        result.into_datum()
    }
}
