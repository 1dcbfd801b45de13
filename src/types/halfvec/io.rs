//! Text and binary input/output of `halfvec`, and its type modifier.

use std::ffi::{c_char, CStr};

use half::f16;
use pgrx::{ereport, pg_sys, PgSqlErrorCode};

use super::{check_dim, check_element, check_expected_dim, to_half};
use crate::fmgr;
use crate::types::layout::{HalfvecMut, HalfvecRef, HALFVEC_MAX_DIM};

/// The whitespace Postgres's scanner accepts (`scanner_isspace`).
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn invalid_syntax(lit: &CStr, detail: Option<&str>) -> ! {
    let msg = format!(
        "invalid input syntax for type halfvec: \"{}\"",
        lit.to_string_lossy()
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

/// Parses `[x1,x2,...]`: each element with the C library's `strtof` (as pgvector does), then
/// rounded to half precision.
fn parse_halfvec(lit: &CStr) -> Vec<f16> {
    let bytes = lit.to_bytes_with_nul();
    let mut pos = 0;
    let skip_spaces = |pos: &mut usize| {
        while is_space(bytes[*pos]) {
            *pos += 1;
        }
    };

    skip_spaces(&mut pos);
    if bytes[pos] != b'[' {
        invalid_syntax(lit, Some("Vector contents must start with \"[\"."));
    }
    pos += 1;
    skip_spaces(&mut pos);
    if bytes[pos] == b']' {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
            "halfvec must have at least 1 dimension"
        );
    }

    let mut values = Vec::new();
    loop {
        if values.len() == HALFVEC_MAX_DIM {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                format!("halfvec cannot have more than {HALFVEC_MAX_DIM} dimensions")
            );
        }
        skip_spaces(&mut pos);
        // An empty element is a syntax error, as in float4in.
        if bytes[pos] == 0 {
            invalid_syntax(lit, None);
        }

        let (value, len, range_error) = scan_float4(&bytes[pos..]);
        if len == 0 {
            invalid_syntax(lit, None);
        }
        let h = to_half(value);
        if (range_error && value.is_infinite()) || (h.is_infinite() && !value.is_infinite()) {
            let token = String::from_utf8_lossy(&bytes[pos..pos + len]);
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                format!("\"{token}\" is out of range for type halfvec")
            );
        }
        check_element(h);
        values.push(h);
        pos += len;

        skip_spaces(&mut pos);
        match bytes[pos] {
            b',' => pos += 1,
            b']' => {
                pos += 1;
                break;
            }
            _ => invalid_syntax(lit, None),
        }
    }

    // Only whitespace may follow the closing bracket.
    skip_spaces(&mut pos);
    if bytes[pos] != 0 {
        invalid_syntax(lit, Some("Junk after closing right brace."));
    }
    values
}

/// Runs `strtof` at the start of `text` (NUL-terminated): the value, the number of bytes it
/// consumed (0 when nothing parses) and whether it reported ERANGE.
fn scan_float4(text: &[u8]) -> (f32, usize, bool) {
    debug_assert_eq!(text.last(), Some(&0));
    let start = text.as_ptr().cast::<c_char>();
    let mut end = start.cast_mut();
    // SAFETY: `text` is NUL-terminated, so strtof reads within it and leaves `end` inside it;
    // errno is this thread's, reset first so that only strtof's own report is seen.
    unsafe {
        *libc::__errno_location() = 0;
        let value = libc::strtof(start, &mut end);
        let range_error = *libc::__errno_location() == libc::ERANGE;
        let len = end.offset_from(start) as usize;
        (value, len, range_error)
    }
}

crate::sql_function! {
    fn halfvec_in(call) {
        let lit = call.cstr(0);
        let typmod = call.i32(2);
        let values = parse_halfvec(lit);
        let dim = values.len() as i32;
        check_dim(dim);
        check_expected_dim(typmod, dim);
        let mut result = HalfvecMut::new(values.len());
        result.x().copy_from_slice(&values);
        result.into_datum()
    }
}

crate::sql_function! {
    fn halfvec_out(call) {
        let v = call.halfvec(0);
        let mut text = String::with_capacity(2 + v.dim() * 8);
        text.push('[');
        for (i, h) in v.x.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            // Printed as the float4 it widens to, shortest round-trip form.
            fmgr::push_float4_shortest(&mut text, h.to_f32());
        }
        text.push(']');
        fmgr::cstring_datum(&text)
    }
}

crate::sql_function! {
    fn halfvec_typmod_in(call) {
        let array = call.varlena(0).cast::<pg_sys::ArrayType>();
        let mut n = 0;
        // SAFETY: the argument is a detoasted cstring[]; ArrayGetIntegerTypmods validates its
        // shape itself and returns `n` parsed integers.
        let typmods = unsafe {
            let ptr = pg_sys::ArrayGetIntegerTypmods(array, &mut n);
            std::slice::from_raw_parts(ptr, n.max(0) as usize)
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
                "dimensions for type halfvec must be at least 1"
            );
        }
        if dims > HALFVEC_MAX_DIM as i32 {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
                format!("dimensions for type halfvec cannot exceed {HALFVEC_MAX_DIM}")
            );
        }
        fmgr::int32_datum(dims)
    }
}

crate::sql_function! {
    fn halfvec_recv(call) {
        let buf = call.internal::<pg_sys::StringInfoData>(0);
        let typmod = call.i32(2);
        // SAFETY: the argument is the StringInfo that the server hands to a receive function;
        // pq_getmsgint raises an ERROR instead of reading past its end.
        let read_u16 = || unsafe { pg_sys::pq_getmsgint(buf, 2) as u16 };

        let dim = read_u16() as i16;
        let unused = read_u16() as i16;
        check_dim(dim.into());
        check_expected_dim(typmod, dim.into());
        if unused != 0 {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_DATA_EXCEPTION,
                format!("expected unused to be 0, not {unused}")
            );
        }

        let mut result = HalfvecMut::new(dim as usize);
        for x in result.x() {
            *x = f16::from_bits(read_u16());
            check_element(*x);
        }
        result.into_datum()
    }
}

crate::sql_function! {
    fn halfvec_send(call) {
        let ptr = call.varlena(0);
        // SAFETY: the argument is a detoasted halfvec that lives for the whole call.
        let v = unsafe { HalfvecRef::from_varlena(ptr) };
        // SAFETY: a halfvec's `unused` int16 sits at offset 6 of its 8-byte header.
        let unused = unsafe { ptr.cast::<u8>().add(6).cast::<i16>().read() };

        // The payload in network byte order: dim, unused, then each half's bits.
        let mut payload = Vec::with_capacity(4 + 2 * v.dim());
        payload.extend_from_slice(&(v.dim() as i16).to_be_bytes());
        payload.extend_from_slice(&unused.to_be_bytes());
        for h in v.x {
            payload.extend_from_slice(&h.to_bits().to_be_bytes());
        }

        let bytea = fmgr::palloc_varlena(4 + payload.len());
        // SAFETY: the bytea was allocated with room for the payload after its 4-byte header.
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
