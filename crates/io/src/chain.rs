//! Read-ahead along chains of pages whose links are only known as each page is read: the
//! entry pages of ivfflat's lists ([`ChainHints`]).
//!
//! The reader gives a plan, the chains it expects to read in the order it will read them,
//! each as a run of consecutive blocks (an ivfflat build writes each list on consecutive
//! pages, from its first page to its insert page, so that range is the guess), then reads the
//! real chains page by page. The plan is only a guess: hints never bring a page into shared
//! buffers, so a wrong guess costs a read into the kernel's page cache, never a different
//! result.
//!
//! * Hints are runs of up to `run_blocks` consecutive blocks, one advisory read each: the
//!   device gets large reads, as the kernel's own read-ahead would give a sequential reader,
//!   and `budget` runs (the I/O concurrency) are kept ahead of the reader, across the ends of
//!   chains, so several lists stream at once.
//! * Warm, nothing is hinted and the clock is not read: a chain in shared buffers costs
//!   nothing more. A read that misses shared buffers has the next miss timed; two timed
//!   misses in a row slower than [`DEVICE_READ`] turn the reader cold.
//! * Cold, the first block of each chain is never hinted: it is read plainly and timed, and
//!   one answered by the page cache (or a run of hits) turns the reader warm again.
//! * A backend's next scan starts in the state its last one ended in.
//! * Whether hints pay at all depends on the host ([`HintChoice`]): where the kernel's own
//!   read-ahead streams a contiguous chain, plain reads can beat hinted ones (advisory reads
//!   cost a system call each, and allocate and reclaim page cache in the caller). A reader
//!   built [`ChainHints::choosing_by_time`] reads each plan hinted or plain, times the plans
//!   from their first cold read (no clock is read before), and reads the next plans the way
//!   that took less time per page, trying the other way now and then. (Warm, neither way
//!   hints.)

use crate::counters::IoCounters;
use crate::source::BlockNumber;
use crate::source::DEVICE_READ;
use std::cell::Cell;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Hits in a row after which a cold reader stops hinting (the chain is in shared buffers).
const HITS_TO_WARM: u32 = 8;
/// Timed misses in a row slower than [`DEVICE_READ`] that turn a warm reader cold.
const SLOW_TO_COLD: u32 = 2;

/// Plans chosen between tries of the slower way, while the two are close...
const TRY_OTHER_EVERY: u32 = 8;
/// ...and while the slower takes more than [`FAR_SLOWER`] times the faster's time.
const TRY_FAR_SLOWER_EVERY: u32 = 32;
const FAR_SLOWER: f64 = 1.25;
/// Weight of a new plan's time in the moving mean of its way.
const NEW_TIME_WEIGHT: f64 = 0.25;
/// A plan's time is kept only if it read at least this many pages, a quarter of them misses.
const MIN_TIMED_PAGES: u64 = 64;

thread_local! {
    static LAST_CHAIN_COLD: Cell<bool> = const { Cell::new(false) };
    static CHOICE: Cell<HintChoice> = const { Cell::new(HintChoice::new()) };
}

/// Hinted or plain reads for the next plan, from the time per page that cold plans took
/// each way in this backend (moving means). Each way is tried once first, hinted first; then
/// the faster is chosen, and the other once every `TRY_OTHER_EVERY` plans (every
/// `TRY_FAR_SLOWER_EVERY` when it is far slower), so that a change of disk or load is seen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HintChoice {
    /// Nanoseconds per page: plain reads `[0]`, hinted `[1]`.
    mean: [Option<f64>; 2],
    /// Plans chosen since the slower way was last tried.
    since_other: u32,
}

impl Default for HintChoice {
    fn default() -> Self {
        Self::new()
    }
}

impl HintChoice {
    pub const fn new() -> Self {
        HintChoice {
            mean: [None, None],
            since_other: 0,
        }
    }

