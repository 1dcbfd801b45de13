//! Casts between `vector` and arrays, and the typmod-checking cast `vector(vector, int, bool)`.

use super::{check_dim, check_element, check_expected_dim};
use crate::fmgr;
use crate::types::layout::{VectorMut, VectorRef};
use pgrx::{ereport, pg_sys, PgSqlErrorCode};
use std::ffi::{c_char, c_int};

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

/// Converts a numeric Datum with the server's own `numeric_float4` cast (which raises its own
/// out-of-range error).
fn numeric_to_float4(datum: pg_sys::Datum) -> f32 {
    // The raw V1 entry point: pg_sys wraps its bindings in Rust functions, but
    // DirectFunctionCall1Coll needs the C symbol itself.
    unsafe extern "C-unwind" {
        fn numeric_float4(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
    }
    // SAFETY: `datum` is a numeric from a deconstructed numeric[], the argument numeric_float4
    // expects; errors it raises unwind through the guarded DirectFunctionCall1Coll binding.
    let result =
        unsafe { pg_sys::DirectFunctionCall1Coll(Some(numeric_float4), pg_sys::InvalidOid, datum) };
    f32::from_bits(result.value() as u32)
}

/// Reads one array element of type `elemtype` as the float pgvector stores for it.
fn element_to_float4(elemtype: pg_sys::Oid, datum: pg_sys::Datum) -> f32 {
    match elemtype {
        pg_sys::INT4OID => datum.value() as i32 as f32,
        pg_sys::FLOAT8OID => f64::from_bits(datum.value() as u64) as f32,
        pg_sys::FLOAT4OID => f32::from_bits(datum.value() as u32),
        pg_sys::NUMERICOID => numeric_to_float4(datum),
        _ => {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
                "unsupported array type"
            );
        }
    }
}

crate::sql_function! {
    /// `array_to_vector(integer[] | real[] | double precision[] | numeric[], integer,
    /// boolean)`: a 1-D array without NULLs to a vector of finite floats.
    fn array_to_vector(call) {
        let array = call.varlena(0).cast::<pg_sys::ArrayType>();
        let typmod = call.i32(1);
        // SAFETY: the argument is a detoasted array, whose header fields are readable.
        let (ndim, has_null_bitmap, elemtype) =
            unsafe { ((*array).ndim, (*array).dataoffset != 0, (*array).elemtype) };
        if ndim > 1 {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
                "array must be 1-D"
            );
        }
        // SAFETY: `array` is a valid detoasted array.
        if has_null_bitmap && unsafe { pg_sys::array_contains_nulls(array) } {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                "array must not contain nulls"
            );
        }

        let mut typlen: i16 = 0;
        let mut typbyval = false;
        let mut typalign: c_char = 0;
        let mut elems: *mut pg_sys::Datum = std::ptr::null_mut();
        let mut count: c_int = 0;
        // SAFETY: the element type comes from the array itself, the array holds no NULLs (so
        // no null flags are requested), and deconstruct_array palloc's `count` Datums.
        unsafe {
            pg_sys::get_typlenbyvalalign(elemtype, &mut typlen, &mut typbyval, &mut typalign);
            pg_sys::deconstruct_array(
                array,
                elemtype,
                typlen.into(),
                typbyval,
                typalign,
                &mut elems,
                std::ptr::null_mut(),
                &mut count,
            );
        }
        check_dim(count);
        check_expected_dim(typmod, count);

        let mut result = VectorMut::new(count as usize);
        {
            // SAFETY: deconstruct_array filled `count` Datums at `elems`; by-reference ones
            // point into `array`, which outlives this block.
            let datums = unsafe { std::slice::from_raw_parts(elems, count as usize) };
            for (slot, &datum) in result.x().iter_mut().zip(datums) {
                *slot = element_to_float4(elemtype, datum);
            }
        }
        // SAFETY: `elems` was palloc'd by deconstruct_array and is no longer used.
        unsafe { pg_sys::pfree(elems.cast()) };

        for &value in result.x().iter() {
            check_element(value);
        }
        result.into_datum()
    }
}

crate::sql_function! {
    /// `vector_to_float4(vector, integer, boolean)`: vector to real[].
    fn vector_to_float4(call) {
        let v = call.vector(0);
        let mut datums: Vec<pg_sys::Datum> = v.x.iter().map(|&x| fmgr::float4_datum(x)).collect();
        // SAFETY: `datums` holds dim by-value float4 Datums; construct_array copies them into a
        // new palloc'd array with float4's storage properties.
        let array = unsafe {
            pg_sys::construct_array(
                datums.as_mut_ptr(),
                datums.len() as c_int,
                pg_sys::FLOAT4OID,
                4,
                true,
                pg_sys::TYPALIGN_INT as c_char,
            )
        };
        fmgr::pointer_datum(array)
    }
}
