//! One fuzz target for AFL++ (`cargo afl`): the first input byte picks what the rest feeds.
//!
//! * 0, 1: patches to a pgvector-built hnsw (0) or ivfflat (1) index, then the checks, plain
//!   and cross-checked. The rest is a list of patches: a block byte, a little-endian offset,
//!   a length byte, then that many bytes written there.
//! * 2: the datum readers of every type, on the bytes as they are.
//! * 3: the text input parsers of every type, with a type modifier from the next byte.
//! * 4: the binary receive functions of every type.
//!
//! Every case must end in a value or an error: a panic is a crash AFL records.

use std::ffi::CString;
use vector_check::value::ValueType;
use vector_check::PageImages;
use vector_formats::page::{fixture_pages, BLCKSZ};

fn patched(mut pages: Vec<Vec<u8>>, mut patches: &[u8]) -> Vec<Vec<u8>> {
    while patches.len() >= 4 {
        let block = usize::from(patches[0]) % pages.len();
        let at = usize::from(u16::from_le_bytes([patches[1], patches[2]])) % BLCKSZ;
        let len = usize::from(patches[3]);
        let bytes = &patches[4..(4 + len).min(patches.len())];
        let end = (at + bytes.len()).min(BLCKSZ);
        pages[block][at..end].copy_from_slice(&bytes[..end - at]);
        patches = &patches[(4 + len).min(patches.len())..];
    }
    pages
}

fn main() {
    let hnsw = fixture_pages(include_str!(
        "../../../tests/fixtures/pgvector-hnsw/t1_idx.pages"
    ));
    let ivfflat = fixture_pages(include_str!(
        "../../../tests/fixtures/pgvector-ivfflat/i4_idx.pages"
    ));
    afl::fuzz!(|data: &[u8]| {
        let Some((&target, rest)) = data.split_first() else {
            return;
        };
        match target % 5 {
            0 => {
                for cross_check in [false, true] {
                    let options = vector_check::hnsw::Options {
                        value_type: ValueType::Vector,
                        cross_check,
                        heap_tids: true,
                    };
                    let mut pages = PageImages(patched(hnsw.clone(), rest));
                    let _ = vector_check::hnsw::check(&mut pages, options);
                }
            }
            1 => {
                for cross_check in [false, true] {
                    let options = vector_check::ivfflat::Options {
                        value_type: ValueType::Vector,
                        cross_check,
                        heap_tids: true,
                    };
                    let mut pages = PageImages(patched(ivfflat.clone(), rest));
                    let _ = vector_check::ivfflat::check(&mut pages, options);
                }
            }
            2 => {
                let mut words = vec![0u64; rest.len().div_ceil(8)];
                let aligned = &mut bytemuck(&mut words)[..rest.len()];
                aligned.copy_from_slice(rest);
                let _ = vector_formats::varlena::read_vector(aligned);
                let _ = vector_formats::varlena::read_halfvec(aligned);
                let _ = vector_formats::varlena::read_sparsevec(aligned);
                let _ = vector_formats::varlena::read_bit(aligned);
                for kind in [
                    ValueType::Vector,
                    ValueType::Halfvec,
                    ValueType::Bit,
                    ValueType::Sparsevec,
                ] {
                    let _ = vector_check::value::check_value(kind, 3, aligned);
                }
            }
            3 => {
                let Some((&typmod, text)) = rest.split_first() else {
                    return;
                };
                let typmod = if typmod == 0 { -1 } else { i32::from(typmod) };
                let text: Vec<u8> = text.iter().copied().filter(|&b| b != 0).collect();
                let input = CString::new(text).expect("no NUL");
                let _ = vector_formats::text::parse_vector(&input, typmod);
                let _ = vector_formats::text::parse_halfvec(&input, typmod);
                let _ = vector_formats::text::parse_sparsevec(&input, typmod);
            }
            _ => {
                let _ = vector_formats::binary::recv_vector(rest, -1);
                let _ = vector_formats::binary::recv_halfvec(rest, -1);
                let _ = vector_formats::binary::recv_sparsevec(rest, -1);
            }
        }
    });
}

/// The bytes of `words` (8-byte aligned, as a detoasted datum is).
fn bytemuck(words: &mut [u64]) -> &mut [u8] {
    let len = std::mem::size_of_val(words);
    // SAFETY: u64 storage reinterpreted as bytes: no padding, every byte value valid, same
    // lifetime as the borrow of `words`.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) }
}
