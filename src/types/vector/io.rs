//! Text and binary input/output of `vector`, and its type modifier.
//!
//! Text input accepts what pgvector accepts: `[` x `,` x ... `]` with whitespace around every
//! token, each element read by the C library's `strtof` (so hex floats, `inf` and `nan` spell
//! the same as there, and rounding is single-step). Output prints each element in the
//! shortest form that reads back exactly, like `float4out`.

use super::{check_dim, check_element, check_expected_dim};
use crate::fmgr;
use crate::types::layout::{VectorMut, VectorRef, VECTOR_MAX_DIM};
use pgrx::{ereport, pg_sys, PgSqlErrorCode};
use std::ffi::{c_char, c_int, CStr};

/// The whitespace pgvector skips between tokens (the SQL scanner's set).
fn is_vector_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// The position of the first non-space byte at or after `pos` (the NUL stops it).
fn skip_spaces(bytes: &[u8], mut pos: usize) -> usize {
    while is_vector_space(bytes[pos]) {
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

/// One `strtof` call at `bytes[pos]`: the value, how many bytes it consumed, and whether it
/// reported a range error.
fn strtof_at(bytes: &[u8], pos: usize) -> (f32, usize, bool) {
    debug_assert_eq!(bytes.last(), Some(&0));
    let start = bytes[pos..].as_ptr().cast::<c_char>();
    let mut end = start.cast_mut();
    // SAFETY: `bytes` ends with a NUL, so strtof reads within it and leaves `end` inside it;
    // errno is this thread's, and the server runs with LC_NUMERIC=C as pgvector assumes.
    unsafe {
        *errno_location() = 0;
        let value = libc::strtof(start, &mut end);
        let range_error = *errno_location() == libc::ERANGE;
        (value, end.offset_from(start) as usize, range_error)
    }
}

fn syntax_error(lit: &CStr, detail: Option<&str>) -> ! {
    let msg = format!(
        "invalid input syntax for type vector: \"{}\"",
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

/// Parses vector text into its elements, raising pgvector's error for the first problem in
/// the same order pgvector finds it.
fn parse_vector_text(lit: &CStr) -> Vec<f32> {
    let bytes = lit.to_bytes_with_nul();
    let mut pos = skip_spaces(bytes, 0);
    if bytes[pos] != b'[' {
        syntax_error(lit, Some("Vector contents must start with \"[\"."));
    }
    pos = skip_spaces(bytes, pos + 1);
    if bytes[pos] == b']' {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            "vector must have at least 1 dimension"
        );
    }

    let mut x = Vec::new();
    loop {
        if x.len() == VECTOR_MAX_DIM {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                format!("vector cannot have more than {VECTOR_MAX_DIM} dimensions")
            );
        }
        pos = skip_spaces(bytes, pos);
        if bytes[pos] == 0 {
            syntax_error(lit, None);
        }
        let (value, len, range_error) = strtof_at(bytes, pos);
        if len == 0 {
            syntax_error(lit, None);
        }
        if range_error && value.is_infinite() {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                format!(
                    "\"{}\" is out of range for type vector",
                    String::from_utf8_lossy(&bytes[pos..pos + len])
                )
            );
        }
        check_element(value);
        x.push(value);

        pos = skip_spaces(bytes, pos + len);
        match bytes[pos] {
            b',' => pos += 1,
            b']' => {
                pos += 1;
                break;
            }
            _ => syntax_error(lit, None),
        }
    }

    if bytes[skip_spaces(bytes, pos)] != 0 {
        syntax_error(lit, Some("Junk after closing right brace."));
    }
    x
}

/// Builds a vector from validated elements.
fn vector_from(x: &[f32]) -> pg_sys::Datum {
    let mut result = VectorMut::new(x.len());
    result.x().copy_from_slice(x);
    result.into_datum()
}

crate::sql_function! {
    /// `vector_in(cstring, oid, integer)`: text to vector, checked against the typmod.
    fn vector_in(call) {
        let lit = call.cstr(0);
        let typmod = call.i32(2);
        let x = parse_vector_text(lit);
        check_dim(x.len() as i32);
        check_expected_dim(typmod, x.len() as i32);
        vector_from(&x)
    }
}

crate::sql_function! {
    /// `vector_out(vector)`: `[x1,x2,...]` with shortest round-trip floats.
    fn vector_out(call) {
        let v = call.vector(0);
        let mut out = String::with_capacity(v.dim() * 16 + 3);
        out.push('[');
        for (i, &value) in v.x.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            fmgr::push_float4_shortest(&mut out, value);
        }
        out.push(']');
        fmgr::cstring_datum(&out)
    }
}

