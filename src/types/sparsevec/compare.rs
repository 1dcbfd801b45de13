//! Ordering of sparse vectors (the btree opclass `sparsevec_ops`).
//!
//! The order is that of the dense vectors the sparse ones stand for, compared element by
//! element like Postgres arrays (values first, then the dimension count), computed without
//! expanding them.

use crate::fmgr;
use crate::types::layout::SparsevecRef;
use std::cmp::Ordering;

/// The sign a stored value gives to the comparison when the other side has an implicit zero at
/// that position: a negative value sorts before zero, a positive one after it.
fn against_zero(value: f32) -> Ordering {
    if value < 0.0 {
        Ordering::Less
    } else {
        Ordering::Greater
    }
}

fn compare(a: SparsevecRef, b: SparsevecRef) -> Ordering {
    let common = a.nnz().min(b.nnz());
    for k in 0..common {
        let (ai, bi) = (a.indices[k], b.indices[k]);
        let (av, bv) = (a.values[k], b.values[k]);
        // The first stored position where the two differ decides.
        if ai < bi {
            return against_zero(av);
        }
        if ai > bi {
            return against_zero(bv).reverse();
        }
        if av < bv {
            return Ordering::Less;
        }
        if av > bv {
            return Ordering::Greater;
        }
    }
    // One side has more stored elements; they count only where the other side has dimensions.
    if a.nnz() < b.nnz() && b.indices[common] < a.dim {
        return against_zero(b.values[common]).reverse();
    }
    if a.nnz() > b.nnz() && a.indices[common] < b.dim {
        return against_zero(a.values[common]);
    }
    a.dim.cmp(&b.dim)
}

fn compare_args(call: crate::fmgr::FnCall) -> Ordering {
    compare(call.sparsevec(0), call.sparsevec(1))
}

crate::sql_function! {
    fn sparsevec_lt(call) {
        fmgr::bool_datum(compare_args(call).is_lt())
    }
}

crate::sql_function! {
    fn sparsevec_le(call) {
        fmgr::bool_datum(compare_args(call).is_le())
    }
}

crate::sql_function! {
    fn sparsevec_eq(call) {
        fmgr::bool_datum(compare_args(call).is_eq())
    }
}

crate::sql_function! {
    fn sparsevec_ne(call) {
        fmgr::bool_datum(compare_args(call).is_ne())
    }
}

crate::sql_function! {
    fn sparsevec_ge(call) {
        fmgr::bool_datum(compare_args(call).is_ge())
    }
}

crate::sql_function! {
    fn sparsevec_gt(call) {
        fmgr::bool_datum(compare_args(call).is_gt())
    }
}

crate::sql_function! {
    fn sparsevec_cmp(call) {
        let order = match compare_args(call) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        };
        fmgr::int32_datum(order)
    }
}
