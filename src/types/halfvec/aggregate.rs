//! The `avg(halfvec)` aggregate's transition and final functions.
//!
//! The state is the float8[] of `crate::types::aggregate_state`, shared with `avg(vector)`,
//! whose combine function `avg(halfvec)` reuses.

use super::{check_dim, check_element, check_expected_dim, to_half_in_range};
use crate::types::aggregate_state::{add_to_sum, state_datum, state_values};
use crate::types::layout::HalfvecMut;

crate::sql_function! {
    /// `halfvec_accum(float8[], halfvec)`: counts the value and adds it to the sums.
    fn halfvec_accum(call) {
        let state = state_values(&call, 0, "halfvec_accum");
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
                next.push(add_to_sum(*sum, f64::from(h.to_f32())));
            }
        }
        state_datum(&next)
    }
}

crate::sql_function! {
    /// `halfvec_avg(float8[])`: the sums divided by the count, or NULL for no rows.
    fn halfvec_avg(call) {
        let state = state_values(&call, 0, "halfvec_avg");
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
