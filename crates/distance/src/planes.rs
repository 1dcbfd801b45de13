//! The bit-plane layout's bounds, shared by the portable and the SIMD code kernels (see
//! [`crate::codes`] for the layout).

/// The first `bits * 8 * words` bytes of `bytes`: the planes the kernels may
/// read. Panics if `bytes` is shorter (or the size overflows), so that no
/// kernel can read out of bounds whatever its arguments.
#[inline(always)]
pub(crate) fn planes(bytes: &[u8], bits: u32, words: usize) -> &[u8] {
    debug_assert!((1..=8).contains(&bits), "bits = {bits}, expected 1..=8");
    let len = words
        .checked_mul(8)
        .and_then(|plane| plane.checked_mul(bits as usize))
        .expect("bit-plane size overflows usize");
    debug_assert!(
        bytes.len() >= len,
        "{} bytes, {bits} planes of {words} words need {len}",
        bytes.len()
    );
    &bytes[..len]
}

/// Calls `$fixed::<CODE_BITS, QUERY_BITS>($args)` for the common pairs of
/// bit widths (codes of 1, 2, 4 or 8 bits against queries of 4 or 8 bits or
/// against codes of the same width), where the planes are unrolled and kept
/// in registers, and evaluates `$dynamic` for the other pairs.
macro_rules! by_bit_widths {
    ($code_bits:expr, $query_bits:expr, $fixed:ident($($arg:expr),* $(,)?), $dynamic:expr) => {
        match ($code_bits, $query_bits) {
            (1, 1) => $fixed::<1, 1>($($arg),*),
            (1, 4) => $fixed::<1, 4>($($arg),*),
            (1, 8) => $fixed::<1, 8>($($arg),*),
            (2, 2) => $fixed::<2, 2>($($arg),*),
            (2, 4) => $fixed::<2, 4>($($arg),*),
            (2, 8) => $fixed::<2, 8>($($arg),*),
            (4, 4) => $fixed::<4, 4>($($arg),*),
            (4, 8) => $fixed::<4, 8>($($arg),*),
            (8, 4) => $fixed::<8, 4>($($arg),*),
            (8, 8) => $fixed::<8, 8>($($arg),*),
            _ => $dynamic,
        }
    };
}
pub(crate) use by_bit_widths;
