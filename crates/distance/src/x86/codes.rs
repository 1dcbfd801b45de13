//! Kernels of the quantized codes: bit-plane dot products and sums, byte dot products, the
//! level search of extended RaBitQ.

use core::arch::x86_64::*;

use crate::planes::{by_bit_widths, planes};
use crate::portable;
use crate::table::CodeKernels;
use crate::x86::bits::load64;

// ---------------------------------------------------------------------------
// Bit-plane codes (`codes.rs`): integer results, independent of the order.
//
// Hand-written word loops: `bitplane_dot` is the hot kernel of graph search
// over quantized codes (one prepared query against ~2,000 codes, one call
// each). For the common bit widths the planes are unrolled: each chunk of
// words of every plane is loaded once and kept in registers, the counts of
// the plane pairs of equal weight `2^(j+k)` share one accumulator, and the
// weights are applied at the end (AVX2: also whenever its byte counters
// could overflow), before a single horizontal reduction.
//
// AVX2 counts bits with the nibble lookup (`vpshufb`) and `vpsadbw`. Scalar
// POPCNT on 64-bit words (the portable loop compiled with `popcnt`) was
// measured too, on an AMD EPYC (Zen 4), one call per code over 2,000 codes:
// 1.4x to 2.4x slower (4-bit codes, 8-bit query: 86 / 142 / 268 ns against
// 45 / 60 / 113 ns at 384 / 768 / 1536 dimensions), so it is only used for
// `bitplane_sum` (not hot) and for the uncommon bit widths.
// ---------------------------------------------------------------------------

/// The AVX-512 VPOPCNTDQ code kernels, if the CPU supports them.
pub(crate) fn code_kernels_avx512() -> Option<CodeKernels> {
    let supported = std::is_x86_feature_detected!("avx512f")
        && std::is_x86_feature_detected!("avx512vpopcntdq")
        && std::is_x86_feature_detected!("avx2");
    supported.then_some(CodeKernels {
        name: "avx512vpopcntdq",
        bitplane_dot: self::entry::bitplane_dot_avx512,
        bitplane_sum: self::entry::bitplane_sum_avx512,
        // Every AVX-512 CPU has AVX2.
        byte_dot: self::entry::byte_dot_avx2,
        level_sums: self::entry::level_sums_avx2,
    })
}

/// The AVX-512 VPOPCNTDQ code kernels with the AVX-512 VNNI `byte_dot`, if the CPU supports
/// them: VNNI multiplies 64 byte pairs an instruction where AVX2 widens 16 at a time first.
pub(crate) fn code_kernels_avx512_vnni() -> Option<CodeKernels> {
    let vnni =
        std::is_x86_feature_detected!("avx512bw") && std::is_x86_feature_detected!("avx512vnni");
    code_kernels_avx512()
        .filter(|_| vnni)
        .map(|base| CodeKernels {
            name: "avx512vpopcntdq+vnni",
            byte_dot: self::entry::byte_dot_avx512vnni,
            ..base
        })
}

/// The AVX2 code kernels, if the CPU supports AVX2 and POPCNT.
pub(crate) fn code_kernels_avx2() -> Option<CodeKernels> {
    let supported =
        std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt");
    supported.then_some(CodeKernels {
        name: "avx2",
        bitplane_dot: self::entry::bitplane_dot_avx2,
        bitplane_sum: self::entry::bitplane_sum_popcnt,
        byte_dot: self::entry::byte_dot_avx2,
        level_sums: self::entry::level_sums_avx2,
    })
}

/// Planes `0..P` of `bytes`, `stride` bytes each, as chunks of `B` bytes and
/// the remaining tail (shorter than `B` bytes).
#[inline(always)]
fn split_planes<const P: usize, const B: usize>(
    bytes: &[u8],
    stride: usize,
) -> [(&[[u8; B]], &[u8]); P] {
    core::array::from_fn(|p| bytes[p * stride..][..stride].as_chunks::<B>())
}

/// Up to 8 little-endian words from the start of `x` in the low lanes
/// (fewer if `x` is shorter than 64 bytes), zeros in the other lanes.
#[inline]
#[target_feature(enable = "avx512f")]
fn load_words512(x: &[u8]) -> __m512i {
    let n = (x.len() / 8).min(8);
    let mask = ((1u32 << n) - 1) as __mmask8;
    // SAFETY: the mask enables only the first `n` words, which lie within
    // `x`; masked-off lanes are not accessed (no fault), and `loadu` needs
    // no alignment.
    unsafe { _mm512_maskz_loadu_epi64(mask, x.as_ptr().cast()) }
}

