//! Byte layouts of the types as Postgres stores them, and checked readers over a whole
//! detoasted varlena (its 4-byte header included). Fields are in the machine's byte order.
//!
//! ```text
//! vector:    int32 vl_len_, int16 dim, int16 unused, float4 x[dim]
//! halfvec:   int32 vl_len_, int16 dim, int16 unused, half x[dim]
//! sparsevec: int32 vl_len_, int32 dim, int32 nnz, int32 unused, int32 indices[nnz] (0-based),
//!            float4 values[nnz]
//! bit:       int32 vl_len_, int32 bit length, bytes[(bit length + 7) / 8] (Postgres's VarBit)
//! ```
//!
//! The readers check the counts against the byte length, so that a corrupted datum is an
//! error instead of a slice past its end. Valid values are borrowed in place, not copied.

use crate::error::ErrorCode;
use half::f16;
use std::fmt;

pub const VECTOR_MAX_DIM: usize = 16000;
pub const HALFVEC_MAX_DIM: usize = 16000;
pub const SPARSEVEC_MAX_DIM: usize = 1_000_000_000;
pub const SPARSEVEC_MAX_NNZ: usize = 16000;

/// The 4-byte varlena header (`VARHDRSZ`).
pub const VARHDRSZ: usize = 4;

/// The header of a vector or halfvec: vl_len_, dim, unused.
pub const DENSE_HEADER: usize = 8;
pub const DENSE_DIM_OFFSET: usize = 4;
pub const DENSE_UNUSED_OFFSET: usize = 6;

/// The header of a sparsevec: vl_len_, dim, nnz, unused.
pub const SPARSEVEC_HEADER: usize = 16;
pub const SPARSEVEC_DIM_OFFSET: usize = 4;
pub const SPARSEVEC_NNZ_OFFSET: usize = 8;
pub const SPARSEVEC_UNUSED_OFFSET: usize = 12;

/// The header of a bit string: vl_len_, bit length.
pub const BIT_HEADER: usize = 8;
pub const BIT_LEN_OFFSET: usize = 4;

/// The byte size of a vector (`T = f32`) or halfvec (`T = f16`) of `dim` dimensions.
pub const fn dense_size<T>(dim: usize) -> usize {
    DENSE_HEADER + size_of::<T>() * dim
}

/// The byte size of a sparsevec storing `nnz` elements.
pub const fn sparsevec_size(nnz: usize) -> usize {
    SPARSEVEC_HEADER + (size_of::<i32>() + size_of::<f32>()) * nnz
}

/// The byte size of a bit string of `bit_len` bits (`VARBITTOTALLEN`).
pub const fn bit_size(bit_len: usize) -> usize {
    BIT_HEADER + bit_len.div_ceil(8)
}

/// The size an uncompressed 4-byte varlena header gives, `None` for any other header kind.
pub fn varsize_4b(datum: &[u8]) -> Option<usize> {
    let word = u32::from_ne_bytes(datum.get(..VARHDRSZ)?.try_into().ok()?);
    // Postgres puts the two flag bits at the low end of the word on little-endian machines
    // and at the high end on big-endian ones.
    #[cfg(target_endian = "little")]
    let size = (word & 0x3 == 0).then_some(word >> 2);
    #[cfg(target_endian = "big")]
    let size = (word & 0xC000_0000 == 0).then_some(word & 0x3FFF_FFFF);
    size.map(|size| size as usize)
}

/// The uncompressed 4-byte varlena header of a `total`-byte datum (`SET_VARSIZE`).
///
/// # Panics
/// If `total` does not fit the header's 30 bits.
pub fn header_4b(total: usize) -> [u8; 4] {
    assert!(total <= 0x3FFF_FFFF, "varlena of {total} bytes");
    #[cfg(target_endian = "little")]
    let word = (total as u32) << 2;
    #[cfg(target_endian = "big")]
    let word = total as u32;
    word.to_ne_bytes()
}

/// Element types that may be read in place from datum bytes.
///
/// # Safety
/// An implementor must be plain data for which every bit pattern, all zeros included, is a
/// valid value, with an alignment of at most 4 (a datum is 4-aligned, and the fields before
/// the arrays keep them so).
pub unsafe trait PlainData: Copy {}

// SAFETY: float4 is plain 4-byte data; every bit pattern is some float.
unsafe impl PlainData for f32 {}
// SAFETY: half is plain 2-byte data; every bit pattern is some half.
unsafe impl PlainData for f16 {}
// SAFETY: int32 is plain 4-byte data; every bit pattern is some integer.
unsafe impl PlainData for i32 {}

/// The element types of the dense layouts: float4 for `vector`, half for `halfvec`.
pub trait DenseElement: PlainData {
    /// The SQL type whose elements these are.
    const TYPE_NAME: &'static str;
    /// The most dimensions a value of the type may have.
    const MAX_DIM: usize;
}

