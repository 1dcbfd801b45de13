//! A scan batch's entries in distance order, without sorting what nobody reads.
//!
//! pgvector puts every entry of a batch into Postgres's tuplesort and sorts them all, although
//! a `LIMIT k` query reads only the first few. Where no two distances are equal, the order is
//! the same whatever sort produced it, so [`BatchOrder`] selects and sorts the entries in
//! growing chunks as they are asked for. Equal distances are ordered by how the tuplesort's
//! quicksort happens to move them, which only the tuplesort reproduces: when the next chunk
//! holds a tie (or any distance is NaN, which the tuplesort puts last, all equal), the order
//! stops with [`Next::Tie`] and the caller sorts the whole batch there, in read order, and
//! skips the entries already returned. They are the same: every one of them was strictly
//! nearer than all the rest.

use std::cmp::Ordering;

/// The first chunk selected and sorted (later chunks double).
const FIRST_CHUNK: usize = 32;

#[derive(Clone, Copy, Debug)]
struct Entry<T> {
    distance: f64,
    /// Position in read order.
    seq: u32,
    payload: T,
}

/// What [`BatchOrder::next_entry`] found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Next<T> {
    /// The next entry in distance order.
    Entry(T),
    /// The entries from here on include equal distances (or a NaN): only the exact sort can
    /// order them. `returned` entries were returned so far.
    Tie { returned: usize },
    /// Every entry was returned.
    End,
}

/// Entries pushed in read order, returned nearest first.
#[derive(Debug)]
pub struct BatchOrder<T> {
    entries: Vec<Entry<T>>,
    /// `entries[..ordered]` are in their final order (nothing after them is as near).
    ordered: usize,
    next: usize,
    nan: bool,
}

impl<T> Default for BatchOrder<T> {
    fn default() -> Self {
        BatchOrder {
            entries: Vec::new(),
            ordered: 0,
            next: 0,
            nan: false,
        }
    }
}

fn by_distance<T>(a: &Entry<T>, b: &Entry<T>) -> Ordering {
    a.distance.total_cmp(&b.distance)
}

impl<T: Copy> BatchOrder<T> {
    /// Bytes one entry takes (for a memory budget such as `work_mem`).
    pub const ENTRY_BYTES: usize = std::mem::size_of::<Entry<T>>();

    /// Empties the order for the next batch, keeping its memory.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.ordered = 0;
        self.next = 0;
        self.nan = false;
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds the next entry in read order (before the first [`BatchOrder::next_entry`]). False,
    /// with nothing added, when no memory could be had for it (the caller sorts otherwise).
    #[must_use]
    pub fn push(&mut self, distance: f64, payload: T) -> bool {
        let Ok(seq) = u32::try_from(self.entries.len()) else {
            return false;
        };
        if self.entries.try_reserve(1).is_err() {
            return false;
        }
        self.nan |= distance.is_nan();
        self.entries.push(Entry {
            distance,
            seq,
            payload,
        });
        true
    }

    /// The next entry nearest first, or where the order must be left to the exact sort.
    pub fn next_entry(&mut self) -> Next<T> {
        if self.nan {
            return Next::Tie { returned: 0 };
        }
        if self.next == self.ordered {
            if self.next == self.entries.len() {
                return Next::End;
            }
            if !self.order_next_chunk() {
                return Next::Tie {
                    returned: self.next,
                };
            }
        }
        let entry = self.entries[self.next];
        self.next += 1;
        Next::Entry(entry.payload)
    }

    /// Puts the next chunk in its final place and order; false if it ties with anything.
    fn order_next_chunk(&mut self) -> bool {
        let chunk = FIRST_CHUNK.max(self.ordered);
        let rest = &mut self.entries[self.ordered..];
        let k = chunk.min(rest.len());
        if k < rest.len() {
            rest.select_nth_unstable_by(k - 1, by_distance);
            // Everything after the chunk is at least as far as its farthest: ties only if equal.
            let farthest = rest[k - 1].distance;
            if rest[k..].iter().any(|e| e.distance == farthest) {
                return false;
            }
        }
        let head = &mut rest[..k];
        head.sort_unstable_by(by_distance);
        // `==` also finds -0.0 beside 0.0, which the tuplesort counts as equal.
        if head.windows(2).any(|w| w[0].distance == w[1].distance) {
            return false;
        }
        self.ordered += k;
        true
    }