/// Adds `popcount(code_j & query_k)` to `diag[j + k]`, lane by lane.
#[inline]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn dot512_step<const CB: usize, const QB: usize>(
    diag: &mut [__m512i; 15],
    code: [__m512i; CB],
    query: [__m512i; QB],
) {
    for (j, c) in code.iter().enumerate() {
        for (k, q) in query.iter().enumerate() {
            let count = _mm512_popcnt_epi64(_mm512_and_si512(*c, *q));
            diag[j + k] = _mm512_add_epi64(diag[j + k], count);
        }
    }
}

/// `bitplane_dot` for `CB`-bit codes and `QB`-bit queries (`CB, QB <= 8`),
/// 8 words per register; `code` and `query` are exactly their planes.
#[inline]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn dot512_fixed<const CB: usize, const QB: usize>(code: &[u8], query: &[u8], words: usize) -> u64 {
    let stride = 8 * words;
    let c = split_planes::<CB, 64>(code, stride);
    let q = split_planes::<QB, 64>(query, stride);
    // diag[s]: per lane, Σ over j + k = s of popcount(code_j & query_k).
    let mut diag = [_mm512_setzero_si512(); 15];
    for i in 0..c[0].0.len() {
        let cv = core::array::from_fn(|j| load64(&c[j].0[i]));
        let qv = core::array::from_fn(|k| load64(&q[k].0[i]));
        dot512_step::<CB, QB>(&mut diag, cv, qv);
    }
    if !c[0].1.is_empty() {
        let cv = core::array::from_fn(|j| load_words512(c[j].1));
        let qv = core::array::from_fn(|k| load_words512(q[k].1));
        dot512_step::<CB, QB>(&mut diag, cv, qv);
    }
    // Σ_s 2^s diag[s]: independent shifts, then a tree of additions (a
    // Horner chain would be twice as many dependent steps), then the lanes.
    let mut terms: [__m512i; 15] =
        core::array::from_fn(|s| _mm512_sll_epi64(diag[s], _mm_cvtsi32_si128(s as i32)));
    let mut n = CB + QB - 1;
    while n > 1 {
        for i in 0..n / 2 {
            terms[i] = _mm512_add_epi64(terms[2 * i], terms[2 * i + 1]);
        }
        if n % 2 == 1 {
            terms[n / 2] = terms[n - 1];
        }
        n = n.div_ceil(2);
    }
    _mm512_reduce_add_epi64(terms[0]) as u64
}

/// Per lane, `popcount(a & b)` summed over the words of two equally long
/// planes, 8 words per register.
#[inline]
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn and_count512(a: &[u8], b: &[u8]) -> __m512i {
    let (ac, at) = a.as_chunks::<64>();
    let (bc, bt) = b.as_chunks::<64>();
    let mut count = _mm512_setzero_si512();
    for (x, y) in ac.iter().zip(bc) {
        let v = _mm512_and_si512(load64(x), load64(y));
        count = _mm512_add_epi64(count, _mm512_popcnt_epi64(v));
    }
    if !at.is_empty() {
        let v = _mm512_and_si512(load_words512(at), load_words512(bt));
        count = _mm512_add_epi64(count, _mm512_popcnt_epi64(v));
    }
    count
}

/// `bitplane_dot` for any bit widths, one plane pair at a time.
#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn dot512_dynamic(code: &[u8], query: &[u8], words: usize) -> u64 {
    let stride = 8 * words;
    // Horner over j (outer) and k (inner), from the highest plane down.
    let mut total = _mm512_setzero_si512();
    for c in code.chunks_exact(stride).rev() {
        let mut row = _mm512_setzero_si512();
        for q in query.chunks_exact(stride).rev() {
            row = _mm512_add_epi64(_mm512_add_epi64(row, row), and_count512(c, q));
        }
        total = _mm512_add_epi64(_mm512_add_epi64(total, total), row);
    }
    _mm512_reduce_add_epi64(total) as u64
}

#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn bitplane_dot_avx512(
    code: &[u8],
    code_bits: u32,
    query: &[u8],
    query_bits: u32,
    words: usize,
) -> u64 {
    let code = planes(code, code_bits, words);
    let query = planes(query, query_bits, words);
    if words == 0 {
        return 0;
    }
    by_bit_widths!(
        code_bits,
        query_bits,
        dot512_fixed(code, query, words),
        dot512_dynamic(code, query, words)
    )
}

