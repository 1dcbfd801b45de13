//! Pieces of the text input functions: the whitespace and number scanning pgvector's parsers
//! do, their syntax error, and the whole `[x1,x2,...]` parser of `vector` and `halfvec`.
//!
//! Numbers are read with the C library's `strtof` (the server runs with LC_NUMERIC=C, as
//! pgvector assumes), so hex floats, `inf` and `nan` spell the same as there and rounding is
//! single-step.

use super::checks::check_dim;
use pgrx::{ereport, PgSqlErrorCode};
use std::ffi::{c_char, c_int, CStr};

/// The whitespace pgvector skips between tokens (the SQL scanner's `scanner_isspace` set).
pub fn is_scanner_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// The position of the first non-space byte at or after `pos` (the NUL stops it).
pub fn skip_spaces(bytes: &[u8], mut pos: usize) -> usize {
    while is_scanner_space(bytes[pos]) {
        pos += 1;
    }
    pos
}

fn errno_location() -> *mut c_int {
    #[cfg(any(target_os = "macos", target_os = "ios", target_os = "freebsd"))]
    // SAFETY: __error only returns the calling thread's errno address.
    unsafe {
        libc::__error()
    }
    #[cfg(not(any(target_os = "macos", target_os = "ios", target_os = "freebsd")))]
    // SAFETY: __errno_location only returns the calling thread's errno address.
    unsafe {
        libc::__errno_location()
    }
}

/// One `strtof` call at `bytes[pos]` (`bytes` ends with its NUL): the value, how many bytes it
/// consumed (0 when nothing parses), and whether it reported a range error.
pub fn strtof_at(bytes: &[u8], pos: usize) -> (f32, usize, bool) {
    debug_assert_eq!(bytes.last(), Some(&0));
    let start = bytes[pos..].as_ptr().cast::<c_char>();
    let mut end = start.cast_mut();
    // SAFETY: `bytes` ends with a NUL, so strtof reads within it and leaves `end` inside it;
    // errno is this thread's, reset first so that only strtof's own report is seen.
    unsafe {
        *errno_location() = 0;
        let value = libc::strtof(start, &mut end);
        let range_error = *errno_location() == libc::ERANGE;
        (value, end.offset_from(start) as usize, range_error)
    }
}

/// Raises "invalid input syntax for type `type_name`" for the literal `lit`, with an optional
/// detail line.
pub fn invalid_syntax(type_name: &str, lit: &CStr, detail: Option<&str>) -> ! {
    let msg = format!(
        "invalid input syntax for type {type_name}: \"{}\"",
        String::from_utf8_lossy(lit.to_bytes())
    );
    match detail {
        Some(detail) => {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION,
                msg,
                detail
            );
        }
        None => {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION,
                msg
            );
        }
    }
}

/// Parses `[x1,x2,...]` for the dense type `type_name` (at most `max_dim` elements), raising
/// pgvector's error for the first problem in the order pgvector finds it. `element` turns each
/// number as `strtof` read it (value, range error, spelling) into a checked element.
pub fn parse_dense<T>(
    lit: &CStr,
    type_name: &'static str,
    max_dim: usize,
    mut element: impl FnMut(f32, bool, &[u8]) -> T,
) -> Vec<T> {
    let bytes = lit.to_bytes_with_nul();
    let mut pos = skip_spaces(bytes, 0);
    if bytes[pos] != b'[' {
        invalid_syntax(
            type_name,
            lit,
            Some("Vector contents must start with \"[\"."),
        );
    }
    pos = skip_spaces(bytes, pos + 1);
    if bytes[pos] == b']' {
        check_dim(type_name, max_dim, 0);
    }

    let mut values = Vec::new();
    loop {
        // Raised before reading an element that would not fit.
        check_dim(type_name, max_dim, values.len() as i64 + 1);
        pos = skip_spaces(bytes, pos);
        // An empty element is a syntax error, as in float4in.
        if bytes[pos] == 0 {
            invalid_syntax(type_name, lit, None);
        }
        let (value, len, range_error) = strtof_at(bytes, pos);
        if len == 0 {
            invalid_syntax(type_name, lit, None);
        }
        values.push(element(value, range_error, &bytes[pos..pos + len]));

        pos = skip_spaces(bytes, pos + len);
        match bytes[pos] {
            b',' => pos += 1,
            b']' => {
                pos += 1;
                break;
            }
            _ => invalid_syntax(type_name, lit, None),
        }
    }

    // Only whitespace may follow the closing bracket.
    if bytes[skip_spaces(bytes, pos)] != 0 {
        invalid_syntax(type_name, lit, Some("Junk after closing right brace."));
    }
    values
}
