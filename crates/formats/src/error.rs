//! The errors of the text and binary input paths and of the value checks, each with the
//! SQLSTATE and the message text pgvector raises for it.

use std::fmt;

/// The SQLSTATE an error is raised with; the extension maps each to Postgres's errcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    /// 22P02 `invalid_text_representation`.
    InvalidTextRepresentation,
    /// 22000 `data_exception`.
    DataException,
    /// 54000 `program_limit_exceeded`.
    ProgramLimitExceeded,
    /// 22003 `numeric_value_out_of_range`.
    NumericValueOutOfRange,
    /// 08P01 `protocol_violation`.
    ProtocolViolation,
    /// XX001 `data_corrupted`.
    DataCorrupted,
}

/// Why a value was rejected: the first problem found, in the order pgvector checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// `invalid input syntax for type T: "input"`, with an optional detail line.
    InvalidSyntax {
        type_name: &'static str,
        input: String,
        detail: Option<&'static str>,
    },
    /// The sparsevec text parser found more elements than it made room for.
    RanOutOfBuffer {
        input: String,
    },
    /// `T must have at least 1 dimension`.
    TooFewDimensions {
        type_name: &'static str,
    },
    /// `T cannot have more than MAX dimensions`.
    TooManyDimensions {
        type_name: &'static str,
        max_dim: usize,
    },
    /// A type modifier asked for `typmod` dimensions.
    WrongDimensions {
        typmod: i32,
        dim: i64,
    },
    NotANumber {
        type_name: &'static str,
    },
    Infinite {
        type_name: &'static str,
    },
    /// `"spelled" is out of range for type T`.
    OutOfRange {
        type_name: &'static str,
        spelled: String,
    },
    NegativeNnz,
    TooManyNonZero {
        max_nnz: usize,
    },
    MoreElementsThanDimensions,
    IndexOutOfBounds,
    IndicesNotAscending,
    DuplicateIndex,
    /// A received header's `unused` field was not 0.
    UnusedNotZero {
        unused: i32,
    },
    /// A received sparsevec stores a zero.
    ZeroValue,
    /// The message ended inside a field; the server raises this itself when its reader runs
    /// out, so the extension lets the server's routine raise it.
    MessageTooShort,
}

impl ParseError {
    pub fn code(&self) -> ErrorCode {
        use ParseError::*;
        match self {
            InvalidSyntax { .. } | RanOutOfBuffer { .. } => ErrorCode::InvalidTextRepresentation,
            TooManyDimensions { .. } | TooManyNonZero { .. } | MoreElementsThanDimensions => {
                ErrorCode::ProgramLimitExceeded
            }
            OutOfRange { .. } => ErrorCode::NumericValueOutOfRange,
            MessageTooShort => ErrorCode::ProtocolViolation,
            TooFewDimensions { .. }
            | WrongDimensions { .. }
            | NotANumber { .. }
            | Infinite { .. }
            | NegativeNnz
            | IndexOutOfBounds
            | IndicesNotAscending
            | DuplicateIndex
            | UnusedNotZero { .. }
            | ZeroValue => ErrorCode::DataException,
        }
    }

    /// The primary message, exactly pgvector's.
    pub fn message(&self) -> String {
        self.to_string()
    }

    /// The detail line, if pgvector gives one.
    pub fn detail(&self) -> Option<&'static str> {
        match self {
            ParseError::InvalidSyntax { detail, .. } => *detail,
            _ => None,
        }
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ParseError::*;
        match self {
            InvalidSyntax {
                type_name, input, ..
            } => write!(f, "invalid input syntax for type {type_name}: \"{input}\""),
            RanOutOfBuffer { input } => write!(f, "ran out of buffer: \"{input}\""),
            TooFewDimensions { type_name } => {
                write!(f, "{type_name} must have at least 1 dimension")
            }
            TooManyDimensions { type_name, max_dim } => {
                write!(f, "{type_name} cannot have more than {max_dim} dimensions")
            }
            WrongDimensions { typmod, dim } => {
                write!(f, "expected {typmod} dimensions, not {dim}")
            }
            NotANumber { type_name } => write!(f, "NaN not allowed in {type_name}"),
            Infinite { type_name } => write!(f, "infinite value not allowed in {type_name}"),
            OutOfRange { type_name, spelled } => {
                write!(f, "\"{spelled}\" is out of range for type {type_name}")
            }
            NegativeNnz => f.write_str("sparsevec cannot have negative number of elements"),
            TooManyNonZero { max_nnz } => {
                write!(
                    f,
                    "sparsevec cannot have more than {max_nnz} non-zero elements"
                )
            }
            MoreElementsThanDimensions => {
                f.write_str("sparsevec cannot have more elements than dimensions")
            }
            IndexOutOfBounds => f.write_str("sparsevec index out of bounds"),
            IndicesNotAscending => f.write_str("sparsevec indices must be in ascending order"),
            DuplicateIndex => f.write_str("sparsevec indices must not contain duplicates"),
            UnusedNotZero { unused } => write!(f, "expected unused to be 0, not {unused}"),
            ZeroValue => {
                f.write_str("binary representation of sparsevec cannot contain zero values")
            }
            MessageTooShort => f.write_str("insufficient data left in message"),
        }
    }
}

impl std::error::Error for ParseError {}
