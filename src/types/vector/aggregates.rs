//! The `avg(vector)` aggregate's transition, combine and final functions.
//!
//! The state is the float8[] of `crate::types::aggregate_state`. `sum(vector)` needs nothing
//! here: it runs on `vector_add`.

use super::{check_dim, check_element, check_expected_dim};
use crate::types::aggregate_state::{add_to_sum, state_datum, state_values};
use crate::types::layout::VectorMut;

crate::sql_function! {
    /// `vector_accum(double precision[], vector)`: adds one vector to the state.
    fn vector_accum(call) {
        let state = state_values(&call, 0, "vector_accum");
        let v = call.vector(1);
        let state_dim = state.len() - 1;
        let mut next = Vec::with_capacity(v.dim() + 1);
        next.push(state[0] + 1.0);
        if state_dim == 0 {
            next.extend(v.x.iter().map(|&x| f64::from(x)));
        } else {
            check_expected_dim(state_dim as i32, v.dim() as i32);
            for (&sum, &x) in state[1..].iter().zip(v.x) {
                next.push(add_to_sum(sum, f64::from(x)));
            }
        }
        state_datum(&next)
    }
}

crate::sql_function! {
    /// `vector_combine(double precision[], double precision[])`: merges two partial states
    /// (also the combine function of `avg(halfvec)`).
    fn vector_combine(call) {
        let a = state_values(&call, 0, "vector_combine");
        let b = state_values(&call, 1, "vector_combine");
        // A parallel worker that saw no rows hands over the initial state {0}: in an
        // aggregate two of them make {0} (pgvector 0.8.6 fails there, its master does not).
        // Called directly, the function keeps 0.8.6's error.
        if a.len() == 1 && b.len() == 1 && call.in_aggregate() {
            return state_datum(&[a[0] + b[0]]);
        }
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
                merged.push(add_to_sum(x, y));
            }
            merged
        };
        state_datum(&merged)
    }
}

crate::sql_function! {
    /// `vector_avg(double precision[])`: the mean vector, or NULL after no rows.
    fn vector_avg(call) {
        let state = state_values(&call, 0, "vector_avg");
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