#[target_feature(enable = "avx512f,avx512vpopcntdq")]
fn bitplane_sum_avx512(code: &[u8], bits: u32, words: usize) -> u64 {
    let code = planes(code, bits, words);
    if words == 0 {
        return 0;
    }
    let mut total = _mm512_setzero_si512();
    for plane in code.chunks_exact(8 * words).rev() {
        total = _mm512_add_epi64(_mm512_add_epi64(total, total), and_count512(plane, plane));
    }
    _mm512_reduce_add_epi64(total) as u64
}

#[inline]
#[target_feature(enable = "avx2")]
fn load32(x: &[u8; 32]) -> __m256i {
    // SAFETY: `x` is 32 readable bytes; `loadu` needs no alignment.
    unsafe { _mm256_loadu_si256(x.as_ptr().cast()) }
}

/// Up to 4 little-endian words from the start of `x` in the low lanes
/// (fewer if `x` is shorter than 32 bytes), zeros in the other lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn load_words256(x: &[u8]) -> __m256i {
    let n = (x.len() / 8).min(4) as i64;
    let mask = _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
    // SAFETY: `vpmaskmovq` reads only the lanes enabled by `mask`, the first
    // `n` words, which lie within `x` (the others are not accessed and do not
    // fault); it needs no alignment.
    unsafe { _mm256_maskload_epi64(x.as_ptr().cast(), mask) }
}

/// Per byte, the number of set bits (nibble lookup with `vpshufb`).
#[inline]
#[target_feature(enable = "avx2")]
fn popcount_bytes256(x: __m256i) -> __m256i {
    let table = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, //
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
    );
    let low = _mm256_set1_epi8(0x0f);
    let lo = _mm256_and_si256(x, low);
    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(x), low);
    _mm256_add_epi8(
        _mm256_shuffle_epi8(table, lo),
        _mm256_shuffle_epi8(table, hi),
    )
}

/// Adds, per byte, `popcount(code_j & query_k)` to `diag[j + k]` for one
/// chunk of 4 words.
#[inline]
#[target_feature(enable = "avx2")]
fn dot256_accumulate<const CB: usize, const QB: usize>(
    diag: &mut [__m256i; 15],
    code: [__m256i; CB],
    query: [__m256i; QB],
) {
    // Nibble lookup with `vpshufb`, the nibbles split once per plane: the
    // low nibbles of `code & query` are `code & (query & 0x0f)`, the high
    // ones `(code >> 4) & ((query >> 4) & 0x0f)`.
    let table = _mm256_setr_epi8(
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4, //
        0, 1, 1, 2, 1, 2, 2, 3, 1, 2, 2, 3, 2, 3, 3, 4,
    );
    if CB == 1 {
        // Splitting the nibbles once per plane does not pay for one plane.
        for (k, q) in query.iter().enumerate() {
            let count = popcount_bytes256(_mm256_and_si256(code[0], *q));
            diag[k] = _mm256_add_epi8(diag[k], count);
        }
        return;
    }
    let low = _mm256_set1_epi8(0x0f);
    let q_lo = query.map(|q| _mm256_and_si256(q, low));
    let q_hi = query.map(|q| _mm256_and_si256(_mm256_srli_epi16::<4>(q), low));
    for (j, c) in code.iter().enumerate() {
        let c_hi = _mm256_srli_epi16::<4>(*c);
        for k in 0..QB {
            let lo = _mm256_shuffle_epi8(table, _mm256_and_si256(*c, q_lo[k]));
            let hi = _mm256_shuffle_epi8(table, _mm256_and_si256(c_hi, q_hi[k]));
            diag[j + k] = _mm256_add_epi8(_mm256_add_epi8(diag[j + k], lo), hi);
        }
    }
}

/// Per 64-bit lane, `Σ_s 2^s Σ_bytes diag[s]`; clears `diag`.
#[inline]
#[target_feature(enable = "avx2")]
fn dot256_flush<const CB: usize, const QB: usize>(diag: &mut [__m256i; 15]) -> __m256i {
    // `vpsadbw` sums the 8 bytes of each lane; then independent shifts and
    // a tree of additions.
    let zero = _mm256_setzero_si256();
    let mut terms: [__m256i; 15] = core::array::from_fn(|s| {
        _mm256_sll_epi64(_mm256_sad_epu8(diag[s], zero), _mm_cvtsi32_si128(s as i32))
    });
    *diag = [zero; 15];
    let mut n = CB + QB - 1;
    while n > 1 {
        for i in 0..n / 2 {
            terms[i] = _mm256_add_epi64(terms[2 * i], terms[2 * i + 1]);
        }
        if n % 2 == 1 {
            terms[n / 2] = terms[n - 1];
        }
        n = n.div_ceil(2);
    }
    terms[0]
}

