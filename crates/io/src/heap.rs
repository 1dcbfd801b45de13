//! Hints for the table blocks of the rows an index scan is about to return ([`HeapRowHints`]).

use crate::source::{BlockNumber, BlockSource, Prefetched};

/// How many rows past the one being returned a scan asks the table for, once `returned`
/// rows were handed out, with at most `budget` reads in flight. It starts at one and grows by
/// one every two rows: a `LIMIT k` query then wastes about `k / 2` reads at most, while a long
/// scan reaches the full budget.
pub fn heap_lookahead_distance(returned: usize, budget: usize) -> usize {
    budget.min(1 + returned / 2)
}

/// Hints for the table blocks of the rows an index scan is about to return: after the walk,
/// the executor fetches each row's heap tuple one after the other, and these reads would
/// otherwise wait one by one. Used only when the walk ended cold (a resident table is never
/// hinted); hints never bring pages into shared buffers.
pub struct HeapRowHints<S: BlockSource> {
    heap: S,
    /// The table's tablespace I/O concurrency.
    budget: usize,
    /// Rows (in the order they are returned) already hinted or passed over.
    hinted: usize,
    last_block: Option<BlockNumber>,
    /// Hints issued (blocks that were not already in shared buffers).
    pub issued: u64,
}

impl<S: BlockSource> HeapRowHints<S> {
    /// Hints for the rows of the table `heap` reads.
    pub fn new(mut heap: S) -> Self {
        let budget = heap.platform().io_concurrency;
        HeapRowHints {
            heap,
            budget,
            hinted: 0,
            last_block: None,
            issued: 0,
        }
    }

    /// A rescan starts numbering rows again.
    pub fn restart(&mut self) {
        self.hinted = 0;
        self.last_block = None;
    }

    /// `returned` rows were handed out; `next_blocks` are the table blocks of the rows that
    /// follow, in the order they will be returned. Hints the ones within
    /// [`heap_lookahead_distance`] not hinted yet, each block once in a row.
    pub fn ahead(&mut self, returned: usize, next_blocks: impl Iterator<Item = BlockNumber>) {
        let until = returned + heap_lookahead_distance(returned, self.budget);
        if self.hinted >= until {
            return;
        }
        for (row, block) in (returned..until).zip(next_blocks) {
            if row >= self.hinted && self.last_block != Some(block) {
                self.last_block = Some(block);
                if self.heap.prefetch(block) == Prefetched::Started {
                    self.issued += 1;
                }
            }
            self.hinted = self.hinted.max(row + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_grows_one_every_two_rows_up_to_the_budget() {
        let distances: Vec<usize> = (1..=8).map(|r| heap_lookahead_distance(r, 3)).collect();
        assert_eq!(distances, vec![1, 2, 2, 3, 3, 3, 3, 3]);
        assert_eq!(heap_lookahead_distance(1000, 16), 16);
        assert_eq!(heap_lookahead_distance(5, 0), 0);
    }
}
