//! The type modifier input shared by `vector(n)`, `halfvec(n)` and `sparsevec(n)`.

use crate::fmgr::{self, FnCall};
use pgrx::{ereport, pg_sys, PgSqlErrorCode};

/// The body of a `*_typmod_in(cstring[])`: the single `n` of `type_name(n)`, which must lie in
/// `1..=max_dim`.
pub fn dims_typmod_in(call: &FnCall, type_name: &str, max_dim: usize) -> pg_sys::Datum {
    let array = call.varlena(0).cast::<pg_sys::ArrayType>();
    let mut n = 0;
    // SAFETY: the argument is a detoasted cstring[]; the server routine validates its shape
    // itself (raising an ERROR for malformed modifiers) and returns `n` palloc'd int32s.
    let typmods: &[i32] = unsafe {
        let ptr = pg_sys::ArrayGetIntegerTypmods(array, &mut n);
        if ptr.is_null() || n <= 0 {
            &[]
        } else {
            std::slice::from_raw_parts(ptr, n as usize)
        }
    };
    if typmods.len() != 1 {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "invalid type modifier"
        );
    }
    let dims = typmods[0];
    if dims < 1 {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("dimensions for type {type_name} must be at least 1")
        );
    }
    if dims as i64 > max_dim as i64 {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("dimensions for type {type_name} cannot exceed {max_dim}")
        );
    }
    fmgr::int32_datum(dims)
}