    /// Whether the next plan is hinted (it matters only if the plan reads cold).
    pub fn choose(&mut self) -> bool {
        let (Some(plain), Some(hinted)) = (self.mean[0], self.mean[1]) else {
            return self.mean[1].is_none();
        };
        let faster = hinted <= plain;
        let every = if hinted.max(plain) > FAR_SLOWER * hinted.min(plain) {
            TRY_FAR_SLOWER_EVERY
        } else {
            TRY_OTHER_EVERY
        };
        self.since_other += 1;
        if self.since_other >= every {
            self.since_other = 0;
            return !faster;
        }
        faster
    }

    /// A cold plan read `hinted` or plain took `ns_per_page`.
    pub fn record(&mut self, hinted: bool, ns_per_page: f64) {
        let mean = &mut self.mean[usize::from(hinted)];
        *mean = Some(match *mean {
            None => ns_per_page,
            Some(m) => m + (ns_per_page - m) * NEW_TIME_WEIGHT,
        });
    }
}

/// A plan being timed: whether it is hinted, and from its first cold read on (the clock is
/// not read before), when that was and the counters then.
#[derive(Clone, Copy, Debug)]
struct TimedPlan {
    hinted: bool,
    cold_since: Option<(Instant, u64, u64)>,
}

/// One hint: blocks `first..end`, of which `read` have been read.
#[derive(Clone, Copy, Debug)]
struct Run {
    first: BlockNumber,
    end: BlockNumber,
    read: u32,
}

impl Run {
    fn contains(&self, block: BlockNumber) -> bool {
        (self.first..self.end).contains(&block)
    }

    fn unread(&self) -> u64 {
        u64::from(self.end - self.first).saturating_sub(u64::from(self.read))
    }
}

/// The read-ahead of one scan's chains (see the module documentation).
pub struct ChainHints {
    enabled: bool,
    budget: usize,
    run_blocks: BlockNumber,
    /// The plan: first and last block of each chain, in reading order.
    chains: Vec<(BlockNumber, BlockNumber)>,
    /// The chain being read, and the next block to hint (in chain `hint_chain`).
    read_chain: usize,
    hint_chain: usize,
    hint_next: BlockNumber,
    /// Hints not yet passed by the reader, in plan order.
    runs: VecDeque<Run>,
    cold: bool,
    /// Time the next read (a miss was seen).
    timing: bool,
    hits_in_a_row: u32,
    slow_in_a_row: u32,
    /// The block being read was hinted.
    current_hinted: bool,
    /// A pass over a whole relation in block order ([`ChainHints::for_sequential_pass`]).
    sequential: bool,
    /// Reads a read stream started that no page it returned has been counted for yet.
    streamed_ahead: u64,
    /// Cold plans choose between hinted and plain reads by their time ([`HintChoice`]).
    choosing: bool,
    timed_plan: Option<TimedPlan>,
    /// The current plan has read while cold.
    plan_read_cold: bool,
    pub counters: IoCounters,
}

impl ChainHints {
    /// Read-ahead of up to `budget` runs of `run_blocks` blocks ahead of the reader (the
    /// tablespace's I/O concurrency and the largest read worth asking for); none at all unless
    /// `enabled`.
    pub fn new(enabled: bool, budget: usize, run_blocks: BlockNumber) -> Self {
        ChainHints {
            enabled: enabled && budget > 0 && run_blocks > 0,
            budget,
            run_blocks,
            chains: Vec::new(),
            read_chain: 0,
            hint_chain: 0,
            hint_next: 0,
            runs: VecDeque::new(),
            cold: LAST_CHAIN_COLD.with(Cell::get),
            timing: false,
            hits_in_a_row: 0,
            slow_in_a_row: 0,
            current_hinted: false,
            sequential: false,
            streamed_ahead: 0,
            choosing: false,
            timed_plan: None,
            plan_read_cold: false,
            counters: IoCounters::default(),
        }
    }

    /// For scans that read chains the kernel may already read ahead: each plan is read hinted
    /// or plain as [`HintChoice`] says, and timed if it reads cold.
    pub fn choosing_by_time(mut self) -> Self {
        self.choosing = true;
        self
    }

    /// Whether the current plan has read anything while cold.
    pub fn plan_read_cold(&self) -> bool {
        self.plan_read_cold
    }

    /// Whether the current plan reads without hints.
    pub fn reads_plainly(&self) -> bool {
        self.timed_plan.is_some_and(|plan| !plan.hinted)
    }