/// `bitplane_dot` for `CB`-bit codes and `QB`-bit queries (`CB, QB <= 8`),
/// 4 words per register; `code` and `query` are exactly their planes.
#[inline]
#[target_feature(enable = "avx2")]
fn dot256_fixed<const CB: usize, const QB: usize>(code: &[u8], query: &[u8], words: usize) -> u64 {
    let stride = 8 * words;
    let c = split_planes::<CB, 32>(code, stride);
    let q = split_planes::<QB, 32>(query, stride);
    // A chunk adds at most 8 * min(CB, QB) to a byte of `diag`: flush the
    // bytes to 64-bit lanes before they could overflow.
    let per_flush = 255 / (8 * CB.min(QB));
    let mut diag = [_mm256_setzero_si256(); 15];
    let mut pending = 0;
    let mut total = _mm256_setzero_si256();
    for i in 0..c[0].0.len() {
        if pending == per_flush {
            total = _mm256_add_epi64(total, dot256_flush::<CB, QB>(&mut diag));
            pending = 0;
        }
        let cv = core::array::from_fn(|j| load32(&c[j].0[i]));
        let qv = core::array::from_fn(|k| load32(&q[k].0[i]));
        dot256_accumulate::<CB, QB>(&mut diag, cv, qv);
        pending += 1;
    }
    if !c[0].1.is_empty() {
        if pending == per_flush {
            total = _mm256_add_epi64(total, dot256_flush::<CB, QB>(&mut diag));
        }
        let cv = core::array::from_fn(|j| load_words256(c[j].1));
        let qv = core::array::from_fn(|k| load_words256(q[k].1));
        dot256_accumulate::<CB, QB>(&mut diag, cv, qv);
    }
    total = _mm256_add_epi64(total, dot256_flush::<CB, QB>(&mut diag));
    let pair = _mm_add_epi64(
        _mm256_castsi256_si128(total),
        _mm256_extracti128_si256::<1>(total),
    );
    (_mm_cvtsi128_si64(pair) as u64).wrapping_add(_mm_extract_epi64::<1>(pair) as u64)
}

#[target_feature(enable = "avx2,popcnt")]
fn bitplane_dot_avx2(
    code: &[u8],
    code_bits: u32,
    query: &[u8],
    query_bits: u32,
    words: usize,
) -> u64 {
    let code = planes(code, code_bits, words);
    let query = planes(query, query_bits, words);
    if words == 0 {
        return 0;
    }
    by_bit_widths!(
        code_bits,
        query_bits,
        dot256_fixed(code, query, words),
        portable::bitplane_dot_impl(code, code_bits, query, query_bits, words)
    )
}

#[target_feature(enable = "popcnt")]
fn bitplane_sum_popcnt(code: &[u8], bits: u32, words: usize) -> u64 {
    portable::bitplane_sum_impl(code, bits, words)
}

/// `byte_dot`: 16 bytes of each operand at a time, widened to 16-bit lanes and multiplied
/// into 32-bit pair sums (`vpmaddwd`; 255 · 255 · 2 fits), which are added into 64-bit
/// lanes every 16 chunks so that no 32-bit lane can overflow whatever the length.
#[target_feature(enable = "avx2")]
fn byte_dot_avx2(a: &[u8], b: &[u8]) -> u64 {
    let n = a.len().min(b.len());
    let (ca, _) = a[..n].as_chunks::<16>();
    let (cb, _) = b[..n].as_chunks::<16>();
    let mut wide = _mm256_setzero_si256();
    for (ga, gb) in ca.chunks(16).zip(cb.chunks(16)) {
        let mut acc = _mm256_setzero_si256();
        for (x, y) in ga.iter().zip(gb) {
            // SAFETY: `x` and `y` are 16 readable bytes; `loadu` needs no alignment.
            let (x, y) = unsafe {
                (
                    _mm_loadu_si128(x.as_ptr().cast()),
                    _mm_loadu_si128(y.as_ptr().cast()),
                )
            };
            let prod = _mm256_madd_epi16(_mm256_cvtepu8_epi16(x), _mm256_cvtepu8_epi16(y));
            acc = _mm256_add_epi32(acc, prod);
        }
        // Lanes hold non-negative sums below 2^31: widen them unsigned.
        wide = _mm256_add_epi64(wide, _mm256_cvtepu32_epi64(_mm256_castsi256_si128(acc)));
        wide = _mm256_add_epi64(
            wide,
            _mm256_cvtepu32_epi64(_mm256_extracti128_si256::<1>(acc)),
        );
    }
    let pair = _mm_add_epi64(
        _mm256_castsi256_si128(wide),
        _mm256_extracti128_si256::<1>(wide),
    );
    let head = (_mm_cvtsi128_si64(pair) as u64).wrapping_add(_mm_extract_epi64::<1>(pair) as u64);
    let tail = n - n % 16;
    head + portable::byte_dot_impl(&a[tail..n], &b[tail..n])
}

