//! "out of memory" as an ERROR, for allocations whose size depends on the data or on settings.
//!
//! Rust's allocator aborts the process when `malloc` fails (stable Rust has no hook to change
//! that), and an abort in a backend restarts the whole server. So those allocations are made
//! with `try_reserve` and a failure is raised here, as Postgres raises a failed `palloc`.

use pgrx::{ereport, PgSqlErrorCode};
use std::collections::TryReserveError;

/// Raises Postgres's "out of memory" ERROR for a request of `bytes` made for `what`.
pub fn raise(bytes: usize, what: &str) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY,
        "out of memory",
        format!("Failed on request of size {bytes} for {what}.")
    );
}

/// Makes room for `additional` more elements in `v`, or raises "out of memory".
pub fn reserve<T>(v: &mut Vec<T>, additional: usize, what: &str) {
    if let Err(TryReserveError { .. }) = v.try_reserve(additional) {
        raise(additional.saturating_mul(std::mem::size_of::<T>()), what);
    }
}

/// `len` copies of `value`, or "out of memory".
pub fn filled<T: Clone>(len: usize, value: T, what: &str) -> Vec<T> {
    let mut v = Vec::new();
    if v.try_reserve_exact(len).is_err() {
        raise(len.saturating_mul(std::mem::size_of::<T>()), what);
    }
    v.resize(len, value);
    v
}
