//! Arbitrary bytes never panic any reader or parser: each returns a value or an error.

mod common;

use common::Aligned;
use proptest::prelude::*;
use std::ffi::CString;
use vector_formats::binary::{recv_halfvec, recv_sparsevec, recv_vector};
use vector_formats::text::{parse_halfvec, parse_sparsevec, parse_vector};
use vector_formats::varlena::{header_4b, read_bit, read_halfvec, read_sparsevec, read_vector};

fn read_all(datum: &[u8]) {
    let _ = read_vector(datum);
    let _ = read_halfvec(datum);
    let _ = read_sparsevec(datum);
    let _ = read_bit(datum);
}

fn typmods() -> impl Strategy<Value = i32> {
    prop_oneof![Just(-1), 0..5i32, any::<i32>()]
}

/// Text made mostly of the characters the parsers look for, so that parses get deep.
fn texty() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        4 => proptest::sample::select(b"[]{}:,/ \t-+.eE0123456789".to_vec()),
        1 => proptest::sample::select(b"infatyxp\n\x0b\x01\x80\xff".to_vec()),
    ];
    proptest::collection::vec(byte, 0..64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn readers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        read_all(&bytes);
        read_all(Aligned::new(&bytes).bytes());
        read_all(Aligned::misaligned(&bytes).misaligned_bytes());
    }

    #[test]
    fn readers_never_panic_with_a_consistent_header(body in proptest::collection::vec(any::<u8>(), 0..64)) {
        // A matching varlena header gets past the first check to the count fields.
        let mut datum = header_4b(4 + body.len()).to_vec();
        datum.extend_from_slice(&body);
        read_all(Aligned::new(&datum).bytes());
    }

    #[test]
    fn parsers_never_panic(bytes in prop_oneof![proptest::collection::vec(any::<u8>(), 0..64), texty()], typmod in typmods()) {
        let input = CString::new(bytes.into_iter().filter(|&b| b != 0).collect::<Vec<u8>>()).unwrap();
        let _ = parse_vector(&input, typmod);
        let _ = parse_halfvec(&input, typmod);
        let _ = parse_sparsevec(&input, typmod);
    }

    #[test]
    fn receivers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..96), typmod in typmods()) {
        let _ = recv_vector(&bytes, typmod);
        let _ = recv_halfvec(&bytes, typmod);
        let _ = recv_sparsevec(&bytes, typmod);
    }

    #[test]
    fn receivers_never_panic_with_small_counts(
        count in 0..4i16,
        rest in proptest::collection::vec(any::<u8>(), 0..48),
        typmod in typmods(),
    ) {
        // Small counts, so that element reads are reached.
        let dense = [count.to_be_bytes().to_vec(), vec![0, 0], rest.clone()].concat();
        let _ = recv_vector(&dense, typmod);
        let _ = recv_halfvec(&dense, typmod);
        let sparse = [8i32.to_be_bytes().to_vec(), i32::from(count).to_be_bytes().to_vec(), vec![0; 4], rest].concat();
        let _ = recv_sparsevec(&sparse, typmod);
    }
}
