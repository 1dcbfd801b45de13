//! Casts between `halfvec` and `halfvec(n)`, `vector`, and numeric arrays.

use std::ptr;

use pgrx::{ereport, pg_sys, PgSqlErrorCode};

use super::{check_dim, check_element, check_expected_dim, to_half_in_range};
use crate::fmgr;
use crate::types::layout::{HalfvecMut, VectorMut, VECTOR_MAX_DIM};

crate::sql_function! {
    /// `halfvec(halfvec, typmod, explicit)`: applies a typmod to a halfvec.
    fn halfvec(call) {
        let ptr = call.varlena(0);
        // SAFETY: the argument is a detoasted halfvec that lives for the whole call.
        let v = unsafe { crate::types::layout::HalfvecRef::from_varlena(ptr) };
        check_expected_dim(call.i32(1), v.dim() as i32);
        fmgr::pointer_datum(ptr)
    }
}

/// The elements of a 1-D array argument without NULLs, with the array's element type.
fn array_elements(array: *mut pg_sys::ArrayType) -> (pg_sys::Oid, Vec<pg_sys::Datum>) {
    // SAFETY: `array` is a detoasted array datum: its header fields are readable, and
    // deconstruct_array returns `n` datums of its element type in a palloc'd block (by-reference
    // elements point into the array itself, which outlives this call).
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
        let (mut typlen, mut typbyval, mut typalign) = (0i16, false, 0 as std::ffi::c_char);
        pg_sys::get_typlenbyvalalign(elemtype, &mut typlen, &mut typbyval, &mut typalign);
        let mut elems: *mut pg_sys::Datum = ptr::null_mut();
        let mut n = 0;
        pg_sys::deconstruct_array(
            array,
            elemtype,
            typlen.into(),
            typbyval,
            typalign,
            &mut elems,
            ptr::null_mut(),
            &mut n,
        );
        let datums = if n > 0 {
            std::slice::from_raw_parts(elems, n as usize).to_vec()
        } else {
            Vec::new()
        };
        if !elems.is_null() {
            pg_sys::pfree(elems.cast());
        }
        (elemtype, datums)
    }
}

unsafe extern "C-unwind" {
    /// The server's numeric -> float4 cast function (a V1 function).
    #[link_name = "numeric_float4"]
    fn server_numeric_float4(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
}

/// A numeric datum converted to float4 by the server's own `numeric_float4`.
fn numeric_to_float4(d: pg_sys::Datum) -> f32 {
    // SAFETY: `d` is a numeric datum; numeric_float4 is a strict V1 function of one numeric
    // that returns a by-value float4 (or raises an ERROR, which DirectFunctionCall propagates).
    let r = unsafe {
        pg_sys::DirectFunctionCall1Coll(Some(server_numeric_float4), pg_sys::InvalidOid, d)
    };
    f32::from_bits(r.value() as u32)
}

crate::sql_function! {
    /// `array_to_halfvec(int4[] | float4[] | float8[] | numeric[], typmod, explicit)`.
    fn array_to_halfvec(call) {
        let array = call.varlena(0).cast::<pg_sys::ArrayType>();
        let typmod = call.i32(1);
        let (elemtype, datums) = array_elements(array);
        let dim = datums.len() as i32;
        check_dim(dim);
        check_expected_dim(typmod, dim);

        // Each element is first narrowed to float4, as pgvector does.
        let to_float4: fn(pg_sys::Datum) -> f32 = match elemtype {
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
        };
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
        let v = call.halfvec(0);
        let mut datums: Vec<pg_sys::Datum> =
            v.x.iter().map(|h| fmgr::float4_datum(h.to_f32())).collect();
        // SAFETY: `datums` holds dim by-value float4 datums; construct_array copies them into a
        // new palloc'd array (float4: length 4, by value, int alignment).
        let array = unsafe {
            pg_sys::construct_array(
                datums.as_mut_ptr(),
                datums.len() as i32,
                pg_sys::FLOAT4OID,
                4,
                true,
                pg_sys::TYPALIGN_INT as std::ffi::c_char,
            )
        };
        fmgr::pointer_datum(array)
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
        if dim < 1 {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
                "vector must have at least 1 dimension"
            );
        }
        if dim > VECTOR_MAX_DIM as i32 {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                format!("vector cannot have more than {VECTOR_MAX_DIM} dimensions")
            );
        }
        check_expected_dim(typmod, dim);
        let mut result = VectorMut::new(v.dim());
        for (f, h) in result.x().iter_mut().zip(v.x) {
            *f = h.to_f32();
        }
        result.into_datum()
    }
}
