//! Read-ahead along chains of pages whose links are only known as each page is read: the
//! entry pages of ivfflat's lists ([`ChainHints`]).
//!
//! The reader gives a plan, the blocks it expects to read in the order it will read them (an
//! ivfflat build writes each list on consecutive pages, from its first page to its insert
//! page, so that range is the guess), then reads the real chain page by page. The plan is
//! only a guess: hints (`PrefetchBuffer`) never bring a page into shared buffers, so a wrong
//! guess costs a read into the kernel's page cache, never a different result.
//!
//! * Warm, nothing is hinted and the clock is not read: a chain in shared buffers costs
//!   nothing more. A read that misses shared buffers has the next miss timed; a timed miss
//!   slower than [`DEVICE_READ`] turns the reader cold.
//! * Cold, the planned blocks are hinted in plan order, ahead of the one being read, until
//!   `budget` hinted reads are in flight; reads of blocks that were not hinted are timed, and
//!   one answered by the page cache, or a run of hits, turns the reader warm again.
//! * A backend's next scan starts in the state its last one ended in.

use crate::counters::IoCounters;
use crate::reader::DEVICE_READ;
use crate::source::BlockNumber;
use std::cell::Cell;
use std::collections::HashSet;
use std::time::Duration;

/// Hits in a row after which a cold reader stops hinting (the chain is in shared buffers).
const HITS_TO_WARM: u32 = 8;

thread_local! {
    static LAST_CHAIN_COLD: Cell<bool> = const { Cell::new(false) };
}

/// The read-ahead of one scan's chains (see the module documentation).
pub struct ChainHints {
    enabled: bool,
    budget: usize,
    plan: Vec<BlockNumber>,
    /// Plan position of the next block to hint.
    next_hint: usize,
    /// Hinted and not read yet.
    in_flight: Vec<BlockNumber>,
    /// Read since the plan was given (skipped when hinting).
    done: HashSet<BlockNumber>,
    cold: bool,
    /// Time the next read (a miss was seen).
    timing: bool,
    hits_in_a_row: u32,
    /// The block being read was hinted.
    current_hinted: bool,
    pub counters: IoCounters,
}

impl ChainHints {
    /// Read-ahead within `budget` reads in flight (the tablespace's I/O concurrency); none at
    /// all unless `enabled`.
    pub fn new(enabled: bool, budget: usize) -> Self {
        ChainHints {
            enabled: enabled && budget > 0,
            budget,
            plan: Vec::new(),
            next_hint: 0,
            in_flight: Vec::new(),
            done: HashSet::new(),
            cold: LAST_CHAIN_COLD.with(Cell::get),
            timing: false,
            hits_in_a_row: 0,
            current_hinted: false,
            counters: IoCounters::default(),
        }
    }

    /// Whether reads are overlapped now.
    pub fn is_cold(&self) -> bool {
        self.cold && self.enabled
    }

    /// The blocks the next reads will probably be, in order. Hints still pending from the
    /// previous plan are counted unused.
    pub fn plan(&mut self, blocks: impl IntoIterator<Item = BlockNumber>) {
        self.finish_plan();
        self.plan.extend(blocks);
    }

    /// Ends the current plan (pending hints are counted unused).
    pub fn finish_plan(&mut self) {
        self.counters.unused += self.in_flight.len() as u64;
        self.in_flight.clear();
        self.plan.clear();
        self.done.clear();
        self.next_hint = 0;
    }

    /// Before `block` is read: tops up the hints with `hint` (true if it started a read, false
    /// if the block is in shared buffers already). Returns whether to time the read.
    pub fn before_read(
        &mut self,
        block: BlockNumber,
        mut hint: impl FnMut(BlockNumber) -> bool,
    ) -> bool {
        self.current_hinted = match self.in_flight.iter().position(|&b| b == block) {
            Some(at) => {
                self.in_flight.swap_remove(at);
                true
            }
            None => false,
        };
        self.done.insert(block);
        if self.is_cold() {
            while self.in_flight.len() < self.budget && self.next_hint < self.plan.len() {
                let next = self.plan[self.next_hint];
                self.next_hint += 1;
                if !self.done.contains(&next) && !self.in_flight.contains(&next) && hint(next) {
                    self.in_flight.push(next);
                }
            }
            self.counters.in_flight_sum += self.in_flight.len() as u64;
            self.counters.in_flight_samples += 1;
        }
        !self.current_hinted && (self.timing || self.is_cold())
    }

