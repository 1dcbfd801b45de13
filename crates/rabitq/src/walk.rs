//! How many candidates a graph walk over codes keeps for a requested `ef_search`.
//!
//! A walk that compares codes orders its candidates by estimates, so some of the true nearest
//! neighbours fall out of a queue of `ef_search` that an exact walk would have kept; the rerank
//! can only reorder the candidates it is given. The coarser the code, the more it loses. A
//! quantized index therefore keeps a wider queue than `hnsw.ef_search`, so that its recall at a
//! given setting is at least pgvector's at the same setting (the measurements that chose the
//! widths are in docs/benchmarks.md, "Recall at the defaults").

/// The upper bound of `hnsw.ef_search`; a wider queue is not kept.
pub const MAX_WALK_CANDIDATES: usize = 1000;

/// Queue width in 1/16ths of `ef_search`, by code width.
fn widening_sixteenths(bits: u32) -> usize {
    match bits {
        1 => 28,
        2 => 20,
        4 => 18,
        _ => 16,
    }
}

/// The queue a walk over `bits`-bit codes keeps when `ef_search` is asked for: never less than
/// `ef_search`, and at most [`MAX_WALK_CANDIDATES`] unless `ef_search` itself is more.
pub fn walk_candidates(ef_search: usize, bits: u32) -> usize {
    let wide = ef_search
        .saturating_mul(widening_sixteenths(bits))
        .div_ceil(16);
    wide.min(MAX_WALK_CANDIDATES).max(ef_search)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarser_codes_keep_more_candidates() {
        let widths: Vec<usize> = [1, 2, 4, 8]
            .iter()
            .map(|&b| walk_candidates(40, b))
            .collect();
        assert_eq!(widths, vec![70, 50, 45, 40]);
        assert!(widths.windows(2).all(|w| w[0] >= w[1]));
    }

    #[test]
    fn never_narrower_than_asked() {
        for bits in [1, 2, 4, 8] {
            for ef in [1, 2, 3, 10, 17, 40, 999, 1000] {
                let w = walk_candidates(ef, bits);
                assert!(w >= ef, "{bits} bits, ef {ef}: {w}");
            }
        }
        assert_eq!(walk_candidates(1, 1), 2);
    }

    #[test]
    fn capped_at_the_settings_bound() {
        assert_eq!(walk_candidates(900, 1), MAX_WALK_CANDIDATES);
        assert_eq!(walk_candidates(1000, 2), 1000);
        assert_eq!(walk_candidates(usize::MAX, 1), usize::MAX);
    }
}
