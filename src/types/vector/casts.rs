//! Casts between `vector` and arrays, and the typmod-checking cast `vector(vector, int, bool)`.

use super::{check_dim, check_element, check_expected_dim};
use crate::fmgr;
use crate::types::arrays::{array_elements, float4_array_datum, float4_reader};
use crate::types::layout::{FromVarlena, VectorMut, VectorRef};
crate::sql_function! {
    /// `vector(vector, integer, boolean)`: applies a `vector(n)` typmod to a value.
    fn vector(call) {
        let ptr = call.varlena(0);
        // SAFETY: the argument is a detoasted vector that lives for the call.
        let v = unsafe { VectorRef::from_varlena(ptr) };
        check_expected_dim(call.i32(1), v.dim() as i32);
        fmgr::pointer_datum(ptr)
    }
}

crate::sql_function! {
    /// `array_to_vector(integer[] | real[] | double precision[] | numeric[], integer,
    /// boolean)`: a 1-D array without NULLs to a vector of finite floats.
    fn array_to_vector(call) {
        let typmod = call.i32(1);
        let (elemtype, datums) = array_elements(&call, 0);
        let count = datums.len() as i32;
        check_dim(count);
        check_expected_dim(typmod, count);

        let to_float4 = float4_reader(elemtype);
        let mut result = VectorMut::new(datums.len());
        for (slot, &datum) in result.x().iter_mut().zip(&datums) {
            *slot = to_float4(datum);
        }
        // NaN and infinity are rejected only once every element converted.
        for &value in result.x().iter() {
            check_element(value);
        }
        result.into_datum()
    }
}

crate::sql_function! {
    /// `vector_to_float4(vector, integer, boolean)`: vector to real[].
    fn vector_to_float4(call) {
        float4_array_datum(call.vector(0).x.iter().copied())
    }
}
