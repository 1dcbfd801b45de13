//! Level assignment for new elements.
//!
//! As in the HNSW paper and pgvector, a new element's level is
//! `floor(-ln(U) * mL)` with `U` uniform in `[0, 1)` and `mL = 1 / ln(m)`,
//! capped so the element's neighbor tuple (`(level + 2) * m` item pointers)
//! still fits on one page and the level fits pgvector's `uint8`/63 limit.
//! The uniform source is supplied by the caller so builds are reproducible.

/// PostgreSQL's default block size.
pub const DEFAULT_BLOCK_SIZE: usize = 8192;

/// Page header (24) + special space (8) + neighbor tuple header (4) + line
/// pointer (4): the bytes of a page not available for neighbor item pointers.
const NEIGHBOR_PAGE_OVERHEAD: usize = 24 + 8 + 4 + 4;
/// Size of an item pointer (block number + offset).
const ITEM_POINTER_SIZE: usize = 6;

/// `mL = 1 / ln(m)`.
pub fn level_multiplier(m: usize) -> f64 {
    1.0 / (m as f64).ln()
}

/// Highest level an element may get for `m` with the given block size.
pub fn max_level_for_block(m: usize, block_size: usize) -> u8 {
    max_level_for_slots(m, block_size, ITEM_POINTER_SIZE)
}

/// Highest level an element may get for `m` when each neighbor slot takes `slot_bytes` (a
/// composite index keeps a 2-byte fingerprint beside each 6-byte item pointer).
pub fn max_level_for_slots(m: usize, block_size: usize, slot_bytes: usize) -> u8 {
    let slots = (block_size - NEIGHBOR_PAGE_OVERHEAD) / slot_bytes / m;
    let level = slots.saturating_sub(2).min(63);
    level as u8
}

/// Draws a level for `m`, at most `max_level`.
pub fn draw_level_capped(uniform: &mut impl FnMut() -> f64, m: usize, max_level: u8) -> u8 {
    level_from_uniform(uniform(), level_multiplier(m), max_level)
}

/// Highest level an element may get for `m` on 8 kB pages.
pub fn max_level(m: usize) -> u8 {
    max_level_for_block(m, DEFAULT_BLOCK_SIZE)
}

/// Level for one uniform draw `u` in `[0, 1)`.
pub fn level_from_uniform(u: f64, ml: f64, max_level: u8) -> u8 {
    let raw = -u.ln() * ml;
    // `as` saturates (u = 0 gives +inf), and truncation matches C's cast.
    let level = raw as u64;
    level.min(u64::from(max_level)) as u8
}

/// Draws a level for `m` from a caller-supplied uniform source.
pub fn draw_level(uniform: &mut impl FnMut() -> f64, m: usize) -> u8 {
    draw_level_capped(uniform, m, max_level(m))
}

/// Small deterministic generator (SplitMix64) for tests and tools.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// New generator from a seed.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform double in `[0, 1)` with 52 random bits (like `pg_prng_double`).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 12) as f64 * (1.0 / (1u64 << 52) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_match_pgvector_formula() {
        assert_eq!(max_level(16), 63);
        assert_eq!(max_level(100), 11);
        assert_eq!(max_level(2), 63);
        assert_eq!(max_level(50), 25);
        // 8-byte slots (item pointer and fingerprint): the composite format's caps.
        assert_eq!(max_level_for_slots(16, DEFAULT_BLOCK_SIZE, 8), 61);
        assert_eq!(max_level_for_slots(100, DEFAULT_BLOCK_SIZE, 8), 8);
        let mut draws = [0.0, 1e-300].into_iter();
        assert_eq!(draw_level_capped(&mut || draws.next().unwrap(), 16, 61), 61);
        assert_eq!(draw_level_capped(&mut || draws.next().unwrap(), 16, 61), 61);
    }

    #[test]
    fn level_from_uniform_edges() {
        let ml = level_multiplier(16);
        assert_eq!(level_from_uniform(0.999_999, ml, 63), 0);
        assert_eq!(level_from_uniform(0.0, ml, 63), 63);
        // -ln(1/16) * 1/ln(16) = 1 exactly in theory; just under 1/16 gives 1.
        assert_eq!(level_from_uniform(1.0 / 16.0 - 1e-12, ml, 63), 1);
        assert_eq!(level_from_uniform(1.0 / 256.0 - 1e-12, ml, 63), 2);
        assert_eq!(level_from_uniform(1e-300, ml, 5), 5);
    }

    #[test]
    fn level_distribution_is_geometric() {
        let mut rng = SplitMix64::new(7);
        let mut counts = [0usize; 8];
        let n = 200_000;
        for _ in 0..n {
            let level = draw_level(&mut || rng.next_f64(), 16) as usize;
            counts[level.min(7)] += 1;
        }
        // P(level >= 1) = 1/16.
        let above = (n - counts[0]) as f64 / n as f64;
        assert!((above - 1.0 / 16.0).abs() < 0.004, "{above}");
    }
}
