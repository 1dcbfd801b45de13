//! pgvector's validity checks of a value's parts, shared by the text and binary input paths
//! (and by the extension's casts and arithmetic), each returning pgvector's error.

use crate::error::ParseError;
use crate::varlena::SPARSEVEC_MAX_NNZ;

/// A dimension count must lie in `1..=max_dim`.
pub fn check_dim(type_name: &'static str, max_dim: usize, dim: i64) -> Result<(), ParseError> {
    if dim < 1 {
        return Err(ParseError::TooFewDimensions { type_name });
    }
    if dim > max_dim as i64 {
        return Err(ParseError::TooManyDimensions { type_name, max_dim });
    }
    Ok(())
}

/// A type modifier (`-1` for none) must not ask for another dimension count.
pub fn check_expected_dim(typmod: i32, dim: i64) -> Result<(), ParseError> {
    if typmod != -1 && i64::from(typmod) != dim {
        return Err(ParseError::WrongDimensions { typmod, dim });
    }
    Ok(())
}

/// A stored element is never NaN nor infinite.
pub fn check_finite(type_name: &'static str, value: f32) -> Result<(), ParseError> {
    if value.is_nan() {
        return Err(ParseError::NotANumber { type_name });
    }
    if value.is_infinite() {
        return Err(ParseError::Infinite { type_name });
    }
    Ok(())
}

/// A sparsevec's count of stored elements must be within the limits and at most `dim`.
pub fn check_nnz(nnz: i64, dim: i64) -> Result<(), ParseError> {
    if nnz < 0 {
        return Err(ParseError::NegativeNnz);
    }
    if nnz > SPARSEVEC_MAX_NNZ as i64 {
        return Err(ParseError::TooManyNonZero {
            max_nnz: SPARSEVEC_MAX_NNZ,
        });
    }
    if nnz > dim {
        return Err(ParseError::MoreElementsThanDimensions);
    }
    Ok(())
}

/// A sparsevec's 0-based `index` must lie in `0..dim` and come strictly after `previous`.
pub fn check_index(index: i32, previous: Option<i32>, dim: i32) -> Result<(), ParseError> {
    if index < 0 || index >= dim {
        return Err(ParseError::IndexOutOfBounds);
    }
    match previous {
        Some(previous) if index < previous => Err(ParseError::IndicesNotAscending),
        Some(previous) if index == previous => Err(ParseError::DuplicateIndex),
        _ => Ok(()),
    }
}

/// The "out of range" error for an element spelled `spelled` that `type_name` cannot hold.
pub fn out_of_range(type_name: &'static str, spelled: &str) -> ParseError {
    ParseError::OutOfRange {
        type_name,
        spelled: spelled.to_owned(),
    }
}