    /// For a pass over a relation in block order: every read that misses shared buffers turns
    /// the hints on, untimed. The kernel's own read-ahead answers such a reader from the page
    /// cache, so a read's time tells nothing, yet hinted runs read a cold file faster (430 MB
    /// in 8 kB reads here: 1,090 MB/s hinted, 386 MB/s plain). A run of hits turns them off.
    pub fn for_sequential_pass(mut self) -> Self {
        self.sequential = true;
        self
    }

    /// Whether this reader may hint at all (the method is not `off`, there is I/O concurrency).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether reads are overlapped now.
    pub fn is_cold(&self) -> bool {
        self.cold && self.enabled
    }

    /// The chains the next reads will probably follow, in order, each as its first and last
    /// block. Hints still pending from the previous plan are counted unused.
    pub fn plan(&mut self, chains: impl IntoIterator<Item = (BlockNumber, BlockNumber)>) {
        self.finish_plan();
        self.chains
            .extend(chains.into_iter().filter(|&(first, last)| first <= last));
        if let Some(&(first, _)) = self.chains.first() {
            self.hint_next = first.saturating_add(1);
        }
        if self.choosing && self.enabled && !self.chains.is_empty() {
            let hinted = CHOICE.with(|c| {
                let mut choice = c.get();
                let hinted = choice.choose();
                c.set(choice);
                hinted
            });
            self.timed_plan = Some(TimedPlan {
                hinted,
                cold_since: None,
            });
        }
    }

    /// Ends the current plan (pending hints are counted unused; a timed plan's time is kept).
    pub fn finish_plan(&mut self) {
        if let Some(TimedPlan {
            hinted,
            cold_since: Some((began, blocks, reads)),
        }) = self.timed_plan.take()
        {
            let pages = self.counters.blocks - blocks;
            let reads = self.counters.reads - reads;
            if pages >= MIN_TIMED_PAGES && reads * 4 >= pages {
                let ns = began.elapsed().as_nanos() as f64 / pages as f64;
                CHOICE.with(|c| {
                    let mut choice = c.get();
                    choice.record(hinted, ns);
                    c.set(choice);
                });
            }
        }
        self.plan_read_cold = false;
        self.counters.unused += self.runs.iter().map(Run::unread).sum::<u64>();
        self.runs.clear();
        self.chains.clear();
        self.read_chain = 0;
        self.hint_chain = 0;
        self.hint_next = 0;
    }

    /// Before `block` is read: tops up the hints with `hint(first, count)` (true if it asked
    /// for a read). Returns whether to time the read.
    pub fn before_read(
        &mut self,
        block: BlockNumber,
        mut hint: impl FnMut(BlockNumber, u32) -> bool,
    ) -> bool {
        self.follow_reader(block);
        let ahead = match self.runs.iter().position(|r| r.contains(block)) {
            Some(at) => {
                for passed in self.runs.drain(..at) {
                    self.counters.unused += passed.unread();
                }
                self.runs[0].read += 1;
                self.current_hinted = true;
                self.runs.len() - 1
            }
            None => {
                self.current_hinted = false;
                self.runs.len()
            }
        };
        if self.is_cold() {
            self.plan_read_cold = true;
            if let Some(plan) = self.timed_plan.as_mut() {
                if plan.cold_since.is_none() {
                    plan.cold_since =
                        Some((Instant::now(), self.counters.blocks, self.counters.reads));
                }
            }
        }
        if self.is_cold() && !self.reads_plainly() {
            let mut ahead = ahead;
            while ahead < self.budget {
                let Some((first, count)) = self.next_run() else {
                    break;
                };
                if hint(first, count) {
                    self.runs.push_back(Run {
                        first,
                        end: first + count,
                        read: 0,
                    });
                    ahead += 1;
                }
            }
            let in_flight: u64 = self.runs.iter().map(Run::unread).sum();
            self.counters.in_flight_sum += in_flight;
            self.counters.in_flight_samples += 1;
        }
        !self.sequential && !self.current_hinted && (self.timing || self.is_cold())
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
                self.slow_in_a_row = 0;
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
        if self.sequential {
            self.cold = true;
            return;
        }
        if let Some(took) = took {
            if took > DEVICE_READ {
                self.slow_in_a_row += 1;
                if self.slow_in_a_row >= SLOW_TO_COLD {
                    self.cold = true;
                }
            } else {
                self.slow_in_a_row = 0;
                self.cold = false;
            }
        }
    }

