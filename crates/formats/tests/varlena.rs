//! The checked readers: valid datums read in place, corrupted ones are typed errors.

mod common;

use common::*;
use half::f16;
use vector_formats::error::ErrorCode;
use vector_formats::varlena::*;

fn corruption<T: std::fmt::Debug>(result: Result<T, VarlenaError>) -> (String, Corruption) {
    let err = result.expect_err("a corrupted datum was accepted");
    assert_eq!(err.code(), ErrorCode::DataCorrupted);
    (err.message(), err.problem)
}

#[test]
fn header_round_trips() {
    for total in [0, 4, 8, 12, 16_008, 0x3FFF_FFFF] {
        assert_eq!(varsize_4b(&header_4b(total)), Some(total));
    }
    assert_eq!(varsize_4b(&[0; 3]), None);
}

#[test]
fn sizes_follow_the_layouts() {
    assert_eq!(dense_size::<f32>(3), 20);
    assert_eq!(dense_size::<f16>(3), 14);
    assert_eq!(sparsevec_size(2), 32);
    assert_eq!(bit_size(0), 8);
    assert_eq!(bit_size(9), 10);
}

#[test]
fn vector_reads_in_place() {
    let x = [1.5f32, -2.0, f32::MIN_POSITIVE, 0.0];
    let datum = Aligned::new(&vector_image(&x));
    let v = read_vector(datum.bytes()).unwrap();
    assert_eq!(v.x, x);
    assert_eq!(v.dim(), 4);
    assert_eq!(v.unused, 0);
    assert_eq!(v.x.as_ptr().cast::<u8>(), datum.bytes()[8..].as_ptr());
}

#[test]
fn vector_keeps_unused_as_stored() {
    let datum = Aligned::new(&dense_image(1, 7, &1.0f32.to_ne_bytes()));
    assert_eq!(read_vector(datum.bytes()).unwrap().unused, 7);
}

#[test]
fn halfvec_reads_in_place() {
    let x = [f16::from_f32(1.5), f16::from_f32(-2.0), f16::MAX];
    let datum = Aligned::new(&halfvec_image(&x));
    let v = read_halfvec(datum.bytes()).unwrap();
    assert_eq!(v.x, x);
}

#[test]
fn dense_at_the_limit_reads() {
    let x = vec![1.0f32; VECTOR_MAX_DIM];
    let datum = Aligned::new(&vector_image(&x));
    assert_eq!(read_vector(datum.bytes()).unwrap().dim(), VECTOR_MAX_DIM);
    let x = vec![f16::ONE; HALFVEC_MAX_DIM];
    let datum = Aligned::new(&halfvec_image(&x));
    assert_eq!(read_halfvec(datum.bytes()).unwrap().dim(), HALFVEC_MAX_DIM);
}

#[test]
fn dense_rejects_negative_dim() {
    let datum = Aligned::new(&dense_image(-3, 0, &[0; 12]));
    let (message, problem) = corruption(read_vector(datum.bytes()));
    assert_eq!(message, "invalid vector datum: negative dimension count -3");
    assert!(matches!(problem, Corruption::Negative { value: -3, .. }));
    let (message, _) = corruption(read_halfvec(datum.bytes()));
    assert_eq!(
        message,
        "invalid halfvec datum: negative dimension count -3"
    );
}

#[test]
fn dense_rejects_dim_beyond_its_bytes() {
    let datum = Aligned::new(&dense_image(4, 0, &[0; 12]));
    let (message, problem) = corruption(read_vector(datum.bytes()));
    assert_eq!(
        message,
        "invalid vector datum: dimension count 4 needs 24 bytes, not 20"
    );
    assert_eq!(
        problem,
        Corruption::LengthMismatch {
            field: "dimension count",
            value: 4,
            expected: 24,
            len: 20
        }
    );
}