/// `byte_dot` with AVX-512 VNNI, 64 bytes a step. `vpdpbusd` multiplies unsigned bytes by
/// signed ones, so it takes `b - 128` (the sign bit flipped) and adds back `128 · Σ a`
/// (`vpsadbw` against zero). Four accumulators, since each `vpdpbusd` waits for the last one
/// into the same register; the tail's bytes past the end are loaded as zeros, adding nothing.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
fn byte_dot_avx512vnni(a: &[u8], b: &[u8]) -> u64 {
    // Each 32-bit lane adds 4 products of magnitude below 2^15 a step: 2,048 steps in each of
    // 4 accumulators stay below 2^30 together before they are widened.
    const STEPS: usize = 2048;
    let n = a.len().min(b.len());
    let flip = _mm512_set1_epi8(i8::MIN);
    let zero = _mm512_setzero_si512();
    let load = |at: usize, len: usize| {
        let mask: __mmask64 = u64::MAX >> (64 - len);
        // SAFETY: the mask enables only the `len` bytes from `at`, which lie within both
        // slices (`at + len <= n`); masked-off bytes are not accessed, and `loadu` needs no
        // alignment.
        unsafe {
            (
                _mm512_maskz_loadu_epi8(mask, a.as_ptr().add(at).cast()),
                _mm512_xor_si512(
                    _mm512_maskz_loadu_epi8(mask, b.as_ptr().add(at).cast()),
                    flip,
                ),
            )
        }
    };
    let (mut products, mut sums) = (zero, zero);
    let mut at = 0;
    while at < n {
        let end = n.min(at + 4 * 64 * STEPS);
        let mut acc = [zero; 4];
        while at + 4 * 64 <= end {
            for (k, acc) in acc.iter_mut().enumerate() {
                let (x, y) = load(at + 64 * k, 64);
                *acc = _mm512_dpbusd_epi32(*acc, x, y);
                sums = _mm512_add_epi64(sums, _mm512_sad_epu8(x, zero));
            }
            at += 4 * 64;
        }
        for acc in acc.iter_mut() {
            if at < end {
                let len = (end - at).min(64);
                let (x, y) = load(at, len);
                *acc = _mm512_dpbusd_epi32(*acc, x, y);
                sums = _mm512_add_epi64(sums, _mm512_sad_epu8(x, zero));
                at += len;
            }
        }
        let acc = _mm512_add_epi32(
            _mm512_add_epi32(acc[0], acc[1]),
            _mm512_add_epi32(acc[2], acc[3]),
        );
        products = _mm512_add_epi64(products, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc)));
        products = _mm512_add_epi64(
            products,
            _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64::<1>(acc)),
        );
    }
    let total = _mm512_add_epi64(products, _mm512_slli_epi64::<7>(sums));
    _mm512_reduce_add_epi64(total) as u64
}

/// `level_sums`: the portable loop compiled for AVX2, whose 8 lanes then fill one register.
/// Same operations in the same order (no FMA contraction), so the same bits.
#[target_feature(enable = "avx2")]
fn level_sums_avx2(a: &[f32], t: f32, cap: f32) -> [f32; 2] {
    portable::level_sums_impl(a, t, cap)
}

/// Plain `fn` entry points of this module's kernels, stored in the table that
/// [`super::kernels`] builds only after detecting the features they need.
pub(super) mod entry {

    crate::x86::entries::entries! {
        bitplane_dot_avx512(c: &[u8], cb: u32, q: &[u8], qb: u32, words: usize) -> u64;
        bitplane_sum_avx512(c: &[u8], bits: u32, words: usize) -> u64;
        bitplane_dot_avx2(c: &[u8], cb: u32, q: &[u8], qb: u32, words: usize) -> u64;
        bitplane_sum_popcnt(c: &[u8], bits: u32, words: usize) -> u64;
        byte_dot_avx2(a: &[u8], b: &[u8]) -> u64;
        byte_dot_avx512vnni(a: &[u8], b: &[u8]) -> u64;
        level_sums_avx2(a: &[f32], t: f32, cap: f32) -> [f32; 2];
    }
}