    /// Every entry with its distance, in the order it was pushed (for the exact sort).
    pub fn read_order(&mut self) -> impl Iterator<Item = (f64, T)> + '_ {
        self.entries.sort_unstable_by_key(|e| e.seq);
        self.entries.iter().map(|e| (e.distance, e.payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn drain(order: &mut BatchOrder<u32>) -> (Vec<u32>, Option<usize>) {
        let mut out = Vec::new();
        loop {
            match order.next_entry() {
                Next::Entry(p) => out.push(p),
                Next::Tie { returned } => return (out, Some(returned)),
                Next::End => return (out, None),
            }
        }
    }

    fn filled(distances: &[f64]) -> BatchOrder<u32> {
        let mut order = BatchOrder::default();
        for (i, &d) in distances.iter().enumerate() {
            assert!(order.push(d, i as u32));
        }
        order
    }

    #[test]
    fn distinct_distances_come_out_sorted() {
        let d: Vec<f64> = (0..1000)
            .map(|i| ((i * 7919) % 1000) as f64 - 500.5)
            .collect();
        let (out, tie) = drain(&mut filled(&d));
        assert_eq!(tie, None);
        assert_eq!(out.len(), 1000);
        assert!(out.windows(2).all(|w| d[w[0] as usize] < d[w[1] as usize]));
    }

    #[test]
    fn a_tie_stops_at_the_chunk_that_holds_it() {
        // 100 distinct distances, then two equal ones beyond the first two chunks (32 + 32).
        let mut d: Vec<f64> = (0..100).map(f64::from).collect();
        d.push(80.0);
        let mut order = filled(&d);
        let (out, tie) = drain(&mut order);
        assert_eq!(tie, Some(64));
        assert_eq!(out, (0..64).collect::<Vec<u32>>());
        // The entries come back in read order for the exact sort.
        let back: Vec<(f64, u32)> = order.read_order().collect();
        assert_eq!(back.len(), 101);
        assert!(back
            .iter()
            .enumerate()
            .all(|(i, &(dist, p))| p as usize == i && dist == d[i]));
    }

    #[test]
    fn a_tie_across_the_chunk_boundary_is_found() {
        // The 32nd and 33rd nearest are equal: the first chunk cannot be returned.
        let mut d: Vec<f64> = (0..40).map(f64::from).collect();
        d[32] = 31.0;
        let (out, tie) = drain(&mut filled(&d));
        assert_eq!(out, Vec::<u32>::new());
        assert_eq!(tie, Some(0));
    }

    #[test]
    fn zero_and_negative_zero_tie() {
        let (_, tie) = drain(&mut filled(&[1.0, -0.0, 0.0]));
        assert_eq!(tie, Some(0));
    }

    #[test]
    fn nan_leaves_everything_to_the_exact_sort() {
        let (out, tie) = drain(&mut filled(&[1.0, f64::NAN, 2.0]));
        assert!(out.is_empty());
        assert_eq!(tie, Some(0));
    }

    #[test]
    fn empty_and_reused() {
        let mut order = BatchOrder::<u32>::default();
        assert_eq!(order.next_entry(), Next::End);
        assert!(order.push(2.0, 7) && order.push(1.0, 8));
        assert_eq!(drain(&mut order), (vec![8, 7], None));
        order.clear();
        assert!(order.is_empty());
        assert!(order.push(5.0, 1));
        assert_eq!(drain(&mut order), (vec![1], None));
    }

    proptest! {
        /// Whatever comes out before a tie (or all of it) is the true order's prefix, and a
        /// tie is reported exactly when some distances are equal.
        #[test]
        fn prefix_of_the_true_order(raw in proptest::collection::vec(-50i32..50, 0..300)) {
            let d: Vec<f64> = raw.iter().map(|&x| f64::from(x) / 4.0).collect();
            let (out, tie) = drain(&mut filled(&d));
            let mut sorted: Vec<f64> = d.clone();
            sorted.sort_by(f64::total_cmp);
            let has_tie = sorted.windows(2).any(|w| w[0] == w[1]);
            prop_assert_eq!(tie.is_some(), has_tie);
            if let Some(returned) = tie {
                prop_assert_eq!(returned, out.len());
            } else {
                prop_assert_eq!(out.len(), d.len());
            }
            for (i, &p) in out.iter().enumerate() {
                prop_assert_eq!(d[p as usize], sorted[i]);
                // Strictly nearer than everything not yet returned.
                if i + 1 < d.len() {
                    prop_assert!(sorted[i] < sorted[i + 1]);
                }
            }
        }
    }
}