#[test]
fn dense_rejects_dim_short_of_its_bytes() {
    let datum = Aligned::new(&dense_image(2, 0, &[0; 12]));
    let (_, problem) = corruption(read_vector(datum.bytes()));
    assert!(matches!(
        problem,
        Corruption::LengthMismatch { value: 2, .. }
    ));
    // Whole bytes that are not whole halves.
    let datum = Aligned::new(&dense_image(1, 0, &[0; 3]));
    assert!(matches!(
        corruption(read_halfvec(datum.bytes())).1,
        Corruption::LengthMismatch { .. }
    ));
}

#[test]
fn dense_rejects_dim_above_the_limit() {
    let datum = Aligned::new(&dense_image(16001, 0, &vec![0; 4 * 16001]));
    let (message, problem) = corruption(read_vector(datum.bytes()));
    assert_eq!(
        message,
        "invalid vector datum: dimension count 16001 exceeds 16000"
    );
    assert!(matches!(problem, Corruption::TooLarge { max: 16000, .. }));
}

#[test]
fn readers_reject_truncated_headers() {
    let image = vector_image(&[1.0]);
    for len in 0..DENSE_HEADER {
        let datum = Aligned::new(&image[..len]);
        let (_, problem) = corruption(read_vector(datum.bytes()));
        assert_eq!(problem, Corruption::TruncatedHeader { len, header: 8 });
    }
    let image = sparsevec_image(5, 0, 0, &[], &[]);
    for len in 0..SPARSEVEC_HEADER {
        let datum = Aligned::new(&image[..len]);
        let (message, problem) = corruption(read_sparsevec(datum.bytes()));
        assert_eq!(problem, Corruption::TruncatedHeader { len, header: 16 });
        if len == 5 {
            assert_eq!(
                message,
                "invalid sparsevec datum: 5 bytes, shorter than its 16-byte header"
            );
        }
    }
    for len in 0..BIT_HEADER {
        let (_, problem) = corruption(read_bit(&bit_image(0, &[])[..len]));
        assert_eq!(problem, Corruption::TruncatedHeader { len, header: 8 });
    }
}

#[test]
fn readers_reject_a_varlena_header_of_another_length() {
    // Cut after a whole element: the header still gives the longer length.
    let image = vector_image(&[1.0, 2.0]);
    let datum = Aligned::new(&image[..12]);
    let (message, problem) = corruption(read_vector(datum.bytes()));
    assert_eq!(problem, Corruption::VarlenaSizeMismatch { len: 12 });
    assert_eq!(
        message,
        "invalid vector datum: its varlena header does not give its length of 12 bytes"
    );
    // A 1-byte (short) header is not what detoasting gives.
    let mut image = vector_image(&[1.0]);
    image[..4].copy_from_slice(&1u32.to_ne_bytes());
    let datum = Aligned::new(&image);
    assert!(matches!(
        corruption(read_vector(datum.bytes())).1,
        Corruption::VarlenaSizeMismatch { .. }
    ));
}

#[test]
fn readers_reject_misaligned_arrays() {
    let datum = Aligned::misaligned(&vector_image(&[1.0]));
    let (message, problem) = corruption(read_vector(datum.misaligned_bytes()));
    assert_eq!(problem, Corruption::Misaligned);
    assert_eq!(
        message,
        "invalid vector datum: its elements are not aligned"
    );
    let datum = Aligned::misaligned(&sparsevec_image(3, 1, 0, &[1], &[2.0]));
    assert_eq!(
        corruption(read_sparsevec(datum.misaligned_bytes())).1,
        Corruption::Misaligned
    );
}

