//! Text input of the types: `[x1,x2,...]` for `vector` and `halfvec`, `{i:v,...}/dim` for
//! `sparsevec` (1-based indices in text, 0-based in storage).
//!
//! Every parser returns the first problem in the order pgvector finds it, including the
//! per-element checks made while parsing. Numbers are read with the C library's `strtof` and
//! `strtol` (the server runs with LC_NUMERIC=C, as pgvector assumes), so hex floats, `inf`,
//! `nan`, signs and range errors spell the same as there and rounding is single-step.

use crate::checks::{check_dim, check_expected_dim, check_finite, check_index, out_of_range};
use crate::error::ParseError;
use crate::varlena::{
    DenseElement, SparsevecParts, HALFVEC_MAX_DIM, SPARSEVEC_MAX_DIM, SPARSEVEC_MAX_NNZ,
    VECTOR_MAX_DIM,
};
use half::f16;
use std::ffi::{c_char, c_int, CStr};

const VECTOR: &str = <f32 as DenseElement>::TYPE_NAME;
const HALFVEC: &str = <f16 as DenseElement>::TYPE_NAME;
const SPARSEVEC: &str = "sparsevec";

/// The whitespace pgvector skips between tokens (the SQL scanner's `scanner_isspace` set).
fn is_scanner_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Parses `vector` text, checked against the type modifier `typmod` (`-1` for none).
pub fn parse_vector(input: &CStr, typmod: i32) -> Result<Vec<f32>, ParseError> {
    let x = parse_dense(
        input,
        VECTOR,
        VECTOR_MAX_DIM,
        |value, range_error, spelled| {
            if range_error && value.is_infinite() {
                return Err(out_of_range(VECTOR, &String::from_utf8_lossy(spelled)));
            }
            check_finite(VECTOR, value)?;
            Ok(value)
        },
    )?;
    check_dim(VECTOR, VECTOR_MAX_DIM, x.len() as i64)?;
    check_expected_dim(typmod, x.len() as i64)?;
    Ok(x)
}

/// Parses `halfvec` text: each element read as a float4, then rounded to half precision.
pub fn parse_halfvec(input: &CStr, typmod: i32) -> Result<Vec<f16>, ParseError> {
    let x = parse_dense(
        input,
        HALFVEC,
        HALFVEC_MAX_DIM,
        |value, range_error, spelled| {
            let h = f16::from_f32(value);
            // A finite float4 that rounds to an infinite half is out of range too.
            if (range_error && value.is_infinite()) || (h.is_infinite() && !value.is_infinite()) {
                return Err(out_of_range(HALFVEC, &String::from_utf8_lossy(spelled)));
            }
            check_finite(HALFVEC, h.to_f32())?;
            Ok(h)
        },
    )?;
    check_dim(HALFVEC, HALFVEC_MAX_DIM, x.len() as i64)?;
    check_expected_dim(typmod, x.len() as i64)?;
    Ok(x)
}

/// Parses `[x1,x2,...]` for the dense type `type_name` (at most `max_dim` elements).
/// `element` turns each number as `strtof` read it (value, range error, spelling) into a
/// checked element; its error stops the parse where pgvector's would.
pub fn parse_dense<T>(
    input: &CStr,
    type_name: &'static str,
    max_dim: usize,
    mut element: impl FnMut(f32, bool, &[u8]) -> Result<T, ParseError>,
) -> Result<Vec<T>, ParseError> {
    let mut s = Scanner::new(input);
    s.skip_spaces();
    if s.peek() != b'[' {
        return Err(s.syntax_error(type_name, Some("Vector contents must start with \"[\".")));
    }
    s.pos += 1;
    s.skip_spaces();
    if s.peek() == b']' {
        check_dim(type_name, max_dim, 0)?;
    }

    let mut values = Vec::new();
    loop {
        // Raised before reading an element that would not fit.
        check_dim(type_name, max_dim, values.len() as i64 + 1)?;
        s.skip_spaces();
        // An empty element is a syntax error, as in float4in.
        if s.peek() == 0 {
            return Err(s.syntax_error(type_name, None));
        }
        let Some((value, range_error, spelled)) = s.float() else {
            return Err(s.syntax_error(type_name, None));
        };
        values.push(element(value, range_error, spelled)?);

        s.skip_spaces();
        match s.peek() {
            b',' => s.pos += 1,
            b']' => {
                s.pos += 1;
                break;
            }
            _ => return Err(s.syntax_error(type_name, None)),
        }
    }

    // Only whitespace may follow the closing bracket.
    s.skip_spaces();
    if s.peek() != 0 {
        return Err(s.syntax_error(type_name, Some("Junk after closing right brace.")));
    }
    Ok(values)
}