    /// After the read: a hit, or a miss that took `took` (if it was timed).
    pub fn after_read(&mut self, hit: bool, took: Option<Duration>) {
        self.counters.blocks += 1;
        if hit {
            self.counters.hits += 1;
            self.hits_in_a_row += 1;
            if self.hits_in_a_row >= HITS_TO_WARM {
                self.cold = false;
                self.timing = false;
            }
            return;
        }
        self.counters.reads += 1;
        self.hits_in_a_row = 0;
        self.timing = true;
        if self.current_hinted {
            self.counters.prefetched += 1;
            return;
        }
        if let Some(took) = took {
            self.cold = took > DEVICE_READ;
        }
    }
}

impl Drop for ChainHints {
    fn drop(&mut self) {
        LAST_CHAIN_COLD.with(|last| last.set(self.cold));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOW: Option<Duration> = Some(Duration::from_micros(80));
    const FAST: Option<Duration> = Some(Duration::from_micros(2));

    /// Reads `chain`; `miss(b)` tells whether block b misses shared buffers, `slow` whether a
    /// timed miss takes device time. Returns the hints issued and the reads timed.
    fn walk(
        hints: &mut ChainHints,
        chain: &[BlockNumber],
        miss: impl Fn(BlockNumber) -> bool,
        slow: bool,
    ) -> (Vec<BlockNumber>, usize) {
        let mut hinted = Vec::new();
        let mut timed = 0;
        for &b in chain {
            let time = hints.before_read(b, |h| {
                hinted.push(h);
                true
            });
            timed += usize::from(time);
            let hit = !miss(b);
            let took = (time && !hit)
                .then_some(if slow { SLOW } else { FAST })
                .flatten();
            hints.after_read(hit, took);
        }
        (hinted, timed)
    }

    #[test]
    fn resident_chains_cost_nothing() {
        let mut h = ChainHints::new(true, 16);
        h.cold = false;
        h.plan(0..100);
        let (hinted, timed) = walk(&mut h, &(0..100).collect::<Vec<_>>(), |_| false, true);
        assert!(hinted.is_empty());
        assert_eq!(timed, 0);
        assert!(!h.is_cold());
        assert_eq!(h.counters.hits, 100);
    }

    #[test]
    fn device_reads_turn_cold_and_the_budget_holds() {
        let mut h = ChainHints::new(true, 4);
        h.cold = false;
        h.plan(10..40);
        let chain: Vec<BlockNumber> = (10..40).collect();
        let mut max_in_flight = 0;
        for &b in &chain {
            let time = h.before_read(b, |_| true);
            max_in_flight = max_in_flight.max(h.in_flight.len());
            h.after_read(false, time.then_some(SLOW).flatten());
        }
        assert!(h.is_cold());
        assert!(max_in_flight <= 4);
        // Two plain misses (the second timed), then every read was hinted ahead.
        assert!(h.counters.prefetched >= 26, "{:?}", h.counters);
        assert_eq!(h.counters.unused, 0);
    }

    #[test]
    fn page_cache_reads_stay_warm() {
        let mut h = ChainHints::new(true, 8);
        h.cold = false;
        h.plan(0..50);
        let (hinted, _) = walk(&mut h, &(0..50).collect::<Vec<_>>(), |_| true, false);
        assert!(hinted.is_empty());
        assert!(!h.is_cold());
    }

    #[test]
    fn wrong_guesses_are_counted_unused() {
        let mut h = ChainHints::new(true, 4);
        h.cold = true;
        // The plan guesses 0..10, the chain leaves it after block 2.
        h.plan(0..10);
        let (hinted, _) = walk(&mut h, &[0, 1, 2, 50, 51], |_| true, true);
        assert_eq!(&hinted[..4], &[1, 2, 3, 4]);
        h.finish_plan();
        assert!(h.counters.unused >= 2, "{:?}", h.counters);
        assert_eq!(h.counters.blocks, 5);
    }

    #[test]
    fn off_never_hints() {
        let mut h = ChainHints::new(false, 16);
        h.cold = true;
        h.plan(0..20);
        let (hinted, _) = walk(&mut h, &(0..20).collect::<Vec<_>>(), |_| true, true);
        assert!(hinted.is_empty());
        assert!(!h.is_cold());
    }

    #[test]
    fn a_run_of_hits_turns_warm() {
        let mut h = ChainHints::new(true, 4);
        h.cold = true;
        h.plan(0..30);
        walk(&mut h, &(0..30).collect::<Vec<_>>(), |_| false, true);
        assert!(!h.is_cold());
    }
}
