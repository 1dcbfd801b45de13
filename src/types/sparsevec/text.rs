//! Text input and output (`{1:1.5,3:2}/5`: 1-based indices in text, 0-based in storage) and
//! the type modifier.

use super::{check_dim, check_element, check_expected_dim, check_index, raise, TYPE_NAME};
use crate::fmgr;
use crate::types::checks::out_of_range;
use crate::types::layout::{SparsevecMut, SPARSEVEC_MAX_DIM, SPARSEVEC_MAX_NNZ};
use crate::types::text_input::{invalid_syntax, skip_spaces, strtof_at};
use crate::types::typmod::dims_typmod_in;
use pgrx::PgSqlErrorCode::{ERRCODE_INVALID_TEXT_REPRESENTATION, ERRCODE_PROGRAM_LIMIT_EXCEEDED};
use std::ffi::{c_char, CStr};

/// A cursor over the NUL-terminated input. Numbers are read with the C library's `strtol` and
/// `strtof` (Postgres runs with LC_NUMERIC=C), so the accepted spellings (signs, exponents,
/// `inf`, `nan`, hex floats) and range errors are exactly those of pgvector's parser.
struct Cursor<'a> {
    lit: &'a CStr,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(lit: &'a CStr) -> Self {
        Self {
            lit,
            bytes: lit.to_bytes_with_nul(),
            pos: 0,
        }
    }

    /// The current byte (NUL at the end).
    fn peek(&self) -> u8 {
        self.bytes[self.pos]
    }

    fn skip_spaces(&mut self) {
        self.pos = skip_spaces(self.bytes, self.pos);
    }

    fn here(&self) -> *const c_char {
        // SAFETY: `pos` never passes the terminating NUL, which is part of `bytes`.
        unsafe { self.lit.as_ptr().add(self.pos) }
    }

    /// Parses a base-10 `long` at the cursor; `None` if no digits were found.
    fn long(&mut self) -> Option<i64> {
        let mut end: *mut c_char = std::ptr::null_mut();
        // SAFETY: `here()` points into a NUL-terminated string; strtol stops at or before the
        // NUL and stores where it stopped in `end`.
        let value = unsafe { libc::strtol(self.here(), &mut end, 10) } as i64;
        self.advance_to(end).then_some(value)
    }

    /// Parses a float4 at the cursor. Returns the value, whether the parser reported a range
    /// error, and the text it consumed; `None` if nothing was parsed.
    fn float(&mut self) -> Option<(f32, bool, &'a [u8])> {
        let start = self.pos;
        let (value, len, range_error) = strtof_at(self.bytes, start);
        if len == 0 {
            return None;
        }
        self.pos += len;
        Some((value, range_error, &self.bytes[start..self.pos]))
    }

    /// Moves to `end` (a pointer into the input returned by a C parser); false if it did not
    /// move.
    fn advance_to(&mut self, end: *mut c_char) -> bool {
        let offset = end as usize - self.lit.as_ptr() as usize;
        let moved = offset != self.pos;
        self.pos = offset;
        moved
    }

    fn invalid(&self) -> ! {
        invalid_syntax(TYPE_NAME, self.lit, None)
    }

    fn invalid_with(&self, detail: &str) -> ! {
        invalid_syntax(TYPE_NAME, self.lit, Some(detail))
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(self.lit.to_bytes()).into_owned()
    }
}

/// Parses the text form into (0-based index, value) pairs, sorted, and the dimension count.
fn parse(lit: &CStr, typmod: i32) -> (i32, Vec<(i32, f32)>) {
    // Each element but the last is followed by a comma, which bounds the element count.
    let max_nnz = 1 + lit.to_bytes().iter().filter(|&&b| b == b',').count();
    if max_nnz > SPARSEVEC_MAX_NNZ {
        raise(
            ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("sparsevec cannot have more than {SPARSEVEC_MAX_NNZ} non-zero elements"),
        );
    }
    let mut elements: Vec<(i32, f32)> = Vec::with_capacity(max_nnz);
    let mut cur = Cursor::new(lit);

    cur.skip_spaces();
    if cur.peek() != b'{' {
        cur.invalid_with("Vector contents must start with \"{\".");
    }
    cur.pos += 1;
    cur.skip_spaces();

    if cur.peek() == b'}' {
        cur.pos += 1;
    } else {
        loop {
            if elements.len() == max_nnz {
                raise(
                    ERRCODE_INVALID_TEXT_REPRESENTATION,
                    format!("ran out of buffer: \"{}\"", cur.text()),
                );
            }
            cur.skip_spaces();
            if cur.peek() == 0 {
                cur.invalid();
            }
            let Some(index) = cur.long() else {
                cur.invalid()
            };
            // Clamp into int range so that the bounds check reports it.
            let index = index.clamp(i32::MIN as i64 + 1, i32::MAX as i64) as i32;

            cur.skip_spaces();
            if cur.peek() != b':' {
                cur.invalid();
            }
            cur.pos += 1;
            cur.skip_spaces();

            let Some((value, range_error, spelled)) = cur.float() else {
                cur.invalid()
            };
            if range_error && (value == 0.0 || value.is_infinite()) {
                out_of_range(TYPE_NAME, &String::from_utf8_lossy(spelled));
            }
            check_element(value);
            // Zeros are not stored.
            if value != 0.0 {
                elements.push((index - 1, value));
            }

            cur.skip_spaces();
            match cur.peek() {
                b',' => cur.pos += 1,
                b'}' => {
                    cur.pos += 1;
                    break;
                }
                _ => cur.invalid(),
            }
        }
    }

    cur.skip_spaces();
    if cur.peek() != b'/' {
        cur.invalid_with("Unexpected end of input.");
    }
    cur.pos += 1;
    cur.skip_spaces();
    let Some(dim) = cur.long() else { cur.invalid() };
    let dim = dim.clamp(i32::MIN as i64, i32::MAX as i64);
    cur.skip_spaces();
    if cur.peek() != 0 {
        cur.invalid_with("Junk after closing.");
    }

    check_dim(dim);
    check_expected_dim(typmod, dim);
    let dim = dim as i32;

    // Only duplicate indices compare equal, and those are rejected below, so an unstable sort
    // gives the same result as any other.
    elements.sort_unstable_by_key(|&(index, _)| index);
    let mut previous = None;
    for &(index, _) in &elements {
        check_index(index, previous, dim);
        previous = Some(index);
    }
    (dim, elements)
}

crate::sql_function! {
    fn sparsevec_in(call) {
        let (dim, elements) = parse(call.cstr(0), call.i32(2));
        let mut result = SparsevecMut::new(dim, elements.len());
        let (indices, values) = result.parts();
        for (k, (index, value)) in elements.into_iter().enumerate() {
            indices[k] = index;
            values[k] = value;
        }
        result.into_datum()
    }
}

crate::sql_function! {
    fn sparsevec_out(call) {
        let svec = call.sparsevec(0);
        let mut out = String::with_capacity(16 + svec.nnz() * 24);
        out.push('{');
        for (k, (&index, &value)) in svec.indices.iter().zip(svec.values).enumerate() {
            if k > 0 {
                out.push(',');
            }
            // Text uses 1-based indices.
            out.push_str(&(index as i64 + 1).to_string());
            out.push(':');
            fmgr::push_float4_shortest(&mut out, value);
        }
        out.push_str("}/");
        out.push_str(&svec.dim.to_string());
        fmgr::cstring_datum(&out)
    }
}

crate::sql_function! {
    fn sparsevec_typmod_in(call) {
        dims_typmod_in(&call, TYPE_NAME, SPARSEVEC_MAX_DIM)
    }
}