    /// A page returned by a read stream, during whose call the stream started `started` reads
    /// (of this page or of pages ahead). The stream's reads are counted as read ahead, one per
    /// page returned while any is outstanding, so that pages = hits + reads; the totals are
    /// exact, which page a read is counted for is not.
    pub fn after_streamed_read(&mut self, started: u64) {
        self.counters.blocks += 1;
        self.streamed_ahead += started;
        if self.streamed_ahead > 0 {
            self.streamed_ahead -= 1;
            self.counters.reads += 1;
            self.counters.prefetched += 1;
        } else {
            self.counters.hits += 1;
        }
    }

    /// The read stream ended: reads it started for pages it never returned were unused.
    pub fn end_stream(&mut self) {
        self.counters.unused += std::mem::take(&mut self.streamed_ahead);
    }

    /// Keeps the hints ahead of the reader: finds the planned chain `block` is in (at or
    /// after the one being read) and moves the next hint past it if it lagged behind.
    fn follow_reader(&mut self, block: BlockNumber) {
        let within = |&(first, last): &(BlockNumber, BlockNumber)| (first..=last).contains(&block);
        let Some(found) = self.chains[self.read_chain.min(self.chains.len())..]
            .iter()
            .position(within)
        else {
            return;
        };
        self.read_chain += found;
        let behind = self.hint_chain < self.read_chain
            || (self.hint_chain == self.read_chain && self.hint_next <= block);
        if behind {
            self.hint_chain = self.read_chain;
            self.hint_next = block.saturating_add(1);
        }
    }