impl DenseElement for f32 {
    const TYPE_NAME: &'static str = "vector";
    const MAX_DIM: usize = VECTOR_MAX_DIM;
}

impl DenseElement for f16 {
    const TYPE_NAME: &'static str = "halfvec";
    const MAX_DIM: usize = HALFVEC_MAX_DIM;
}

/// A `vector` (`T = f32`) or `halfvec` (`T = f16`) datum: the two share one layout and differ
/// only in the element type.
#[derive(Clone, Copy, Debug)]
pub struct DenseRef<'a, T> {
    pub x: &'a [T],
    /// The header's `unused` field, which binary send passes on as stored.
    pub unused: i16,
}

pub type VectorRef<'a> = DenseRef<'a, f32>;
pub type HalfvecRef<'a> = DenseRef<'a, f16>;

impl<'a, T: DenseElement> DenseRef<'a, T> {
    /// Reads a whole detoasted datum of the dense type, header included.
    pub fn read(datum: &'a [u8]) -> Result<Self, VarlenaError> {
        let fail = |problem| VarlenaError {
            type_name: T::TYPE_NAME,
            problem,
        };
        check_varlena(datum, DENSE_HEADER).map_err(fail)?;
        let dim = i64::from(ne_i16(datum, DENSE_DIM_OFFSET));
        let unused = ne_i16(datum, DENSE_UNUSED_OFFSET);
        check_count("dimension count", dim, T::MAX_DIM).map_err(fail)?;
        let expected = dense_size::<T>(dim as usize);
        check_length("dimension count", dim, expected, datum.len()).map_err(fail)?;
        let x = plain_slice(&datum[DENSE_HEADER..]).ok_or_else(|| fail(Corruption::Misaligned))?;
        Ok(Self { x, unused })
    }

    pub fn dim(&self) -> usize {
        self.x.len()
    }
}

/// Reads a `vector` datum.
pub fn read_vector(datum: &[u8]) -> Result<VectorRef<'_>, VarlenaError> {
    DenseRef::read(datum)
}

/// Reads a `halfvec` datum.
pub fn read_halfvec(datum: &[u8]) -> Result<HalfvecRef<'_>, VarlenaError> {
    DenseRef::read(datum)
}

/// A `sparsevec` datum. `indices` are 0-based and, in a valid value, strictly increasing and
/// below `dim` (the reader checks only the sizes, which is what keeps reads in bounds).
#[derive(Clone, Copy, Debug)]
pub struct SparsevecRef<'a> {
    pub dim: i32,
    /// The header's `unused` field, which binary send passes on as stored.
    pub unused: i32,
    pub indices: &'a [i32],
    pub values: &'a [f32],
}

impl<'a> SparsevecRef<'a> {
    /// Reads a whole detoasted `sparsevec` datum, header included.
    pub fn read(datum: &'a [u8]) -> Result<Self, VarlenaError> {
        let fail = |problem| VarlenaError {
            type_name: "sparsevec",
            problem,
        };
        check_varlena(datum, SPARSEVEC_HEADER).map_err(fail)?;
        let dim = ne_i32(datum, SPARSEVEC_DIM_OFFSET);
        let nnz = i64::from(ne_i32(datum, SPARSEVEC_NNZ_OFFSET));
        let unused = ne_i32(datum, SPARSEVEC_UNUSED_OFFSET);
        check_count("dimension count", i64::from(dim), SPARSEVEC_MAX_DIM).map_err(fail)?;
        check_count("element count", nnz, SPARSEVEC_MAX_NNZ).map_err(fail)?;
        let nnz = nnz as usize;
        let expected = sparsevec_size(nnz);
        check_length("element count", nnz as i64, expected, datum.len()).map_err(fail)?;
        let (indices, values) = datum[SPARSEVEC_HEADER..].split_at(size_of::<i32>() * nnz);
        let misaligned = || fail(Corruption::Misaligned);
        Ok(Self {
            dim,
            unused,
            indices: plain_slice(indices).ok_or_else(misaligned)?,
            values: plain_slice(values).ok_or_else(misaligned)?,
        })
    }

    pub fn nnz(&self) -> usize {
        self.indices.len()
    }
}

/// Reads a `sparsevec` datum.
pub fn read_sparsevec(datum: &[u8]) -> Result<SparsevecRef<'_>, VarlenaError> {
    SparsevecRef::read(datum)
}

/// A sparsevec's parts as the input functions produce them, ready to be laid out.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SparsevecParts {
    pub dim: i32,
    pub indices: Vec<i32>,
    pub values: Vec<f32>,
}

impl SparsevecParts {
    /// The parts as a value to send (with `unused` 0, as the builders write it).
    pub fn view(&self) -> SparsevecRef<'_> {
        SparsevecRef {
            dim: self.dim,
            unused: 0,
            indices: &self.indices,
            values: &self.values,
        }
    }
}

/// A Postgres `bit` datum: its length in bits and its bytes, packed MSB first.
#[derive(Clone, Copy, Debug)]
pub struct BitRef<'a> {
    pub bit_len: u32,
    pub bytes: &'a [u8],
}