#[test]
fn sparsevec_reads_in_place() {
    let datum = Aligned::new(&sparsevec_image(10, 2, 0, &[1, 7], &[1.5, -3.0]));
    let v = read_sparsevec(datum.bytes()).unwrap();
    assert_eq!((v.dim, v.nnz(), v.unused), (10, 2, 0));
    assert_eq!(v.indices, [1, 7]);
    assert_eq!(v.values, [1.5, -3.0]);
    let empty = Aligned::new(&sparsevec_image(3, 0, 9, &[], &[]));
    let v = read_sparsevec(empty.bytes()).unwrap();
    assert_eq!((v.nnz(), v.unused), (0, 9));
}

#[test]
fn sparsevec_rejects_negative_nnz() {
    let datum = Aligned::new(&sparsevec_image(10, -1, 0, &[], &[]));
    let (message, problem) = corruption(read_sparsevec(datum.bytes()));
    assert_eq!(
        message,
        "invalid sparsevec datum: negative element count -1"
    );
    assert!(matches!(problem, Corruption::Negative { value: -1, .. }));
    let datum = Aligned::new(&sparsevec_image(i32::MIN, 0, 0, &[], &[]));
    assert!(matches!(
        corruption(read_sparsevec(datum.bytes())).1,
        Corruption::Negative {
            field: "dimension count",
            ..
        }
    ));
}

#[test]
fn sparsevec_rejects_nnz_mismatch() {
    let datum = Aligned::new(&sparsevec_image(10, 3, 0, &[1, 2], &[1.0, 2.0]));
    let (message, problem) = corruption(read_sparsevec(datum.bytes()));
    assert_eq!(
        message,
        "invalid sparsevec datum: element count 3 needs 40 bytes, not 32"
    );
    assert!(matches!(problem, Corruption::LengthMismatch { .. }));
    let datum = Aligned::new(&sparsevec_image(10, 1, 0, &[1, 2], &[1.0, 2.0]));
    assert!(matches!(
        corruption(read_sparsevec(datum.bytes())).1,
        Corruption::LengthMismatch { value: 1, .. }
    ));
}

#[test]
fn sparsevec_rejects_counts_above_the_limits() {
    let datum = Aligned::new(&sparsevec_image(10, i32::MAX, 0, &[], &[]));
    assert!(matches!(
        corruption(read_sparsevec(datum.bytes())).1,
        Corruption::TooLarge { max: 16000, .. }
    ));
    let datum = Aligned::new(&sparsevec_image(1_000_000_001, 0, 0, &[], &[]));
    assert!(matches!(
        corruption(read_sparsevec(datum.bytes())).1,
        Corruption::TooLarge {
            max: 1_000_000_000,
            ..
        }
    ));
}

#[test]
fn sparsevec_parts_view_as_a_value() {
    let parts = SparsevecParts {
        dim: 4,
        indices: vec![0, 3],
        values: vec![1.0, 2.0],
    };
    let v = parts.view();
    assert_eq!((v.dim, v.unused, v.nnz()), (4, 0, 2));
}

#[test]
fn bit_reads() {
    let image = bit_image(9, &[0xff, 0x80]);
    let b = read_bit(&image).unwrap();
    assert_eq!((b.bit_len, b.bytes), (9, &[0xff, 0x80][..]));
    let empty = bit_image(0, &[]);
    assert_eq!(read_bit(&empty).unwrap().bytes, &[] as &[u8]);
    // A bit string has no alignment needs.
    let datum = Aligned::misaligned(&image);
    assert_eq!(read_bit(datum.misaligned_bytes()).unwrap().bit_len, 9);
}

#[test]
fn bit_rejects_bad_lengths() {
    let (message, _) = corruption(read_bit(&bit_image(-1, &[0])));
    assert_eq!(message, "invalid bit datum: negative bit length -1");
    let (message, _) = corruption(read_bit(&bit_image(17, &[0, 0])));
    assert_eq!(
        message,
        "invalid bit datum: bit length 17 needs 11 bytes, not 10"
    );
    assert!(read_bit(&bit_image(8, &[0, 0])).is_err());
    assert!(read_bit(&bit_image(i32::MAX, &[0, 0])).is_err());
}
