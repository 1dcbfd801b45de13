//! The lists a scan reads: the `max_probes` nearest centers, nearest first.
//!
//! pgvector keeps the nearest lists seen so far in a pairing heap with the farthest at the
//! root: the first `max_probes` lists go in as they come; after that a list replaces the root
//! only if it is strictly nearer. The heap is then emptied from the farthest down. Lists at
//! equal distances come out in the order that heap's shape gives, which this module
//! reproduces by using the same heap rules ([`vector_pairing_heap`]).

use vector_pairing_heap::{HeapOrder, PairingHeap};

/// The indexes (positions in `distances`, i.e. lists in on-disk order) of the `max_probes`
/// nearest lists, nearest first.
pub fn nearest_lists(distances: impl IntoIterator<Item = f64>, max_probes: usize) -> Vec<u32> {
    if max_probes == 0 {
        return Vec::new();
    }
    let mut heap = PairingHeap::new(HeapOrder::Furthest);
    let mut farthest = f64::MAX;
    for (i, d) in distances.into_iter().enumerate() {
        let list = u32::try_from(i).expect("at most 32768 lists");
        if heap.len() < max_probes {
            heap.push(list, d);
            if heap.len() == max_probes {
                farthest = heap.peek().expect("not empty").1;
            }
        } else if d < farthest {
            heap.pop();
            heap.push(list, d);
            farthest = heap.peek().expect("not empty").1;
        }
    }
    let mut lists = vec![0; heap.len()];
    for slot in lists.iter_mut().rev() {
        *slot = heap.pop().expect("one item per slot").0;
    }
    lists
}

/// The lists of each batch of an iterative scan: `probes` lists at a time from the nearest
/// (the last batch may be shorter). With iterative scans off there is one batch.
pub fn batches(lists: &[u32], probes: usize) -> impl Iterator<Item = &[u32]> {
    lists.chunks(probes.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_first() {
        let d = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(nearest_lists(d, 3), vec![1, 3, 4]);
        assert_eq!(nearest_lists(d, 10), vec![1, 3, 4, 2, 0]);
        assert_eq!(nearest_lists(d, 0), Vec::<u32>::new());
    }

    #[test]
    fn boundary_ties_keep_the_earlier_list() {
        // List 2 ties with the farthest kept (list 0) and does not replace it.
        assert_eq!(nearest_lists([3.0, 1.0, 3.0], 2), vec![1, 0]);
    }

    #[test]
    fn all_equal_distances_follow_the_heap() {
        // A NULL query puts every list at distance 0: the first max_probes lists are kept,
        // in the order the heap yields them.
        let lists = nearest_lists([0.0; 6], 4);
        let mut sorted = lists.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 2, 3]);
    }

    #[test]
    fn batches_of_probes() {
        let lists = [7, 1, 4, 2, 9];
        let b: Vec<&[u32]> = batches(&lists, 2).collect();
        assert_eq!(b, vec![&[7, 1][..], &[4, 2][..], &[9][..]]);
    }
}
