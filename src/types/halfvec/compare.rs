//! Ordering of `halfvec` for the btree operator class.

use std::cmp::Ordering;

use crate::fmgr;
use crate::types::layout::HalfvecRef;

/// Element by element as float4, then by length, like Postgres arrays.
fn compare(a: HalfvecRef, b: HalfvecRef) -> Ordering {
    for (x, y) in a.x.iter().zip(b.x) {
        let (x, y) = (x.to_f32(), y.to_f32());
        if x < y {
            return Ordering::Less;
        }
        if x > y {
            return Ordering::Greater;
        }
    }
    a.dim().cmp(&b.dim())
}

macro_rules! comparison {
    ($name:ident, $holds:expr) => {
        crate::sql_function! {
            fn $name(call) {
                let ord = compare(call.halfvec(0), call.halfvec(1));
                fmgr::bool_datum($holds(ord))
            }
        }
    };
}

comparison!(halfvec_lt, Ordering::is_lt);
comparison!(halfvec_le, Ordering::is_le);
comparison!(halfvec_eq, Ordering::is_eq);
comparison!(halfvec_ne, Ordering::is_ne);
comparison!(halfvec_ge, Ordering::is_ge);
comparison!(halfvec_gt, Ordering::is_gt);

crate::sql_function! {
    fn halfvec_cmp(call) {
        let ord = compare(call.halfvec(0), call.halfvec(1));
        fmgr::int32_datum(ord as i32)
    }
}
