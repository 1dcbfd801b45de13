//! Raising the errors of `vector_formats` as pgvector's ERRORs, and the validity checks the
//! types share (whose conditions and texts are `vector_formats::checks`'), each raising
//! pgvector's error class and message text with the type's own name in it.

use pgrx::{ereport, pg_sys, PgSqlErrorCode};
use vector_formats::checks;
use vector_formats::error::{ErrorCode, ParseError};
use vector_formats::varlena::VarlenaError;

/// The errcode Postgres knows `code` by.
fn sql_error_code(code: ErrorCode) -> PgSqlErrorCode {
    match code {
        ErrorCode::InvalidTextRepresentation => PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION,
        ErrorCode::DataException => PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
        ErrorCode::ProgramLimitExceeded => PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
        ErrorCode::NumericValueOutOfRange => PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
        ErrorCode::ProtocolViolation => PgSqlErrorCode::ERRCODE_PROTOCOL_VIOLATION,
        ErrorCode::DataCorrupted => PgSqlErrorCode::ERRCODE_DATA_CORRUPTED,
    }
}

/// Raises `err` with its code, message and detail line.
pub fn raise(err: ParseError) -> ! {
    let code = sql_error_code(err.code());
    match err.detail() {
        Some(detail) => {
            ereport!(ERROR, code, err.message(), detail);
        }
        None => {
            ereport!(ERROR, code, err.message());
        }
    }
}

/// Raises "invalid T datum: ..." (data_corrupted) for a datum that fails its reader.
pub fn raise_corrupted(err: VarlenaError) -> ! {
    ereport!(ERROR, sql_error_code(err.code()), err.message());
}

/// Unwraps a result of `vector_formats`, raising its error.
pub trait OrRaise<T> {
    fn or_raise(self) -> T;
}

impl<T> OrRaise<T> for Result<T, ParseError> {
    fn or_raise(self) -> T {
        self.unwrap_or_else(|err| raise(err))
    }
}

impl<T> OrRaise<T> for Result<T, VarlenaError> {
    fn or_raise(self) -> T {
        self.unwrap_or_else(|err| raise_corrupted(err))
    }
}

/// Rejects a dimension count outside `1..=max_dim` for a value of type `type_name`.
pub fn check_dim(type_name: &'static str, max_dim: usize, dim: impl Into<i64>) {
    checks::check_dim(type_name, max_dim, dim.into()).or_raise();
}

/// Rejects `dim` when a type modifier (`-1` for none) asks for another count.
pub fn check_expected_dim(typmod: i32, dim: impl Into<i64>) {
    checks::check_expected_dim(typmod, dim.into()).or_raise();
}

/// Rejects NaN and infinities, which a stored value of `type_name` never holds.
pub fn check_finite(type_name: &'static str, value: f32) {
    checks::check_finite(type_name, value).or_raise();
}

/// Raises "out of range" for an element spelled `spelled` that `type_name` cannot hold.
pub fn out_of_range(type_name: &'static str, spelled: &str) -> ! {
    raise(checks::out_of_range(type_name, spelled));
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
