//! The `avg(vector)` aggregate's transition, combine and final functions.
//!
//! The state is a float8[] `{n, s1, ..., sdim}`: the row count and the running sums in double
//! precision, the same representation pgvector uses, so partial states exchanged between
//! parallel workers (and any stored states) are interchangeable. `{0}` is the initial state.
//! `sum(vector)` needs nothing here: it runs on `vector_add`.

use super::{check_dim, check_element, check_expected_dim, float_overflow};
use crate::fmgr;
use crate::types::layout::VectorMut;
use pgrx::{ereport, pg_sys, PgSqlErrorCode};
use std::ffi::{c_char, c_int};

/// Size of the fixed ArrayType header (vl_len_, ndim, dataoffset, elemtype).
const ARRAY_HEADER: usize = std::mem::size_of::<pg_sys::ArrayType>();

/// Validates an aggregate state and returns its values (count first, then the sums).
fn state_values(array: *mut pg_sys::varlena, caller: &str) -> &'static [f64] {
    let array = array.cast::<pg_sys::ArrayType>();
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
fn state_array(values: &[f64]) -> pg_sys::Datum {
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

/// Adds two running sums, raising an overflow error on an infinite result.
fn add_sums(a: f64, b: f64) -> f64 {
    let sum = a + b;
    if sum.is_infinite() {
        float_overflow();
    }
    sum
}

crate::sql_function! {
    /// `vector_accum(double precision[], vector)`: adds one vector to the state.
    fn vector_accum(call) {
        let state = state_values(call.varlena(0), "vector_accum");
        let v = call.vector(1);
        let state_dim = state.len() - 1;
        let mut next = Vec::with_capacity(v.dim() + 1);
        next.push(state[0] + 1.0);
        if state_dim == 0 {
            next.extend(v.x.iter().map(|&x| f64::from(x)));
        } else {
            check_expected_dim(state_dim as i32, v.dim() as i32);
            for (&sum, &x) in state[1..].iter().zip(v.x) {
                next.push(add_sums(sum, f64::from(x)));
            }
        }
        state_array(&next)
    }
}

crate::sql_function! {
    /// `vector_combine(double precision[], double precision[])`: merges two partial states
    /// (also the combine function of `avg(halfvec)`).
    fn vector_combine(call) {
        let a = state_values(call.varlena(0), "vector_combine");
        let b = state_values(call.varlena(1), "vector_combine");
        let merged = if a[0] == 0.0 {
            check_dim((b.len() - 1) as i32);
            b.to_vec()
        } else if b[0] == 0.0 {
            check_dim((a.len() - 1) as i32);
            a.to_vec()
        } else {
            check_dim((a.len() - 1) as i32);
            check_expected_dim((a.len() - 1) as i32, (b.len() - 1) as i32);
            let mut merged = Vec::with_capacity(a.len());
            merged.push(a[0] + b[0]);
            for (&x, &y) in a[1..].iter().zip(&b[1..]) {
                merged.push(add_sums(x, y));
            }
            merged
        };
        state_array(&merged)
    }
}

crate::sql_function! {
    /// `vector_avg(double precision[])`: the mean vector, or NULL after no rows.
    fn vector_avg(call) {
        let state = state_values(call.varlena(0), "vector_avg");
        let n = state[0];
        if n == 0.0 {
            return call.return_null();
        }
        let dim = state.len() - 1;
        check_dim(dim as i32);
        let mut result = VectorMut::new(dim);
        for (slot, &sum) in result.x().iter_mut().zip(&state[1..]) {
            *slot = (sum / n) as f32;
            check_element(*slot);
        }
        result.into_datum()
    }
}
