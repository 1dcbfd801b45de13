//! Binary input and output (`*_recv`, `*_send`), all fields in network byte order:
//!
//! ```text
//! vector:    int16 dim, int16 unused (must be 0 on input), float4 x[dim]
//! halfvec:   int16 dim, int16 unused (must be 0 on input), half x[dim]
//! sparsevec: int32 dim, int32 nnz, int32 unused (must be 0 on input), int32 indices[nnz]
//!            (0-based), float4 values[nnz]
//! ```
//!
//! The receivers read the message front to back and check each field as soon as pgvector
//! does, so the first error is pgvector's; running out of bytes is `MessageTooShort` at the
//! point where the server's own reader would raise it.

use crate::checks::{check_dim, check_expected_dim, check_finite, check_index, check_nnz};
use crate::error::ParseError;
use crate::varlena::{
    DenseElement, HalfvecRef, SparsevecParts, SparsevecRef, VectorRef, HALFVEC_MAX_DIM,
    SPARSEVEC_MAX_DIM, VECTOR_MAX_DIM,
};
use half::f16;

const VECTOR: &str = <f32 as DenseElement>::TYPE_NAME;
const HALFVEC: &str = <f16 as DenseElement>::TYPE_NAME;
const SPARSEVEC: &str = "sparsevec";

/// A received value and how many bytes of the message it took (the caller advances its
/// cursor past them: the server checks that a receive function reads its whole message).
#[derive(Clone, Debug, PartialEq)]
pub struct Received<T> {
    pub value: T,
    pub consumed: usize,
}

/// Receives a `vector` from the unread part of a message, checked against `typmod`.
pub fn recv_vector(msg: &[u8], typmod: i32) -> Result<Received<Vec<f32>>, ParseError> {
    let mut m = Message { bytes: msg, pos: 0 };
    let dim = recv_dense_header(&mut m, VECTOR, VECTOR_MAX_DIM, typmod)?;
    let mut x = Vec::with_capacity(dim);
    for _ in 0..dim {
        let value = f32::from_bits(u32::from_be_bytes(m.take()?));
        check_finite(VECTOR, value)?;
        x.push(value);
    }
    Ok(m.received(x))
}

/// Receives a `halfvec` from the unread part of a message, checked against `typmod`.
pub fn recv_halfvec(msg: &[u8], typmod: i32) -> Result<Received<Vec<f16>>, ParseError> {
    let mut m = Message { bytes: msg, pos: 0 };
    let dim = recv_dense_header(&mut m, HALFVEC, HALFVEC_MAX_DIM, typmod)?;
    let mut x = Vec::with_capacity(dim);
    for _ in 0..dim {
        let value = f16::from_bits(u16::from_be_bytes(m.take()?));
        check_finite(HALFVEC, value.to_f32())?;
        x.push(value);
    }
    Ok(m.received(x))
}

/// Receives a `sparsevec` from the unread part of a message, checked against `typmod`.
pub fn recv_sparsevec(msg: &[u8], typmod: i32) -> Result<Received<SparsevecParts>, ParseError> {
    let mut m = Message { bytes: msg, pos: 0 };
    let dim = i32::from_be_bytes(m.take()?);
    let nnz = i32::from_be_bytes(m.take()?);
    let unused = i32::from_be_bytes(m.take()?);
    check_dim(SPARSEVEC, SPARSEVEC_MAX_DIM, dim.into())?;
    check_nnz(nnz.into(), dim.into())?;
    check_expected_dim(typmod, dim.into())?;
    if unused != 0 {
        return Err(ParseError::UnusedNotZero { unused });
    }

    // nnz is now within 0..=SPARSEVEC_MAX_NNZ.
    let nnz = nnz as usize;
    let mut indices = Vec::with_capacity(nnz);
    let mut previous = None;
    for _ in 0..nnz {
        let index = i32::from_be_bytes(m.take()?);
        check_index(index, previous, dim)?;
        indices.push(index);
        previous = Some(index);
    }
    let mut values = Vec::with_capacity(nnz);
    for _ in 0..nnz {
        let value = f32::from_bits(u32::from_be_bytes(m.take()?));
        check_finite(SPARSEVEC, value)?;
        if value == 0.0 {
            return Err(ParseError::ZeroValue);
        }
        values.push(value);
    }
    Ok(m.received(SparsevecParts {
        dim,
        indices,
        values,
    }))
}

/// The message `vector_send` sends: `unused` is passed on as stored, as pgvector does.
pub fn send_vector(v: VectorRef<'_>) -> Vec<u8> {
    let mut out = dense_header(v.dim(), v.unused, size_of::<f32>());
    for x in v.x {
        out.extend_from_slice(&x.to_bits().to_be_bytes());
    }
    out
}

/// The message `halfvec_send` sends.
pub fn send_halfvec(v: HalfvecRef<'_>) -> Vec<u8> {
    let mut out = dense_header(v.dim(), v.unused, size_of::<f16>());
    for x in v.x {
        out.extend_from_slice(&x.to_bits().to_be_bytes());
    }
    out
}

/// The message `sparsevec_send` sends.
pub fn send_sparsevec(v: SparsevecRef<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(12 + 8 * v.nnz());
    out.extend_from_slice(&v.dim.to_be_bytes());
    out.extend_from_slice(&(v.nnz() as i32).to_be_bytes());
    out.extend_from_slice(&v.unused.to_be_bytes());
    for index in v.indices {
        out.extend_from_slice(&index.to_be_bytes());
    }
    for value in v.values {
        out.extend_from_slice(&value.to_bits().to_be_bytes());
    }
    out
}

/// The int16 dim and int16 unused of a dense value's message, room reserved for the elements.
fn dense_header(dim: usize, unused: i16, element_size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(4 + element_size * dim);
    out.extend_from_slice(&(dim as i16).to_be_bytes());
    out.extend_from_slice(&unused.to_be_bytes());
    out
}

/// Reads and checks the header of a `vector` or `halfvec`: both fields are read before either
/// is checked. Returns the dimension count.
fn recv_dense_header(
    m: &mut Message,
    type_name: &'static str,
    max_dim: usize,
    typmod: i32,
) -> Result<usize, ParseError> {
    let dim = i16::from_be_bytes(m.take()?);
    let unused = i16::from_be_bytes(m.take()?);
    check_dim(type_name, max_dim, dim.into())?;
    check_expected_dim(typmod, dim.into())?;
    if unused != 0 {
        return Err(ParseError::UnusedNotZero {
            unused: unused.into(),
        });
    }
    Ok(dim as usize)
}

/// The unread part of a message and how far into it we are.
struct Message<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Message<'_> {
    /// The next `N` bytes.
    fn take<const N: usize>(&mut self) -> Result<[u8; N], ParseError> {
        let field = self
            .bytes
            .get(self.pos..)
            .and_then(|rest| rest.first_chunk::<N>())
            .ok_or(ParseError::MessageTooShort)?;
        self.pos += N;
        Ok(*field)
    }

    fn received<T>(&self, value: T) -> Received<T> {
        Received {
            value,
            consumed: self.pos,
        }
    }
}
