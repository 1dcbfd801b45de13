//! The bit-plane code kernels (`codes`) of every implementation this CPU
//! supports against a scalar reference that works element by element.

mod common;

use common::Rng;
use proptest::prelude::*;
use vector_distance::codes::{self, CodeKernels};

/// Every implementation available here; on x86-64 also checks that the SIMD
/// ones are listed whenever the CPU has their features, so that a detection
/// bug cannot silently skip them.
fn impls() -> &'static [CodeKernels] {
    let all = codes::implementations();
    assert_eq!(all[0].name, "portable");
    #[cfg(target_arch = "x86_64")]
    {
        let names: Vec<&str> = all.iter().map(|k| k.name).collect();
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt") {
            assert!(names.contains(&"avx2"), "{names:?}");
        }
        if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vpopcntdq")
        {
            assert!(names.contains(&"avx512vpopcntdq"), "{names:?}");
            if std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512vnni")
            {
                assert!(names.contains(&"avx512vpopcntdq+vnni"), "{names:?}");
            }
        }
    }
    all
}

// ---------------------------------------------------------------------------
// Scalar reference: elements in, elements out.
// ---------------------------------------------------------------------------

/// Bit planes of `elements` (`bits` bits each, `64 * words` of them), written
/// literally from the layout definition: bit `i % 64` of the little-endian
/// word `i / 64` of plane `j` is bit `j` of element `i`.
fn pack(elements: &[u32], bits: u32, words: usize) -> Vec<u8> {
    assert_eq!(elements.len(), 64 * words);
    let mut out = Vec::with_capacity(bits as usize * 8 * words);
    for j in 0..bits {
        for w in 0..words {
            let mut word = 0u64;
            for b in 0..64 {
                word |= u64::from((elements[64 * w + b] >> j) & 1) << b;
            }
            out.extend_from_slice(&word.to_le_bytes());
        }
    }
    out
}

/// Element `i` of a `bits`-bit code, extracted bit by bit from its planes.
fn element(planes: &[u8], bits: u32, words: usize, i: usize) -> u64 {
    let mut u = 0;
    for j in 0..bits as usize {
        let word = &planes[j * 8 * words + 8 * (i / 64)..][..8];
        let word = u64::from_le_bytes(word.try_into().unwrap());
        u |= ((word >> (i % 64)) & 1) << j;
    }
    u
}

/// `Σ_i u_i · v_i`, element by element.
fn reference_dot(code: &[u8], code_bits: u32, query: &[u8], query_bits: u32, words: usize) -> u64 {
    (0..64 * words)
        .map(|i| element(code, code_bits, words, i) * element(query, query_bits, words, i))
        .sum()
}

/// `Σ_i u_i`, element by element.
fn reference_sum(code: &[u8], bits: u32, words: usize) -> u64 {
    (0..64 * words).map(|i| element(code, bits, words, i)).sum()
}

fn random_elements(rng: &mut Rng, bits: u32, words: usize) -> Vec<u32> {
    (0..64 * words)
        .map(|_| (rng.next_u64() & ((1 << bits) - 1)) as u32)
        .collect()
}

/// `bytes` copied to byte `offset` of a fresh buffer, followed by 8 bytes of
/// garbage (`0xA5`) that the kernels must ignore; returns the buffer and the
/// range of the copy.
fn misaligned(bytes: &[u8], offset: usize) -> (Vec<u8>, std::ops::Range<usize>) {
    let mut buf = vec![0x5Au8; offset];
    buf.extend_from_slice(bytes);
    buf.extend_from_slice(&[0xA5; 8]);
    (buf, offset..offset + bytes.len())
}

/// Word counts tested: every count up to 40, then some larger ones.
fn word_counts() -> impl Iterator<Item = usize> {
    (0..=40).chain([63, 64, 65, 125])
}