impl<'a> BitRef<'a> {
    /// Reads a whole detoasted `bit` datum, header included.
    pub fn read(datum: &'a [u8]) -> Result<Self, VarlenaError> {
        let fail = |problem| VarlenaError {
            type_name: "bit",
            problem,
        };
        check_varlena(datum, BIT_HEADER).map_err(fail)?;
        let bit_len = i64::from(ne_i32(datum, BIT_LEN_OFFSET));
        check_count("bit length", bit_len, i32::MAX as usize).map_err(fail)?;
        let expected = bit_size(bit_len as usize);
        check_length("bit length", bit_len, expected, datum.len()).map_err(fail)?;
        Ok(Self {
            bit_len: bit_len as u32,
            bytes: &datum[BIT_HEADER..],
        })
    }
}

/// Reads a `bit` datum.
pub fn read_bit(datum: &[u8]) -> Result<BitRef<'_>, VarlenaError> {
    BitRef::read(datum)
}

/// A datum that cannot be a value of its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarlenaError {
    pub type_name: &'static str,
    pub problem: Corruption,
}

/// What is wrong with a corrupted datum.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Corruption {
    /// Fewer bytes than the type's fixed header.
    TruncatedHeader { len: usize, header: usize },
    /// The varlena header is not an uncompressed 4-byte one giving the datum's length.
    VarlenaSizeMismatch { len: usize },
    /// A count field (`field` names it) is negative.
    Negative { field: &'static str, value: i64 },
    /// A count field exceeds the type's limit.
    TooLarge {
        field: &'static str,
        value: i64,
        max: usize,
    },
    /// A count field does not match the byte length.
    LengthMismatch {
        field: &'static str,
        value: i64,
        expected: usize,
        len: usize,
    },
    /// The arrays are not aligned for their element type.
    Misaligned,
}

impl VarlenaError {
    /// Always `data_corrupted`.
    pub fn code(&self) -> ErrorCode {
        ErrorCode::DataCorrupted
    }

    pub fn message(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for VarlenaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {} datum: ", self.type_name)?;
        match &self.problem {
            Corruption::TruncatedHeader { len, header } => {
                write!(f, "{len} bytes, shorter than its {header}-byte header")
            }
            Corruption::VarlenaSizeMismatch { len } => {
                write!(
                    f,
                    "its varlena header does not give its length of {len} bytes"
                )
            }
            Corruption::Negative { field, value } => write!(f, "negative {field} {value}"),
            Corruption::TooLarge { field, value, max } => {
                write!(f, "{field} {value} exceeds {max}")
            }
            Corruption::LengthMismatch {
                field,
                value,
                expected,
                len,
            } => write!(f, "{field} {value} needs {expected} bytes, not {len}"),
            Corruption::Misaligned => f.write_str("its elements are not aligned"),
        }
    }
}

impl std::error::Error for VarlenaError {}

/// The datum holds the type's fixed header and its varlena header gives its length.
fn check_varlena(datum: &[u8], header: usize) -> Result<(), Corruption> {
    let len = datum.len();
    if len < header {
        return Err(Corruption::TruncatedHeader { len, header });
    }
    if varsize_4b(datum) != Some(len) {
        return Err(Corruption::VarlenaSizeMismatch { len });
    }
    Ok(())
}

fn check_count(field: &'static str, value: i64, max: usize) -> Result<(), Corruption> {
    if value < 0 {
        return Err(Corruption::Negative { field, value });
    }
    if value > max as i64 {
        return Err(Corruption::TooLarge { field, value, max });
    }
    Ok(())
}

fn check_length(
    field: &'static str,
    value: i64,
    expected: usize,
    len: usize,
) -> Result<(), Corruption> {
    if expected != len {
        return Err(Corruption::LengthMismatch {
            field,
            value,
            expected,
            len,
        });
    }
    Ok(())
}

fn ne_i16(datum: &[u8], at: usize) -> i16 {
    i16::from_ne_bytes([datum[at], datum[at + 1]])
}

fn ne_i32(datum: &[u8], at: usize) -> i32 {
    i32::from_ne_bytes([datum[at], datum[at + 1], datum[at + 2], datum[at + 3]])
}

/// `bytes` as a slice of `T`, `None` if it is not aligned for `T` or not whole elements.
fn plain_slice<T: PlainData>(bytes: &[u8]) -> Option<&[T]> {
    let ptr = bytes.as_ptr().cast::<T>();
    if !ptr.is_aligned() || !bytes.len().is_multiple_of(size_of::<T>()) {
        return None;
    }
    // SAFETY: `ptr` is aligned for T and `bytes` holds exactly len / size_of::<T>() elements;
    // PlainData makes every bit pattern a valid T; the result borrows `bytes`.
    Some(unsafe { std::slice::from_raw_parts(ptr, bytes.len() / size_of::<T>()) })
}
