//! Reading and building the SQL arrays that the casts to and from `vector`, `halfvec` and
//! `sparsevec` take or return.

use crate::fmgr::{self, FnCall};
use pgrx::{ereport, pg_sys, PgSqlErrorCode};
use std::ffi::c_char;

/// The elements of the 1-D array argument `n` (without NULLs), with the array's element type;
/// raises pgvector's errors for more dimensions or a NULL element.
pub fn array_elements(call: &FnCall, n: usize) -> (pg_sys::Oid, Vec<pg_sys::Datum>) {
    let array = call.varlena(n).cast::<pg_sys::ArrayType>();
    // SAFETY: the declared argument type is an array, so `array` is a detoasted array datum:
    // its header fields are readable, and deconstruct_array returns `count` datums of its
    // element type in a palloc'd block (by-reference elements point into the array itself,
    // which outlives the call). No null flags are asked for, as the array holds no NULLs by
    // then.
    unsafe {
        if (*array).ndim > 1 {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
                "array must be 1-D"
            );
        }
        let has_null_bitmap = (*array).dataoffset != 0;
        if has_null_bitmap && pg_sys::array_contains_nulls(array) {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                "array must not contain nulls"
            );
        }
        let elemtype = (*array).elemtype;
        let (mut typlen, mut typbyval, mut typalign) = (0i16, false, 0 as c_char);
        pg_sys::get_typlenbyvalalign(elemtype, &mut typlen, &mut typbyval, &mut typalign);
        let mut elems: *mut pg_sys::Datum = std::ptr::null_mut();
        let mut count = 0;
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
        let datums = if elems.is_null() || count <= 0 {
            Vec::new()
        } else {
            std::slice::from_raw_parts(elems, count as usize).to_vec()
        };
        if !elems.is_null() {
            pg_sys::pfree(elems.cast());
        }
        (elemtype, datums)
    }
}

unsafe extern "C-unwind" {
    /// The server's numeric -> real cast, called directly as a V1 function (pgrx's `pg_sys`
    /// item of that name is a Rust wrapper, not a function pointer the fmgr can call).
    #[link_name = "numeric_float4"]
    fn server_numeric_float4(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
}

/// A numeric datum converted to float4 by the server's own `numeric_float4` (which raises its
/// own out-of-range error).
fn numeric_to_float4(datum: pg_sys::Datum) -> f32 {
    // SAFETY: `datum` is a numeric array element, the argument numeric_float4 expects; errors
    // it raises unwind through the guarded DirectFunctionCall1Coll binding.
    let result = unsafe {
        pg_sys::DirectFunctionCall1Coll(Some(server_numeric_float4), pg_sys::InvalidOid, datum)
    };
    f32::from_bits(result.value() as u32)
}

/// How to read an element of type `elemtype` as the float4 pgvector stores for it (a C cast
/// for int4 and float8); raises "unsupported array type" for any other element type.
pub fn float4_reader(elemtype: pg_sys::Oid) -> fn(pg_sys::Datum) -> f32 {
    match elemtype {
        pg_sys::INT4OID => |d| d.value() as i32 as f32,
        pg_sys::FLOAT8OID => |d| f64::from_bits(d.value() as u64) as f32,
        pg_sys::FLOAT4OID => |d| f32::from_bits(d.value() as u32),
        pg_sys::NUMERICOID => numeric_to_float4,
        _ => {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
                "unsupported array type"
            );
        }
    }
}

/// A `real[]` of `values`.
pub fn float4_array_datum(values: impl Iterator<Item = f32>) -> pg_sys::Datum {
    let mut datums: Vec<pg_sys::Datum> = values.map(fmgr::float4_datum).collect();
    // SAFETY: `datums` holds by-value float4 Datums; construct_array copies them into a new
    // palloc'd array with float4's storage properties (length 4, by value, int alignment).
    let array = unsafe {
        pg_sys::construct_array(
            datums.as_mut_ptr(),
            datums.len() as i32,
            pg_sys::FLOAT4OID,
            4,
            true,
            pg_sys::TYPALIGN_INT as c_char,
        )
    };
    fmgr::pointer_datum(array)
}