/// Checks every implementation on one code/query pair, at the given byte
/// offsets, with garbage after both slices; returns the common result.
#[track_caller]
fn check_all(
    code: &[u8],
    code_bits: u32,
    query: &[u8],
    query_bits: u32,
    words: usize,
    expected: u64,
    offsets: (usize, usize),
) {
    let (cbuf, cr) = misaligned(code, offsets.0);
    let (qbuf, qr) = misaligned(query, offsets.1);
    // Slices with the trailing garbage: longer than needed is allowed.
    let (c, q) = (&cbuf[cr.start..], &qbuf[qr.start..]);
    for k in impls() {
        let got = (k.bitplane_dot)(c, code_bits, q, query_bits, words);
        assert_eq!(
            got, expected,
            "{} bitplane_dot words={words} code_bits={code_bits} query_bits={query_bits} offsets={offsets:?}",
            k.name
        );
        let got = (k.bitplane_sum)(c, code_bits, words);
        let want = reference_sum(code, code_bits, words);
        assert_eq!(
            got, want,
            "{} bitplane_sum words={words} bits={code_bits} offset={}",
            k.name, offsets.0
        );
    }
    // Exact-length slices too.
    for k in impls() {
        let got = (k.bitplane_dot)(
            &cbuf[cr.clone()],
            code_bits,
            &qbuf[qr.clone()],
            query_bits,
            words,
        );
        assert_eq!(got, expected, "{} exact-length slices", k.name);
    }
    assert_eq!(
        codes::bitplane_dot(c, code_bits, q, query_bits, words),
        expected,
        "dispatched bitplane_dot"
    );
    assert_eq!(
        codes::bitplane_sum(c, code_bits, words),
        reference_sum(code, code_bits, words),
        "dispatched bitplane_sum"
    );
}

// ---------------------------------------------------------------------------
// Tests.
// ---------------------------------------------------------------------------

/// The reference agrees with a plain integer dot product of the elements the
/// planes were packed from (so the layout is read as documented).
#[test]
fn reference_reads_the_documented_layout() {
    let mut rng = Rng::new(1);
    for words in [1, 2, 3, 7] {
        for bits in 1..=8 {
            let u = random_elements(&mut rng, bits, words);
            let v = random_elements(&mut rng, 8, words);
            let (pu, pv) = (pack(&u, bits, words), pack(&v, 8, words));
            assert_eq!(pu.len(), bits as usize * 8 * words);
            let direct: u64 = u.iter().zip(&v).map(|(a, b)| u64::from(a * b)).sum();
            assert_eq!(reference_dot(&pu, bits, &pv, 8, words), direct);
            let sum: u64 = u.iter().map(|&a| u64::from(a)).sum();
            assert_eq!(reference_sum(&pu, bits, words), sum);
            // Element 0 is the lowest bit of byte 0 of each plane; element
            // 9 is bit 1 of byte 1.
            for (i, byte, bit) in [(0, 0, 0), (9, 1, 1), (64 * words - 1, 8 * words - 1, 7)] {
                let from_byte = (0..bits as usize)
                    .map(|j| u32::from((pu[j * 8 * words + byte] >> bit) & 1) << j)
                    .sum::<u32>();
                assert_eq!(from_byte, u[i]);
            }
        }
    }
}

/// Random codes and queries, every word count up to 40 and a few larger,
/// every pair of bit widths, at varying misaligned offsets.
#[test]
fn random_inputs_match_reference() {
    let mut rng = Rng::new(2);
    for words in word_counts() {
        for code_bits in 1..=8 {
            for query_bits in 1..=8 {
                let u = random_elements(&mut rng, code_bits, words);
                let v = random_elements(&mut rng, query_bits, words);
                let (code, query) = (pack(&u, code_bits, words), pack(&v, query_bits, words));
                let expected: u64 = u.iter().zip(&v).map(|(a, b)| u64::from(a * b)).sum();
                assert_eq!(
                    expected,
                    reference_dot(&code, code_bits, &query, query_bits, words)
                );
                let offsets = (
                    (words + code_bits as usize) % 8,
                    (words * 3 + query_bits as usize) % 8,
                );
                check_all(
                    &code, code_bits, &query, query_bits, words, expected, offsets,
                );
            }
        }
    }
}

/// Every pair of byte offsets 0..8, at the typical sizes and bit widths.
#[test]
fn all_offsets() {
    let mut rng = Rng::new(3);
    for words in [1, 5, 6, 9, 12, 24] {
        for (code_bits, query_bits) in [(1, 4), (1, 8), (4, 8), (2, 8), (8, 8), (3, 5)] {
            let u = random_elements(&mut rng, code_bits, words);
            let v = random_elements(&mut rng, query_bits, words);
            let (code, query) = (pack(&u, code_bits, words), pack(&v, query_bits, words));
            let expected = reference_dot(&code, code_bits, &query, query_bits, words);
            for oc in 0..8 {
                for oq in 0..8 {
                    check_all(
                        &code,
                        code_bits,
                        &query,
                        query_bits,
                        words,
                        expected,
                        (oc, oq),
                    );
                }
            }
        }
    }
}

