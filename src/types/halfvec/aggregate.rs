//! The `avg(halfvec)` aggregate's transition and final functions.
//!
//! The state is a float8[] `{n, sum_1, ..., sum_dim}` (`{0}` initially), the layout shared with
//! `avg(vector)`, whose combine function `avg(halfvec)` reuses.

use pgrx::{ereport, pg_sys, PgSqlErrorCode};

use super::{check_dim, check_element, check_expected_dim, overflow_error, to_half_in_range};
use crate::fmgr;
use crate::types::layout::HalfvecMut;

/// The values of a state array, after checking it is a 1-D float8[] of at least one element
/// without NULLs (otherwise an internal error naming `caller`).
fn state_values(array: *mut pg_sys::ArrayType, caller: &str) -> &'static [f64] {
    // SAFETY: `array` is a detoasted array datum, so its header and, when it has no NULL
    // bitmap, its dims (right after the header) are readable. A checked float8 array of one
    // dimension has its data at the maximally aligned offset after header, dims and lbounds.
    unsafe {
        let header = &*array;
        let dims = array
            .cast::<u8>()
            .add(size_of::<pg_sys::ArrayType>())
            .cast::<i32>();
        let valid = header.ndim == 1
            && *dims >= 1
            && header.dataoffset == 0
            && header.elemtype == pg_sys::FLOAT8OID;
        if !valid {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INTERNAL_ERROR,
                format!("{caller}: expected state array")
            );
        }
        let data_offset = (size_of::<pg_sys::ArrayType>() + 2 * size_of::<i32>())
            .next_multiple_of(pg_sys::MAXIMUM_ALIGNOF as usize);
        let data = array.cast::<u8>().add(data_offset).cast::<f64>();
        std::slice::from_raw_parts(data, *dims as usize)
    }
}

/// Builds a float8[] from `values`.
fn float8_array(values: &[f64]) -> pg_sys::Datum {
    let mut datums: Vec<pg_sys::Datum> = values.iter().map(|&v| fmgr::float8_datum(v)).collect();
    // SAFETY: `datums` holds by-value float8 datums; construct_array copies them into a new
    // palloc'd array (float8: length 8, by value, double alignment).
    let array = unsafe {
        pg_sys::construct_array(
            datums.as_mut_ptr(),
            datums.len() as i32,
            pg_sys::FLOAT8OID,
            8,
            true,
            pg_sys::TYPALIGN_DOUBLE as std::ffi::c_char,
        )
    };
    fmgr::pointer_datum(array)
}

crate::sql_function! {
    /// `halfvec_accum(float8[], halfvec)`: counts the value and adds it to the sums.
    fn halfvec_accum(call) {
        let state = state_values(call.varlena(0).cast(), "halfvec_accum");
        let v = call.halfvec(1);
        // The state's dimension count is kept in an int16, as in pgvector.
        let mut dim = (state.len() - 1) as i16;
        let first = dim == 0;
        if first {
            dim = v.dim() as i16;
        } else {
            check_expected_dim(dim.into(), v.dim() as i32);
        }
        let dim = dim.max(0) as usize;

        let mut next = Vec::with_capacity(dim + 1);
        next.push(state[0] + 1.0);
        if first {
            next.extend(v.x[..dim].iter().map(|h| f64::from(h.to_f32())));
        } else {
            for (sum, h) in state[1..=dim].iter().zip(v.x) {
                let sum = sum + f64::from(h.to_f32());
                if sum.is_infinite() {
                    overflow_error();
                }
                next.push(sum);
            }
        }
        float8_array(&next)
    }
}

crate::sql_function! {
    /// `halfvec_avg(float8[])`: the sums divided by the count, or NULL for no rows.
    fn halfvec_avg(call) {
        let state = state_values(call.varlena(0).cast(), "halfvec_avg");
        let n = state[0];
        if n == 0.0 {
            return call.return_null();
        }
        // The dimension count is read as an unsigned 16-bit value, as in pgvector.
        let dim = (state.len() - 1) as u16;
        check_dim(dim.into());
        let mut result = HalfvecMut::new(dim.into());
        for (x, sum) in result.x().iter_mut().zip(&state[1..]) {
            *x = to_half_in_range((sum / n) as f32);
            check_element(*x);
        }
        result.into_datum()
    }
}