    /// The next run of planned blocks to hint, if any: within one chain, never its first block.
    fn next_run(&mut self) -> Option<(BlockNumber, u32)> {
        loop {
            let &(_, last) = self.chains.get(self.hint_chain)?;
            if self.hint_next <= last && self.hint_next != BlockNumber::MAX {
                let first = self.hint_next;
                let count = (last - first).saturating_add(1).min(self.run_blocks);
                self.hint_next = first + count;
                return Some((first, count));
            }
            self.hint_chain += 1;
            let &(first, _) = self.chains.get(self.hint_chain)?;
            self.hint_next = first.saturating_add(1);
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
    ) -> (Vec<(BlockNumber, u32)>, usize) {
        let mut hinted = Vec::new();
        let mut timed = 0;
        for &b in chain {
            let time = hints.before_read(b, |first, count| {
                hinted.push((first, count));
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

    fn blocks(hinted: &[(BlockNumber, u32)]) -> Vec<BlockNumber> {
        hinted.iter().flat_map(|&(f, c)| f..f + c).collect()
    }

    #[test]
    fn streamed_reads_balance_pages_and_count_the_unreturned_as_unused() {
        let mut hints = ChainHints::new(true, 4, 8);
        // A stream returns 5 pages: its first call starts reads of 4 (a combined read), the
        // fourth call 1 more; one of the 5 reads is for a page never returned.
        for started in [4, 0, 0, 1, 0] {
            hints.after_streamed_read(started);
        }
        assert_eq!(hints.counters.blocks, 5);
        assert_eq!(hints.counters.reads, 5);
        assert_eq!(hints.counters.prefetched, 5);
        assert_eq!(hints.counters.hits, 0);
        for started in [0, 0, 1] {
            hints.after_streamed_read(started);
        }
        assert_eq!(hints.counters.blocks, 8);
        assert_eq!(hints.counters.hits + hints.counters.reads, 8);
        assert_eq!(hints.counters.reads, 6);
        hints.end_stream();
        assert_eq!(hints.counters.unused, 0);
        hints.after_streamed_read(3);
        hints.end_stream();
        assert_eq!(hints.counters.unused, 2);
        assert_eq!(hints.counters.hits + hints.counters.reads, 9);
    }

    #[test]
    fn sequential_passes_hint_after_any_miss_and_stop_on_hits() {
        // Page-cache-fast misses leave an ordinary reader warm, unhinted...
        let mut plain = ChainHints::new(true, 4, 8);
        plain.cold = false;
        plain.plan([(1, 200)]);
        let (hinted, _) = walk(&mut plain, &(1..=200).collect::<Vec<_>>(), |_| true, false);
        assert!(hinted.is_empty());
        // ...while a sequential pass hints from its first miss on, never timing a read.
        let mut pass = ChainHints::new(true, 4, 8).for_sequential_pass();
        pass.cold = false;
        pass.plan([(1, 200)]);
        let (hinted, timed) = walk(&mut pass, &(1..=200).collect::<Vec<_>>(), |_| true, false);
        assert_eq!(timed, 0);
        assert_eq!(blocks(&hinted), (3..=200).collect::<Vec<_>>());
        assert_eq!(pass.counters.prefetched, 198);
        // Resident: the pass turns warm after a run of hits and hints nothing more.
        let mut resident = ChainHints::new(true, 4, 8).for_sequential_pass();
        resident.cold = true;
        resident.plan([(1, 200)]);
        let (hinted, _) = walk(
            &mut resident,
            &(1..=200).collect::<Vec<_>>(),
            |_| false,
            false,
        );
        assert!(blocks(&hinted).len() <= 4 * 8 + HITS_TO_WARM as usize * 8);
        assert!(!resident.is_cold());
        // Disabled (io_method off): nothing.
        let mut off = ChainHints::new(false, 4, 8).for_sequential_pass();
        off.plan([(1, 200)]);
        let (hinted, _) = walk(&mut off, &(1..=200).collect::<Vec<_>>(), |_| true, false);
        assert!(hinted.is_empty());
    }

    #[test]
    fn resident_chains_cost_nothing() {
        let mut h = ChainHints::new(true, 16, 16);
        h.cold = false;
        h.plan([(0, 99)]);
        let (hinted, timed) = walk(&mut h, &(0..100).collect::<Vec<_>>(), |_| false, true);
        assert!(hinted.is_empty());
        assert_eq!(timed, 0);
        assert!(!h.is_cold());
        assert_eq!(h.counters.hits, 100);
    }

    #[test]
    fn device_reads_turn_cold_and_the_budget_holds() {
        let mut h = ChainHints::new(true, 2, 4);
        h.cold = false;
        h.plan([(10, 49)]);
        let mut max_ahead = 0;
        let mut hinted = Vec::new();
        for b in 10..50 {
            let time = h.before_read(b, |f, c| {
                hinted.push((f, c));
                true
            });
            let ahead = h.runs.iter().filter(|r| !r.contains(b)).count();
            max_ahead = max_ahead.max(ahead);
            h.after_read(false, time.then_some(SLOW).flatten());
        }
        assert!(h.is_cold());
        assert!(max_ahead <= 2, "{max_ahead}");
        assert!(hinted.iter().all(|&(_, c)| c <= 4), "{hinted:?}");
        // Three plain misses (the second and third timed), then every read was hinted ahead,
        // each block once, in order.
        let b = blocks(&hinted);
        assert_eq!(b, (b[0]..50).collect::<Vec<_>>());
        assert!(h.counters.prefetched >= 36, "{:?}", h.counters);
        h.finish_plan();
        assert_eq!(h.counters.unused, 0);
    }

    #[test]
    fn cold_runs_cross_chains_and_skip_their_first_blocks() {
        let mut h = ChainHints::new(true, 3, 4);
        h.cold = true;
        h.plan([(100, 105), (20, 23), (60, 60), (70, 75)]);
        let chain: Vec<BlockNumber> = (100..=105)
            .chain(20..=23)
            .chain([60])
            .chain(70..=75)
            .collect();
        let (hinted, timed) = walk(&mut h, &chain, |_| true, true);
        assert_eq!(
            hinted,
            vec![(101, 4), (105, 1), (21, 3), (71, 4), (75, 1)],
            "one run per hint, never past a chain's end, never a chain's first block"
        );
        // The first blocks of the chains are the plain, timed reads.
        assert_eq!(timed, 4);
        assert!(h.is_cold());
        assert_eq!(h.counters.prefetched, 13);
        h.finish_plan();
        assert_eq!(h.counters.unused, 0);
    }

    #[test]
    fn page_cache_reads_stay_warm() {
        let mut h = ChainHints::new(true, 8, 16);
        h.cold = false;
        h.plan([(0, 49)]);
        let (hinted, _) = walk(&mut h, &(0..50).collect::<Vec<_>>(), |_| true, false);
        assert!(hinted.is_empty());
        assert!(!h.is_cold());
    }

    #[test]
    fn one_slow_read_does_not_turn_cold() {
        let mut h = ChainHints::new(true, 8, 16);
        h.cold = false;
        h.plan([(0, 49)]);
        for (b, took) in [(0, None), (1, SLOW), (2, FAST), (3, SLOW), (4, FAST)] {
            h.before_read(b, |_, _| panic!("hinted while warm"));
            h.after_read(false, took);
        }
        assert!(!h.is_cold());
    }

    #[test]
    fn a_fast_first_block_turns_warm() {
        // Cold, the next chain's first block comes from the page cache: the rest is not hinted.
        let mut h = ChainHints::new(true, 2, 4);
        h.cold = true;
        h.plan([(0, 3), (10, 30)]);
        let mut hinted = Vec::new();
        for b in (0..=3).chain(10..=30) {
            let time = h.before_read(b, |f, c| {
                hinted.push((f, c));
                true
            });
            let took = if b < 10 { SLOW } else { FAST };
            h.after_read(false, time.then_some(took).flatten());
        }
        assert!(!h.is_cold());
        assert!(blocks(&hinted).iter().all(|&b| b < 20), "{hinted:?}");
    }

    #[test]
    fn turning_cold_hints_from_the_reader_on() {
        let mut h = ChainHints::new(true, 1, 8);
        h.cold = false;
        h.plan([(0, 99)]);
        let mut hinted = Vec::new();
        for b in 0..60 {
            let time = h.before_read(b, |f, c| {
                hinted.push((f, c));
                true
            });
            h.after_read(
                false,
                time.then_some(if b < 40 { FAST } else { SLOW }).flatten(),
            );
        }
        assert!(h.is_cold());
        assert!(hinted[0].0 > 40, "{hinted:?}");
    }

    #[test]
    fn wrong_guesses_are_counted_unused() {
        let mut h = ChainHints::new(true, 2, 4);
        h.cold = true;
        // The plan guesses 0..10, the chain leaves it after block 2.
        h.plan([(0, 9)]);
        let (hinted, _) = walk(&mut h, &[0, 1, 2, 50, 51], |_| true, true);
        // Two runs ahead of the one being read: the whole guess is hinted by block 1.
        assert_eq!(hinted, vec![(1, 4), (5, 4), (9, 1)]);
        h.finish_plan();
        // Of the nine hinted blocks only 1 and 2 were read.
        assert_eq!(h.counters.unused, 7, "{:?}", h.counters);
        assert_eq!(h.counters.blocks, 5);
    }

    #[test]
    fn refused_hints_are_not_counted() {
        let mut h = ChainHints::new(true, 2, 4);
        h.cold = true;
        h.plan([(0, 9)]);
        for b in 0..10 {
            h.before_read(b, |_, _| false);
            h.after_read(false, SLOW);
        }
        h.finish_plan();
        assert_eq!(h.counters.prefetched, 0);
        assert_eq!(h.counters.unused, 0);
    }

    #[test]
    fn off_never_hints() {
        let mut h = ChainHints::new(false, 16, 16);
        h.cold = true;
        h.plan([(0, 19)]);
        let (hinted, _) = walk(&mut h, &(0..20).collect::<Vec<_>>(), |_| true, true);
        assert!(hinted.is_empty());
        assert!(!h.is_cold());
    }

    #[test]
    fn a_run_of_hits_turns_warm() {
        let mut h = ChainHints::new(true, 4, 4);
        h.cold = true;
        h.plan([(0, 29)]);
        walk(&mut h, &(0..30).collect::<Vec<_>>(), |_| false, true);
        assert!(!h.is_cold());
    }

    #[test]
    fn hint_choice_tries_both_ways_then_keeps_the_faster_and_retries_the_other() {
        let mut choice = HintChoice::new();
        assert!(choice.choose(), "hinted first");
        choice.record(true, 3_000.0);
        assert!(!choice.choose(), "then plain");
        choice.record(false, 2_000.0);
        // Plain is far faster: chosen, except once every TRY_FAR_SLOWER_EVERY plans.
        let picks: Vec<bool> = (0..3 * TRY_FAR_SLOWER_EVERY)
            .map(|_| choice.choose())
            .collect();
        assert_eq!(picks.iter().filter(|&&h| h).count(), 3);
        assert!(picks[..TRY_FAR_SLOWER_EVERY as usize - 1]
            .iter()
            .all(|&h| !h));
        // Close: the other way is tried every TRY_OTHER_EVERY plans.
        for _ in 0..6 {
            choice.record(true, 2_200.0);
        }
        choice.since_other = 0;
        let picks: Vec<bool> = (0..3 * TRY_OTHER_EVERY).map(|_| choice.choose()).collect();
        assert_eq!(picks.iter().filter(|&&h| h).count(), 3);
        // The disk changes: hinted plans turn faster, and once tried enough they win.
        let mut hinted_chosen = 0;
        for _ in 0..10 * TRY_FAR_SLOWER_EVERY {
            let hinted = choice.choose();
            hinted_chosen += u32::from(hinted);
            choice.record(hinted, if hinted { 1_000.0 } else { 2_000.0 });
        }
        assert!(choice.choose() || choice.choose(), "hinted is chosen again");
        assert!(hinted_chosen > 5 * TRY_FAR_SLOWER_EVERY);
    }

    #[test]
    fn plain_plans_hint_nothing_and_only_cold_plans_are_timed() {
        let set = |mean: [Option<f64>; 2]| {
            CHOICE.with(|c| {
                c.set(HintChoice {
                    mean,
                    since_other: 0,
                })
            })
        };
        let chain: Vec<BlockNumber> = (100..400).collect();
        // Plain is known to be faster: a cold plan reads without hints.
        set([Some(1_000.0), Some(5_000.0)]);
        let mut h = ChainHints::new(true, 4, 8).choosing_by_time();
        h.cold = true;
        h.plan([(100, 399)]);
        assert!(h.reads_plainly());
        let (hinted, _) = walk(&mut h, &chain, |_| true, true);
        assert!(hinted.is_empty());
        h.finish_plan();
        assert!(!h.reads_plainly());
        let after = CHOICE.with(Cell::get);
        assert_ne!(after.mean[0], Some(1_000.0), "the plain plan was timed");
        assert_eq!(after.mean[1], Some(5_000.0));
        // Hinted is faster: the same plan is hinted.
        set([Some(5_000.0), Some(1_000.0)]);
        let mut h = ChainHints::new(true, 4, 8).choosing_by_time();
        h.cold = true;
        h.plan([(100, 399)]);
        assert!(!h.reads_plainly());
        let (hinted, _) = walk(&mut h, &chain, |_| true, true);
        assert_eq!(blocks(&hinted), (101..400).collect::<Vec<_>>());
        // A resident plan hints nothing and is not timed.
        set([None, None]);
        let mut h = ChainHints::new(true, 4, 8).choosing_by_time();
        h.cold = false;
        h.plan([(100, 399)]);
        let (hinted, timed) = walk(&mut h, &chain, |_| false, true);
        h.finish_plan();
        assert!(hinted.is_empty());
        assert_eq!(timed, 0);
        assert_eq!(CHOICE.with(Cell::get), HintChoice::new());
        // Without choosing_by_time (hnsw's vacuum passes) plans are never plain.
        set([Some(1_000.0), Some(5_000.0)]);
        let mut h = ChainHints::new(true, 4, 8);
        h.cold = true;
        h.plan([(100, 399)]);
        assert!(!h.reads_plainly());
        set([None, None]);
    }
}