/// All ones (every element at its maximum, closed form), all zeros, and
/// ones against zeros.
#[test]
fn all_ones_and_all_zeros() {
    for words in word_counts() {
        for code_bits in 1..=8u32 {
            for query_bits in 1..=8u32 {
                let ones_c = vec![0xFF; code_bits as usize * 8 * words];
                let ones_q = vec![0xFF; query_bits as usize * 8 * words];
                let zeros_c = vec![0; ones_c.len()];
                let zeros_q = vec![0; ones_q.len()];
                let max = 64 * words as u64 * ((1 << code_bits) - 1) * ((1 << query_bits) - 1);
                let offsets = (words % 8, (words + 5) % 8);
                check_all(&ones_c, code_bits, &ones_q, query_bits, words, max, offsets);
                check_all(&zeros_c, code_bits, &zeros_q, query_bits, words, 0, offsets);
                check_all(&ones_c, code_bits, &zeros_q, query_bits, words, 0, offsets);
                check_all(&zeros_c, code_bits, &ones_q, query_bits, words, 0, offsets);
                for k in impls() {
                    let sum = 64 * words as u64 * ((1 << code_bits) - 1);
                    assert_eq!(
                        (k.bitplane_sum)(&ones_c, code_bits, words),
                        sum,
                        "{}",
                        k.name
                    );
                    assert_eq!(
                        (k.bitplane_sum)(&zeros_c, code_bits, words),
                        0,
                        "{}",
                        k.name
                    );
                }
            }
        }
    }
}

/// `words == 0` gives 0, with empty slices or not.
#[test]
fn zero_words() {
    for k in impls() {
        for bits in 1..=8 {
            assert_eq!((k.bitplane_dot)(&[], bits, &[], 8, 0), 0, "{}", k.name);
            assert_eq!((k.bitplane_dot)(&[0xFF; 9], bits, &[0xFF; 9], bits, 0), 0);
            assert_eq!((k.bitplane_sum)(&[], bits, 0), 0, "{}", k.name);
            assert_eq!((k.bitplane_sum)(&[0xFF; 9], bits, 0), 0, "{}", k.name);
        }
    }
}

/// The kernels see every bit: flipping bit `j` of element `i` in the code
/// changes the result by exactly `2^j · v_i` (so a kernel that skipped a
/// plane, a word or a lane would fail), and a flip with `v_i != 0` does
/// change it.
#[test]
fn single_bit_flips_change_the_result() {
    let mut rng = Rng::new(4);
    let mut changed = 0;
    for words in [1, 3, 6, 8, 9, 12, 17, 24] {
        for (code_bits, query_bits) in [(1, 4), (1, 8), (4, 8), (2, 4), (8, 8), (3, 7)] {
            let u = random_elements(&mut rng, code_bits, words);
            let v = random_elements(&mut rng, query_bits, words);
            let (code, query) = (pack(&u, code_bits, words), pack(&v, query_bits, words));
            for _ in 0..24 {
                let i = rng.below(64 * words as u64) as usize;
                let j = rng.below(u64::from(code_bits)) as usize;
                let mut flipped = code.clone();
                flipped[j * 8 * words + i / 8] ^= 1 << (i % 8);
                let before = reference_dot(&code, code_bits, &query, query_bits, words);
                let weight = (1u64 << j) * u64::from(v[i]);
                let expected = if (u[i] >> j) & 1 == 1 {
                    before - weight
                } else {
                    before + weight
                };
                let sum_before = reference_sum(&code, code_bits, words);
                let sum_expected = if (u[i] >> j) & 1 == 1 {
                    sum_before - (1 << j)
                } else {
                    sum_before + (1 << j)
                };
                for k in impls() {
                    let got = (k.bitplane_dot)(&flipped, code_bits, &query, query_bits, words);
                    assert_eq!(got, expected, "{} words={words} i={i} j={j}", k.name);
                    let got = (k.bitplane_sum)(&flipped, code_bits, words);
                    assert_eq!(
                        got, sum_expected,
                        "{} sum words={words} i={i} j={j}",
                        k.name
                    );
                }
                if weight != 0 {
                    assert_ne!(expected, before);
                    changed += 1;
                }
            }
        }
    }
    assert!(changed > 100, "only {changed} flips changed the result");
}