/// Parses `sparsevec` text into sorted 0-based indices and their non-zero values, checked
/// against the type modifier `typmod` (`-1` for none).
pub fn parse_sparsevec(input: &CStr, typmod: i32) -> Result<SparsevecParts, ParseError> {
    // Each element but the last is followed by a comma, which bounds the element count.
    let max_nnz = 1 + input.to_bytes().iter().filter(|&&b| b == b',').count();
    if max_nnz > SPARSEVEC_MAX_NNZ {
        return Err(ParseError::TooManyNonZero {
            max_nnz: SPARSEVEC_MAX_NNZ,
        });
    }
    let mut elements: Vec<(i32, f32)> = Vec::with_capacity(max_nnz);
    let mut s = Scanner::new(input);
    let syntax = |s: &Scanner, detail| s.syntax_error(SPARSEVEC, detail);

    s.skip_spaces();
    if s.peek() != b'{' {
        return Err(syntax(&s, Some("Vector contents must start with \"{\".")));
    }
    s.pos += 1;
    s.skip_spaces();

    if s.peek() == b'}' {
        s.pos += 1;
    } else {
        loop {
            if elements.len() == max_nnz {
                return Err(ParseError::RanOutOfBuffer { input: s.text() });
            }
            s.skip_spaces();
            if s.peek() == 0 {
                return Err(syntax(&s, None));
            }
            let Some(index) = s.long() else {
                return Err(syntax(&s, None));
            };
            // Clamped into int range so that the bounds check reports it.
            let index = index.clamp(i32::MIN as i64 + 1, i32::MAX as i64) as i32;

            s.skip_spaces();
            if s.peek() != b':' {
                return Err(syntax(&s, None));
            }
            s.pos += 1;
            s.skip_spaces();

            let Some((value, range_error, spelled)) = s.float() else {
                return Err(syntax(&s, None));
            };
            // Unlike the dense types, an underflow to zero is out of range too.
            if range_error && (value == 0.0 || value.is_infinite()) {
                return Err(out_of_range(SPARSEVEC, &String::from_utf8_lossy(spelled)));
            }
            check_finite(SPARSEVEC, value)?;
            // Zeros are not stored.
            if value != 0.0 {
                elements.push((index - 1, value));
            }

            s.skip_spaces();
            match s.peek() {
                b',' => s.pos += 1,
                b'}' => {
                    s.pos += 1;
                    break;
                }
                _ => return Err(syntax(&s, None)),
            }
        }
    }

    s.skip_spaces();
    if s.peek() != b'/' {
        return Err(syntax(&s, Some("Unexpected end of input.")));
    }
    s.pos += 1;
    s.skip_spaces();
    let Some(dim) = s.long() else {
        return Err(syntax(&s, None));
    };
    let dim = dim.clamp(i32::MIN as i64, i32::MAX as i64);
    s.skip_spaces();
    if s.peek() != 0 {
        return Err(syntax(&s, Some("Junk after closing.")));
    }

    check_dim(SPARSEVEC, SPARSEVEC_MAX_DIM, dim)?;
    check_expected_dim(typmod, dim)?;
    let dim = dim as i32;

    // Only duplicate indices compare equal, and those are rejected below, so an unstable sort
    // gives the same result as any other.
    elements.sort_unstable_by_key(|&(index, _)| index);
    let mut previous = None;
    for &(index, _) in &elements {
        check_index(index, previous, dim)?;
        previous = Some(index);
    }
    let (indices, values) = elements.into_iter().unzip();
    Ok(SparsevecParts {
        dim,
        indices,
        values,
    })
}

/// A position in NUL-terminated input. `pos` never passes the NUL: it only moves past bytes
/// that were looked at and are not NUL, or to where `strtof`/`strtol` stopped.
struct Scanner<'a> {
    input: &'a CStr,
    /// The input with its NUL.
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    fn new(input: &'a CStr) -> Self {
        Self {
            input,
            bytes: input.to_bytes_with_nul(),
            pos: 0,
        }
    }

    /// The current byte (NUL at the end).
    fn peek(&self) -> u8 {
        self.bytes[self.pos]
    }

    fn skip_spaces(&mut self) {
        while is_scanner_space(self.peek()) {
            self.pos += 1;
        }
    }

    fn here(&self) -> *const c_char {
        self.bytes[self.pos..].as_ptr().cast()
    }

    /// One `strtof` call here: the value, whether it reported a range error, and the bytes it
    /// consumed; `None` when nothing parses.
    fn float(&mut self) -> Option<(f32, bool, &'a [u8])> {
        let start = self.here();
        let mut end = start.cast_mut();
        // SAFETY: `start` points into NUL-terminated input, so strtof reads within it and
        // leaves `end` inside it; errno is this thread's, reset first so that only strtof's
        // own report is seen.
        let (value, len, range_error) = unsafe {
            *errno_location() = 0;
            let value = libc::strtof(start, &mut end);
            let range_error = *errno_location() == libc::ERANGE;
            (value, end.offset_from(start) as usize, range_error)
        };
        if len == 0 {
            return None;
        }
        let spelled = &self.bytes[self.pos..self.pos + len];
        self.pos += len;
        Some((value, range_error, spelled))
    }

    /// One base-10 `strtol` call here; `None` when it finds no digits.
    fn long(&mut self) -> Option<i64> {
        let start = self.here();
        let mut end = start.cast_mut();
        // SAFETY: `start` points into NUL-terminated input; strtol stops at or before the NUL
        // and stores where it stopped in `end`.
        let (value, len) = unsafe {
            let value = libc::strtol(start, &mut end, 10);
            (value, end.offset_from(start) as usize)
        };
        if len == 0 {
            return None;
        }
        self.pos += len;
        // `long` is 64 bits here but 32 on some targets.
        #[allow(clippy::unnecessary_cast)]
        Some(value as i64)
    }

    /// The input without its NUL, as the messages quote it.
    fn text(&self) -> String {
        String::from_utf8_lossy(self.input.to_bytes()).into_owned()
    }

    fn syntax_error(&self, type_name: &'static str, detail: Option<&'static str>) -> ParseError {
        ParseError::InvalidSyntax {
            type_name,
            input: self.text(),
            detail,
        }
    }
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
