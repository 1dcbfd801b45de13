//! Binary receive and send: round trips, every error, and which error comes first.

mod common;

use common::*;
use half::f16;
use vector_formats::binary::*;
use vector_formats::error::{ErrorCode, ParseError};
use vector_formats::varlena::{read_halfvec, read_sparsevec, read_vector, SparsevecParts};

fn msg(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

fn message<T: std::fmt::Debug>(result: Result<T, ParseError>) -> (ErrorCode, String) {
    let err = result.expect_err("message was accepted");
    assert_eq!(err.detail(), None);
    (err.code(), err.message())
}

fn data(text: &str) -> (ErrorCode, String) {
    (ErrorCode::DataException, text.to_owned())
}

fn limit(text: &str) -> (ErrorCode, String) {
    (ErrorCode::ProgramLimitExceeded, text.to_owned())
}

fn short<T: std::fmt::Debug>(result: Result<T, ParseError>) {
    assert_eq!(
        result.expect_err("message was accepted"),
        ParseError::MessageTooShort
    );
}

#[test]
fn message_too_short_is_the_servers_error() {
    let err = ParseError::MessageTooShort;
    assert_eq!(err.code(), ErrorCode::ProtocolViolation);
    assert_eq!(err.message(), "insufficient data left in message");
}

#[test]
fn vector_round_trips() {
    let x = [1.5f32, -2.0, f32::MIN_POSITIVE, f32::MAX, -0.0];
    let datum = Aligned::new(&vector_image(&x));
    let sent = send_vector(read_vector(datum.bytes()).unwrap());
    assert_eq!(
        sent,
        msg(&[
            be16(5),
            be16(0),
            bef32(1.5),
            bef32(-2.0),
            bef32(f32::MIN_POSITIVE),
            bef32(f32::MAX),
            bef32(-0.0)
        ])
    );
    let got = recv_vector(&sent, 5).unwrap();
    assert_eq!(got.consumed, sent.len());
    assert_eq!(
        got.value.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        x.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
}

#[test]
fn send_passes_unused_on() {
    let datum = Aligned::new(&dense_image(1, -4, &2.0f32.to_ne_bytes()));
    assert_eq!(
        send_vector(read_vector(datum.bytes()).unwrap()),
        msg(&[be16(1), be16(-4), bef32(2.0)])
    );
    let datum = Aligned::new(&sparsevec_image(3, 1, 5, &[2], &[1.0]));
    assert_eq!(
        send_sparsevec(read_sparsevec(datum.bytes()).unwrap()),
        msg(&[be32(3), be32(1), be32(5), be32(2), bef32(1.0)])
    );
}

#[test]
fn recv_leaves_trailing_bytes_unread() {
    let got = recv_vector(&msg(&[be16(1), be16(0), bef32(1.0), vec![9, 9]]), -1).unwrap();
    assert_eq!((got.value, got.consumed), (vec![1.0], 8));
    let got = recv_sparsevec(&msg(&[be32(2), be32(0), be32(0), vec![1]]), -1).unwrap();
    assert_eq!(got.consumed, 12);
}

#[test]
fn vector_errors() {
    assert_eq!(
        message(recv_vector(&msg(&[be16(1), be16(7), bef32(1.0)]), -1)),
        data("expected unused to be 0, not 7")
    );
    assert_eq!(
        message(recv_vector(&msg(&[be16(0), be16(0)]), -1)),
        data("vector must have at least 1 dimension")
    );
    assert_eq!(
        message(recv_vector(&msg(&[be16(-3), be16(0)]), -1)),
        data("vector must have at least 1 dimension")
    );
    assert_eq!(
        message(recv_vector(&msg(&[be16(16001), be16(0)]), -1)),
        limit("vector cannot have more than 16000 dimensions")
    );
    assert_eq!(
        message(recv_vector(
            &msg(&[be16(2), be16(0), bef32(1.0), bef32(2.0)]),
            3
        )),
        data("expected 3 dimensions, not 2")
    );
    assert_eq!(
        message(recv_vector(&msg(&[be16(1), be16(0), bef32(f32::NAN)]), -1)),
        data("NaN not allowed in vector")
    );
    assert_eq!(
        message(recv_vector(
            &msg(&[be16(1), be16(0), bef32(f32::NEG_INFINITY)]),
            -1
        )),
        data("infinite value not allowed in vector")
    );
    short(recv_vector(&msg(&[be16(3), be16(0), bef32(1.0)]), -1));
}

#[test]
fn vector_checks_in_pgvector_order() {
    // Both header fields are read before either is checked.
    short(recv_vector(&be16(0), -1));
    short(recv_vector(&[0, 0, 0], -1));
    // Dimensions, then typmod, then unused.
    assert_eq!(
        message(recv_vector(&msg(&[be16(0), be16(1)]), 3)).1,
        "vector must have at least 1 dimension"
    );
    assert_eq!(
        message(recv_vector(&msg(&[be16(2), be16(1)]), 3)).1,
        "expected 3 dimensions, not 2"
    );
    // An element is checked before the next one is read.
    assert_eq!(
        message(recv_vector(&msg(&[be16(3), be16(0), bef32(f32::NAN)]), -1)).1,
        "NaN not allowed in vector"
    );
    for cut in 0..12 {
        short(recv_vector(
            &msg(&[be16(2), be16(0), bef32(1.0), bef32(2.0)])[..cut],
            -1,
        ));
    }
}

#[test]
fn halfvec_round_trips() {
    let x = [
        f16::from_f32(1.5),
        f16::from_f32(-2.0),
        f16::MAX,
        f16::MIN_POSITIVE_SUBNORMAL,
    ];
    let datum = Aligned::new(&halfvec_image(&x));
    let sent = send_halfvec(read_halfvec(datum.bytes()).unwrap());
    assert_eq!(
        sent,
        msg(&[be16(4), be16(0), beh(x[0]), beh(x[1]), beh(x[2]), beh(x[3])])
    );
    let got = recv_halfvec(&sent, -1).unwrap();
    assert_eq!((got.value, got.consumed), (x.to_vec(), 12));
}

#[test]
fn halfvec_errors() {
    assert_eq!(
        message(recv_halfvec(&msg(&[be16(1), be16(1), beh(f16::ONE)]), -1)),
        data("expected unused to be 0, not 1")
    );
    assert_eq!(
        message(recv_halfvec(&msg(&[be16(1), be16(-1), beh(f16::ONE)]), -1)),
        data("expected unused to be 0, not -1")
    );
    assert_eq!(
        message(recv_halfvec(&msg(&[be16(1), be16(0), beh(f16::NAN)]), -1)),
        data("NaN not allowed in halfvec")
    );
    assert_eq!(
        message(recv_halfvec(
            &msg(&[be16(1), be16(0), beh(f16::INFINITY)]),
            -1
        )),
        data("infinite value not allowed in halfvec")
    );
    assert_eq!(
        message(recv_halfvec(&msg(&[be16(16001), be16(0)]), -1)),
        limit("halfvec cannot have more than 16000 dimensions")
    );
    assert_eq!(
        message(recv_halfvec(&msg(&[be16(0), be16(0)]), -1)),
        data("halfvec must have at least 1 dimension")
    );
    assert_eq!(
        message(recv_halfvec(&msg(&[be16(1), be16(0), beh(f16::ONE)]), 2)),
        data("expected 2 dimensions, not 1")
    );
    short(recv_halfvec(
        &msg(&[be16(2), be16(0), beh(f16::ONE), vec![0]]),
        -1,
    ));
}

fn sparse(dim: i32, nnz: i32, unused: i32, indices: &[i32], values: &[f32]) -> Vec<u8> {
    let mut parts = vec![be32(dim), be32(nnz), be32(unused)];
    parts.extend(indices.iter().map(|&i| be32(i)));
    parts.extend(values.iter().map(|&v| bef32(v)));
    msg(&parts)
}

#[test]
fn sparsevec_round_trips() {
    let parts = SparsevecParts {
        dim: 5,
        indices: vec![0, 2, 4],
        values: vec![1.5, -2.0, 3.0],
    };
    let sent = send_sparsevec(parts.view());
    assert_eq!(sent, sparse(5, 3, 0, &[0, 2, 4], &[1.5, -2.0, 3.0]));
    let got = recv_sparsevec(&sent, 5).unwrap();
    assert_eq!((got.value, got.consumed), (parts, sent.len()));
    let empty = recv_sparsevec(&sparse(3, 0, 0, &[], &[]), -1).unwrap();
    assert_eq!(empty.value.indices, Vec::<i32>::new());
}

#[test]
fn sparsevec_errors() {
    let recv = |m: Vec<u8>| message(recv_sparsevec(&m, -1));
    assert_eq!(
        recv(sparse(5, 2, 0, &[3, 1], &[1.0, 1.0])),
        data("sparsevec indices must be in ascending order")
    );
    assert_eq!(
        recv(sparse(5, 2, 0, &[1, 1], &[1.0, 1.0])),
        data("sparsevec indices must not contain duplicates")
    );
    assert_eq!(
        recv(sparse(5, 1, 0, &[5], &[1.0])),
        data("sparsevec index out of bounds")
    );
    assert_eq!(
        recv(sparse(5, 1, 0, &[-1], &[1.0])),
        data("sparsevec index out of bounds")
    );
    assert_eq!(
        recv(sparse(5, 1, 0, &[1], &[0.0])),
        data("binary representation of sparsevec cannot contain zero values")
    );
    assert_eq!(
        recv(sparse(5, 1, 0, &[1], &[-0.0])),
        data("binary representation of sparsevec cannot contain zero values")
    );
    assert_eq!(
        recv(sparse(5, -1, 0, &[], &[])),
        data("sparsevec cannot have negative number of elements")
    );
    assert_eq!(
        recv(sparse(20000, 16001, 0, &[], &[])),
        limit("sparsevec cannot have more than 16000 non-zero elements")
    );
    assert_eq!(
        recv(sparse(2, 3, 0, &[], &[])),
        limit("sparsevec cannot have more elements than dimensions")
    );
    assert_eq!(
        recv(sparse(1_000_000_001, 0, 0, &[], &[])),
        limit("sparsevec cannot have more than 1000000000 dimensions")
    );
    assert_eq!(
        recv(sparse(0, 0, 0, &[], &[])),
        data("sparsevec must have at least 1 dimension")
    );
    assert_eq!(
        recv(sparse(5, 0, 1, &[], &[])),
        data("expected unused to be 0, not 1")
    );
    assert_eq!(
        recv(sparse(5, 1, 0, &[1], &[f32::NAN])),
        data("NaN not allowed in sparsevec")
    );
    assert_eq!(
        recv(sparse(5, 1, 0, &[1], &[f32::INFINITY])),
        data("infinite value not allowed in sparsevec")
    );
    assert_eq!(
        message(recv_sparsevec(&sparse(5, 0, 0, &[], &[]), 4)),
        data("expected 4 dimensions, not 5")
    );
    short(recv_sparsevec(&sparse(5, 2, 0, &[1, 2], &[1.0]), -1));
}

#[test]
fn sparsevec_checks_in_pgvector_order() {
    let recv = |m: Vec<u8>, typmod| message(recv_sparsevec(&m, typmod)).1;
    // dim, then nnz, then typmod, then unused.
    assert_eq!(
        recv(sparse(0, -1, 1, &[], &[]), 3),
        "sparsevec must have at least 1 dimension"
    );
    assert_eq!(
        recv(sparse(2, -1, 1, &[], &[]), 3),
        "sparsevec cannot have negative number of elements"
    );
    assert_eq!(
        recv(sparse(2, 1, 1, &[], &[]), 3),
        "expected 3 dimensions, not 2"
    );
    // All indices are read and checked before any value.
    assert_eq!(
        recv(sparse(5, 2, 0, &[1, 1], &[0.0, 0.0]), -1),
        "sparsevec indices must not contain duplicates"
    );
    assert_eq!(
        recv(sparse(5, 2, 0, &[1, 2], &[f32::NAN, 0.0]), -1),
        "NaN not allowed in sparsevec"
    );
    // A bad index is reported before the message runs out.
    assert_eq!(
        recv(sparse(5, 2, 0, &[9], &[]), -1),
        "sparsevec index out of bounds"
    );
    short(recv_sparsevec(&sparse(5, 2, 0, &[1], &[]), -1));
    for cut in 0..12 {
        short(recv_sparsevec(&sparse(5, 0, 0, &[], &[])[..cut], -1));
    }
}