/// A code that is too short makes every implementation panic instead of
/// reading past the slice (in release builds too).
#[test]
fn short_slices_panic() {
    for k in impls() {
        for words in [1, 6, 9] {
            let full = vec![0xFFu8; 4 * 8 * words];
            let short = &full[..full.len() - 1];
            let dot = std::panic::catch_unwind(|| (k.bitplane_dot)(short, 4, &full, 4, words));
            assert!(dot.is_err(), "{} dot with a short code", k.name);
            let dot = std::panic::catch_unwind(|| (k.bitplane_dot)(&full, 4, short, 4, words));
            assert!(dot.is_err(), "{} dot with a short query", k.name);
            let sum = std::panic::catch_unwind(|| (k.bitplane_sum)(short, 4, words));
            assert!(sum.is_err(), "{} sum with a short code", k.name);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Arbitrary bytes (not packed from elements), lengths, widths and offsets.
    #[test]
    fn prop_arbitrary_bytes_match_reference(
        words in 0usize..=30,
        code_bits in 1u32..=8,
        query_bits in 1u32..=8,
        offsets in (0usize..8, 0usize..8),
        seed in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        let mut bytes = |bits: u32| -> Vec<u8> {
            (0..bits as usize * 8 * words).map(|_| rng.next_u64() as u8).collect()
        };
        let (code, query) = (bytes(code_bits), bytes(query_bits));
        let expected = reference_dot(&code, code_bits, &query, query_bits, words);
        check_all(&code, code_bits, &query, query_bits, words, expected, offsets);
    }
}

/// `byte_dot` of every implementation against a plain sum of products, at every length up
/// to 300 and a few long ones (past the kernels' partial-sum flushes, all bytes 255 included,
/// which would overflow a 32-bit sum), at odd offsets, with unequal slice lengths.
#[test]
fn byte_dot_matches_reference() {
    let mut rng = Rng::new(7);
    let reference = |a: &[u8], b: &[u8]| -> u64 {
        a.iter()
            .zip(b)
            .map(|(&x, &y)| u64::from(x) * u64::from(y))
            .sum()
    };
    let lengths = (0..=300).chain([4095, 4096, 4097, 65_536 + 17, 300_000]);
    for n in lengths {
        for fill in [None, Some(255u8)] {
            let bytes = |rng: &mut Rng, len: usize| -> Vec<u8> {
                (0..len)
                    .map(|_| fill.unwrap_or(rng.next_u64() as u8))
                    .collect()
            };
            let a = bytes(&mut rng, n + 3);
            let b = bytes(&mut rng, n + 1);
            let (a, b) = (&a[3..], &b[1..]);
            let want = reference(a, b);
            if fill.is_some() {
                assert_eq!(want, 65_025 * n as u64);
            }
            for k in impls() {
                assert_eq!((k.byte_dot)(a, b), want, "{} byte_dot n={n}", k.name);
                // The longer slice's extra bytes are ignored.
                let longer: Vec<u8> = a.iter().copied().chain([9, 9, 9]).collect();
                assert_eq!((k.byte_dot)(&longer, b), want, "{} longer slice", k.name);
            }
            assert_eq!(codes::byte_dot(a, b), want, "dispatched byte_dot n={n}");
        }
    }
}

/// `level_sums` gives the same bits on every implementation as a lane-by-lane reference, at
/// every length up to 100 and the usual dimensions, for scales below, at and past the cap.
#[test]
fn level_sums_match_reference() {
    let mut rng = Rng::new(11);
    let reference = |a: &[f32], t: f32, cap: f32| -> [f32; 2] {
        let (mut ip, mut sq) = ([0f32; 8], [0f32; 8]);
        let whole = a.len() - a.len() % 8;
        for (i, &v) in a[..whole].iter().enumerate() {
            let y = (t * v).clamp(0.0, cap).floor() + 0.5;
            ip[i % 8] += y * v;
            sq[i % 8] += y * y;
        }
        for &v in &a[whole..] {
            let y = (t * v).clamp(0.0, cap).floor() + 0.5;
            ip[0] += y * v;
            sq[0] += y * y;
        }
        let sum = |l: [f32; 8]| l.iter().fold(0f32, |s, &x| s + x);
        [sum(ip), sum(sq)]
    };
    for n in (0..=100).chain([384, 768, 1536]) {
        // Magnitudes in [0, 1), and a few negative values, which count as level 0.
        let a: Vec<f32> = (0..n)
            .map(|i| {
                let v = (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
                if i % 17 == 5 {
                    -v
                } else {
                    v
                }
            })
            .collect();
        for (t, cap) in [
            (0.5f32, 0.0f32),
            (3.7, 7.0),
            (40.0, 7.0),
            (150.3, 127.0),
            (1e9, 1.0),
        ] {
            let want = reference(&a, t, cap);
            for k in impls() {
                let got = (k.level_sums)(&a, t, cap);
                assert_eq!(
                    got.map(f32::to_bits),
                    want.map(f32::to_bits),
                    "{} n={n} t={t}",
                    k.name
                );
            }
            assert_eq!(codes::level_sums(&a, t, cap), want);
        }
    }
}
