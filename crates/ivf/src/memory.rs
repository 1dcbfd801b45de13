//! What pgvector 0.8.6 counts against `maintenance_work_mem` while it builds an ivfflat index,
//! so that the same builds fail with the same "memory required" figure.
//!
//! A "vector array" is a 32-byte header and `n` slots of `MAXALIGN(item size)` bytes. The
//! build checks three running totals: the centers; plus the samples (at the target sample
//! count); plus k-means' work arrays (new centers, sums, counts, assignments, bounds, center
//! distances), with the samples actually collected.

/// `sizeof(VectorArrayData)` on 64-bit platforms.
pub const VECTOR_ARRAY_HEADER: usize = 32;

/// `MAXALIGN` (8 on 64-bit platforms).
pub const fn maxalign(n: usize) -> usize {
    (n + 7) & !7
}

/// A size computation overflowed (`Size` arithmetic in pgvector raises an error then).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow;

/// `VECTOR_ARRAY_SIZE(n, item_size)`.
pub fn vector_array_size(n: usize, item_size: usize) -> Result<usize, Overflow> {
    n.checked_mul(maxalign(item_size))
        .and_then(|items| items.checked_add(VECTOR_ARRAY_HEADER))
        .ok_or(Overflow)
}

/// What k-means allocates besides the samples and centers: `k` centers, `n` samples of
/// `dimensions` components with items of `item_size` bytes.
pub fn kmeans_size(
    k: usize,
    n: usize,
    dimensions: usize,
    item_size: usize,
) -> Result<usize, Overflow> {
    let f = 4usize; // sizeof(float) and sizeof(int)
    let parts = [
        vector_array_size(k, item_size)?, // new centers
        mul(&[f, k, dimensions])?,        // sums
        mul(&[f, k])?,                    // counts per center
        mul(&[f, n])?,                    // closest center per sample
        mul(&[f, n, k])?,                 // lower bounds
        mul(&[f, n])?,                    // upper bounds
        mul(&[f, k])?,                    // s
        mul(&[f, k, k])?,                 // half distances between centers
        mul(&[f, k])?,                    // distance moved by each center
    ];
    parts
        .iter()
        .try_fold(0usize, |sum, &p| sum.checked_add(p))
        .ok_or(Overflow)
}

fn mul(factors: &[usize]) -> Result<usize, Overflow> {
    factors
        .iter()
        .try_fold(1usize, |p, &f| p.checked_mul(f))
        .ok_or(Overflow)
}

/// The error pgvector raises when `total` bytes exceed `maintenance_work_mem` (in kB):
/// `(MB required, maintenance_work_mem in MB)`, or `None` when it fits.
pub fn exceeds(total: usize, maintenance_work_mem_kb: usize) -> Option<(usize, usize)> {
    (total / 1024 > maintenance_work_mem_kb)
        .then(|| (total / (1024 * 1024) + 1, maintenance_work_mem_kb / 1024))
}

/// How many samples a build of `lists` lists over a table of `heap_blocks` blocks takes:
/// 50 per list and at least 10,000, but no more than the table can hold (291 tuples per
/// block) and at least one.
pub fn sample_count(lists: usize, heap_blocks: usize) -> usize {
    const MAX_HEAP_TUPLES_PER_PAGE: usize = 291;
    let max_tuples = heap_blocks.saturating_mul(MAX_HEAP_TUPLES_PER_PAGE);
    lists.saturating_mul(50).max(10_000).min(max_tuples).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_sizes() {
        assert_eq!(vector_array_size(100, 8 + 4 * 3).unwrap(), 32 + 100 * 24);
        assert_eq!(vector_array_size(usize::MAX, 8), Err(Overflow));
    }

    #[test]
    fn kmeans_parts() {
        // k = 2, n = 3, d = 3, item 20 (aligned 24)
        let expected = (32 + 2 * 24)
            + 4 * 2 * 3
            + 4 * 2
            + 4 * 3
            + 4 * 3 * 2
            + 4 * 3
            + 4 * 2
            + 4 * 2 * 2
            + 4 * 2;
        assert_eq!(kmeans_size(2, 3, 3, 20).unwrap(), expected);
    }

    #[test]
    fn limit() {
        assert_eq!(exceeds(1024 * 1024, 1024), None);
        assert_eq!(exceeds(1024 * 1024 + 1024, 1024), Some((2, 1)));
        assert_eq!(exceeds(64 * 1024 * 1024, 1024), Some((65, 1)));
    }

    #[test]
    fn samples() {
        assert_eq!(sample_count(100, 1_000_000), 10_000);
        assert_eq!(sample_count(1000, 1_000_000), 50_000);
        assert_eq!(sample_count(100, 2), 582);
        assert_eq!(sample_count(100, 0), 1);
    }
}
