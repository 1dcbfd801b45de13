//! The float8[] state of `avg(vector)` and `avg(halfvec)`: `{n, s1, ..., sdim}`, the row count
//! and the running sums in double precision, the representation pgvector uses, so partial
//! states exchanged between parallel workers (and any stored states) are interchangeable.
//! `{0}` is the initial state.

use super::checks::float_overflow;
use crate::fmgr::{self, FnCall};
use pgrx::{ereport, pg_sys, PgSqlErrorCode};
use std::ffi::{c_char, c_int};

/// Size of the fixed ArrayType header (vl_len_, ndim, dataoffset, elemtype).
const ARRAY_HEADER: usize = std::mem::size_of::<pg_sys::ArrayType>();

/// Validates the state array argument `n` (1-D float8[] of at least one element, without
/// NULLs; otherwise an internal error naming `caller`) and returns its values: the count
/// first, then the sums.
pub fn state_values(call: &FnCall, n: usize, caller: &str) -> &'static [f64] {
    let array = call.varlena(n).cast::<pg_sys::ArrayType>();
    // SAFETY: the argument is a detoasted float8[] (the declared type); the dimension word is
    // read only once the array is known to have one dimension.
    let (ndim, has_nulls, elemtype) =
        unsafe { ((*array).ndim, (*array).dataoffset != 0, (*array).elemtype) };
    let len = if ndim == 1 {
        // SAFETY: a one-dimensional array stores its length right after the fixed header.
        unsafe { array.cast::<u8>().add(ARRAY_HEADER).cast::<c_int>().read() }
    } else {
        0
    };
    if ndim != 1 || len < 1 || has_nulls || elemtype != pg_sys::FLOAT8OID {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
            format!("{caller}: expected state array")
        );
    }
    // Without a null bitmap, the data of a 1-D array starts after the header, the length and
    // the lower bound, rounded up to MAXALIGN.
    let offset = (ARRAY_HEADER + 2 * std::mem::size_of::<c_int>())
        .next_multiple_of(pg_sys::MAXIMUM_ALIGNOF as usize);
    // SAFETY: the array holds `len` float8s, maximally aligned, starting at `offset`; the
    // detoasted copy lives for the whole call.
    unsafe { std::slice::from_raw_parts(array.cast::<u8>().add(offset).cast(), len as usize) }
}

/// Builds a float8[] state from its values.
pub fn state_datum(values: &[f64]) -> pg_sys::Datum {
    let mut datums: Vec<pg_sys::Datum> = values.iter().map(|&v| fmgr::float8_datum(v)).collect();
    // SAFETY: `datums` holds by-value float8 Datums (64-bit servers pass float8 by value);
    // construct_array copies them into a new palloc'd array.
    let array = unsafe {
        pg_sys::construct_array(
            datums.as_mut_ptr(),
            datums.len() as c_int,
            pg_sys::FLOAT8OID,
            8,
            true,
            pg_sys::TYPALIGN_DOUBLE as c_char,
        )
    };
    fmgr::pointer_datum(array)
}

/// Adds to a running sum, raising an overflow error on an infinite result.
pub fn add_to_sum(sum: f64, value: f64) -> f64 {
    let sum = sum + value;
    if sum.is_infinite() {
        float_overflow();
    }
    sum
}