crate::sql_function! {
    /// `vector_typmod_in(cstring[])`: the `n` of `vector(n)`.
    fn vector_typmod_in(call) {
        let array = call.varlena(0).cast::<pg_sys::ArrayType>();
        let mut count: c_int = 0;
        // SAFETY: the argument is a detoasted cstring[]; the server routine validates it and
        // returns a palloc'd array of `count` int32s.
        let typmods = unsafe { pg_sys::ArrayGetIntegerTypmods(array, &mut count) };
        if count != 1 {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                "invalid type modifier"
            );
        }
        // SAFETY: count == 1, so one int32 is readable.
        let dims = unsafe { typmods.read() };
        if dims < 1 {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                "dimensions for type vector must be at least 1"
            );
        }
        if dims > VECTOR_MAX_DIM as i32 {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("dimensions for type vector cannot exceed {VECTOR_MAX_DIM}")
            );
        }
        fmgr::int32_datum(dims)
    }
}

/// Reads the next network-order float4 of a message. Whole floats are read in place; a
/// truncated one goes through `pq_getmsgfloat4`, which raises the server's own error.
fn next_float4(buf: *mut pg_sys::StringInfoData) -> f32 {
    // SAFETY: `buf` is the receive function's StringInfo: `data` holds `len` bytes and
    // `cursor` <= `len`; we advance the cursor past exactly the 4 bytes we read.
    unsafe {
        let (cursor, len) = ((*buf).cursor as usize, (*buf).len as usize);
        if len - cursor < 4 {
            return pg_sys::pq_getmsgfloat4(buf);
        }
        let mut bytes = [0u8; 4];
        std::ptr::copy_nonoverlapping((*buf).data.cast::<u8>().add(cursor), bytes.as_mut_ptr(), 4);
        (*buf).cursor += 4;
        f32::from_be_bytes(bytes)
    }
}

crate::sql_function! {
    /// `vector_recv(internal, oid, integer)`: int16 dim, int16 unused (must be 0), then dim
    /// float4s, all in network byte order. Short messages raise the server's own error.
    fn vector_recv(call) {
        let buf = call.internal::<pg_sys::StringInfoData>(0);
        let typmod = call.i32(2);
        // SAFETY: `buf` is the StringInfo the server passes to a receive function;
        // pq_getmsgint raises an ERROR rather than read past its end.
        let (dim, unused) = unsafe {
            (
                pg_sys::pq_getmsgint(buf, 2) as u16 as i16,
                pg_sys::pq_getmsgint(buf, 2) as u16 as i16,
            )
        };
        check_dim(dim as i32);
        check_expected_dim(typmod, dim as i32);
        if unused != 0 {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
                format!("expected unused to be 0, not {unused}")
            );
        }
        let mut result = VectorMut::new(dim as usize);
        for slot in result.x() {
            *slot = next_float4(buf);
            check_element(*slot);
        }
        result.into_datum()
    }
}

crate::sql_function! {
    /// `vector_send(vector)`: the layout `vector_recv` reads, as bytea.
    fn vector_send(call) {
        let ptr = call.varlena(0);
        // SAFETY: the argument is a detoasted vector; its int16 `unused` field sits at offset 6
        // and is sent as stored, like pgvector does.
        let (v, unused) = unsafe {
            (VectorRef::from_varlena(ptr), ptr.cast::<u8>().add(6).cast::<i16>().read())
        };
        let mut payload = Vec::with_capacity(4 + 4 * v.dim());
        payload.extend_from_slice(&(v.dim() as i16).to_be_bytes());
        payload.extend_from_slice(&unused.to_be_bytes());
        for value in v.x {
            payload.extend_from_slice(&value.to_bits().to_be_bytes());
        }
        let bytea = fmgr::palloc_varlena(4 + payload.len());
        // SAFETY: the block has room for the 4-byte header plus the payload.
        unsafe {
            std::ptr::copy_nonoverlapping(
                payload.as_ptr(),
                bytea.cast::<u8>().add(4),
                payload.len(),
            )
        };
        fmgr::pointer_datum(bytea)
    }
}
