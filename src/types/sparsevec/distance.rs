//! Distances, norms and normalization; the arithmetic is `vector_distance::sparse`'s.

use super::raise;
use crate::fmgr::{self, FnCall};
use crate::types::layout::{SparsevecMut, SparsevecRef};
use pgrx::PgSqlErrorCode::ERRCODE_DATA_EXCEPTION;
use vector_distance::sparse::{self, SparseRef};

fn kernel_view(svec: SparsevecRef<'_>) -> SparseRef<'_> {
    SparseRef::new(svec.indices, svec.values)
}

/// Both arguments, which must have the same dimension count.
fn same_dim_args(call: &FnCall) -> (SparseRef<'static>, SparseRef<'static>) {
    let a = call.sparsevec(0);
    let b = call.sparsevec(1);
    if a.dim != b.dim {
        raise(
            ERRCODE_DATA_EXCEPTION,
            format!("different sparsevec dimensions {} and {}", a.dim, b.dim),
        );
    }
    (kernel_view(a), kernel_view(b))
}

crate::sql_function! {
    fn sparsevec_l2_distance(call) {
        let (a, b) = same_dim_args(&call);
        fmgr::float8_datum(sparse::l2_distance(a, b))
    }
}

crate::sql_function! {
    fn sparsevec_l2_squared_distance(call) {
        let (a, b) = same_dim_args(&call);
        fmgr::float8_datum(sparse::l2_squared_distance(a, b))
    }
}

crate::sql_function! {
    fn sparsevec_inner_product(call) {
        let (a, b) = same_dim_args(&call);
        fmgr::float8_datum(sparse::inner_product(a, b))
    }
}

crate::sql_function! {
    fn sparsevec_negative_inner_product(call) {
        let (a, b) = same_dim_args(&call);
        fmgr::float8_datum(sparse::negative_inner_product(a, b))
    }
}

crate::sql_function! {
    fn sparsevec_cosine_distance(call) {
        let (a, b) = same_dim_args(&call);
        fmgr::float8_datum(sparse::cosine_distance(a, b))
    }
}

crate::sql_function! {
    fn sparsevec_l1_distance(call) {
        let (a, b) = same_dim_args(&call);
        fmgr::float8_datum(sparse::l1_distance(a, b))
    }
}

crate::sql_function! {
    fn sparsevec_l2_norm(call) {
        fmgr::float8_datum(sparse::norm(kernel_view(call.sparsevec(0))))
    }
}

crate::sql_function! {
    fn sparsevec_l2_normalize(call) {
        let a = call.sparsevec(0);
        let (indices, values) = sparse::l2_normalize(kernel_view(a));
        if values.iter().any(|v| v.is_infinite()) {
            // SAFETY: raises the server's standard float overflow ERROR; it does not return.
            unsafe { pgrx::pg_sys::float_overflow_error() };
        }
        // Elements that became zero were dropped, so the result may store fewer.
        let mut result = SparsevecMut::new(a.dim, values.len());
        let (out_indices, out_values) = result.parts();
        out_indices.copy_from_slice(&indices);
        out_values.copy_from_slice(&values);
        result.into_datum()
    }
}
