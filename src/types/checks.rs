//! Validity checks and float errors shared by the types, each raising pgvector's error class
//! and message text with the type's own name in it.

use pgrx::{ereport, pg_sys, PgSqlErrorCode};

/// Rejects a dimension count outside `1..=max_dim` for a value of type `type_name`.
pub fn check_dim(type_name: &str, max_dim: usize, dim: impl Into<i64>) {
    let dim = dim.into();
    if dim < 1 {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            format!("{type_name} must have at least 1 dimension")
        );
    }
    if dim > max_dim as i64 {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("{type_name} cannot have more than {max_dim} dimensions")
        );
    }
}

/// Rejects `dim` when a type modifier (`-1` for none) asks for another count.
pub fn check_expected_dim(typmod: i32, dim: impl Into<i64>) {
    let dim = dim.into();
    if typmod != -1 && i64::from(typmod) != dim {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            format!("expected {typmod} dimensions, not {dim}")
        );
    }
}

/// Rejects NaN and infinities, which a stored value of `type_name` never holds.
pub fn check_finite(type_name: &str, value: f32) {
    if value.is_nan() {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            format!("NaN not allowed in {type_name}")
        );
    }
    if value.is_infinite() {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            format!("infinite value not allowed in {type_name}")
        );
    }
}

/// Raises "out of range" for an element spelled `spelled` that `type_name` cannot hold.
pub fn out_of_range(type_name: &str, spelled: &str) -> ! {
    ereport!(
        ERROR,
        PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
        format!("\"{spelled}\" is out of range for type {type_name}")
    );
}

/// Raises the server's own "value out of range: overflow" error.
// Some server versions' bindings declare the routine as never returning, others do not.
#[allow(unreachable_code)]
pub fn float_overflow() -> ! {
    // SAFETY: float_overflow_error takes no arguments and always raises an ERROR, which the
    // guarded binding turns into an unwind to our caller's #[pg_guard] boundary.
    unsafe { pg_sys::float_overflow_error() };
    unreachable!("float_overflow_error returned")
}

/// Raises the server's own "value out of range: underflow" error.
#[allow(unreachable_code)]
pub fn float_underflow() -> ! {
    // SAFETY: as for float_overflow, with float_underflow_error.
    unsafe { pg_sys::float_underflow_error() };
    unreachable!("float_underflow_error returned")
}
