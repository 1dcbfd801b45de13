//! Datum images as Postgres lays them out, in 4-aligned storage like a detoasted varlena.
#![allow(dead_code)]

use half::f16;
use vector_formats::varlena::{header_4b, BIT_HEADER, DENSE_HEADER, SPARSEVEC_HEADER};

/// Bytes kept 4-aligned (and, from `offset`, deliberately not).
pub struct Aligned {
    words: Vec<u32>,
    len: usize,
}

impl Aligned {
    pub fn new(bytes: &[u8]) -> Self {
        let mut words = vec![0u32; bytes.len().div_ceil(4) + 1];
        let len = bytes.len();
        as_bytes_mut(&mut words)[..len].copy_from_slice(bytes);
        Self { words, len }
    }

    pub fn bytes(&self) -> &[u8] {
        &as_bytes(&self.words)[..self.len]
    }

    /// The same bytes starting one byte past an aligned address.
    pub fn misaligned(bytes: &[u8]) -> Self {
        let mut shifted = vec![0u8];
        shifted.extend_from_slice(bytes);
        Self::new(&shifted)
    }

    pub fn misaligned_bytes(&self) -> &[u8] {
        &self.bytes()[1..]
    }
}

fn as_bytes(words: &[u32]) -> &[u8] {
    // SAFETY: u32 storage viewed as bytes; u8 has no alignment or validity requirements.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast(), words.len() * 4) }
}

fn as_bytes_mut(words: &mut [u32]) -> &mut [u8] {
    // SAFETY: as for `as_bytes`, borrowed exclusively.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast(), words.len() * 4) }
}

/// A datum of `body` after a varlena header giving the total length.
pub fn with_header(body: &[u8]) -> Vec<u8> {
    let mut out = header_4b(4 + body.len()).to_vec();
    out.extend_from_slice(body);
    out
}

/// A dense datum with the given header fields and raw element bytes.
pub fn dense_image(dim: i16, unused: i16, elements: &[u8]) -> Vec<u8> {
    let mut body = dim.to_ne_bytes().to_vec();
    body.extend_from_slice(&unused.to_ne_bytes());
    body.extend_from_slice(elements);
    let out = with_header(&body);
    assert_eq!(out.len(), DENSE_HEADER + elements.len());
    out
}

pub fn vector_image(x: &[f32]) -> Vec<u8> {
    let elements: Vec<u8> = x.iter().flat_map(|v| v.to_ne_bytes()).collect();
    dense_image(x.len() as i16, 0, &elements)
}

pub fn halfvec_image(x: &[f16]) -> Vec<u8> {
    let elements: Vec<u8> = x.iter().flat_map(|v| v.to_bits().to_ne_bytes()).collect();
    dense_image(x.len() as i16, 0, &elements)
}

/// A sparsevec datum with the given header fields and arrays.
pub fn sparsevec_image(
    dim: i32,
    nnz: i32,
    unused: i32,
    indices: &[i32],
    values: &[f32],
) -> Vec<u8> {
    let mut body = Vec::new();
    for field in [dim, nnz, unused] {
        body.extend_from_slice(&field.to_ne_bytes());
    }
    body.extend(indices.iter().flat_map(|i| i.to_ne_bytes()));
    body.extend(values.iter().flat_map(|v| v.to_ne_bytes()));
    let out = with_header(&body);
    assert_eq!(
        out.len(),
        SPARSEVEC_HEADER + 4 * indices.len() + 4 * values.len()
    );
    out
}

pub fn bit_image(bit_len: i32, bytes: &[u8]) -> Vec<u8> {
    let mut body = bit_len.to_ne_bytes().to_vec();
    body.extend_from_slice(bytes);
    let out = with_header(&body);
    assert_eq!(out.len(), BIT_HEADER + bytes.len());
    out
}

/// Big-endian message fields, as the binary protocol sends them.
pub fn be16(v: i16) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}
pub fn be32(v: i32) -> Vec<u8> {
    v.to_be_bytes().to_vec()
}
pub fn bef32(v: f32) -> Vec<u8> {
    v.to_bits().to_be_bytes().to_vec()
}
pub fn beh(v: f16) -> Vec<u8> {
    v.to_bits().to_be_bytes().to_vec()
}
