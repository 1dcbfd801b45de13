//! Hints for the table blocks of the rows an index scan is about to return ([`HeapRowHints`]).

use crate::source::{BlockNumber, BlockSource, Prefetched, DEVICE_READ};
use std::cell::Cell;
use std::collections::VecDeque;
use std::time::Duration;

/// How many rows past the one being returned a scan asks the table for, once `returned`
/// rows were handed out, with at most `budget` reads in flight. It starts at one and grows by
/// one every two rows: a `LIMIT k` query then wastes about `k / 2` reads at most, while a long
/// scan reaches the full budget. Where the backend's recent scans all handed out at least
/// `expected` rows ([`RecentScans`]), it asks at once for the rows up to that count: a
/// repeated `LIMIT k` query has all its rows' reads in flight together from its first row.
pub fn heap_lookahead_distance(returned: usize, budget: usize, expected: Option<usize>) -> usize {
    let growing = 1 + returned / 2;
    let to_expected = expected.map_or(0, |rows| rows.saturating_sub(returned));
    budget.min(growing.max(to_expected))
}

/// How many scans' row counts [`RecentScans`] keeps.
pub const RECENT_SCANS: usize = 4;

/// The rows this backend's last few index scans (or rescans) handed out. Applications repeat
/// their queries, so the fewest of them is the number of rows the next scan is expected to
/// hand out: the `LIMIT`, which an index scan is never told. Asking for more rows than the
/// query fetches costs a read each, so the expectation is the smallest recent count, and
/// there is none before two scans ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecentScans {
    rows: [u32; RECENT_SCANS],
    recorded: u8,
    next: u8,
}

impl RecentScans {
    /// A scan ended (or was restarted) after handing out `rows` rows; scans that handed out
    /// none are not counted.
    pub fn record(&mut self, rows: usize) {
        if rows == 0 {
            return;
        }
        self.rows[usize::from(self.next)] = u32::try_from(rows).unwrap_or(u32::MAX);
        self.next = (self.next + 1) % RECENT_SCANS as u8;
        self.recorded = (self.recorded + 1).min(RECENT_SCANS as u8);
    }

    /// The rows the next scan is expected to hand out.
    pub fn expected(&self) -> Option<usize> {
        (self.recorded >= 2).then(|| {
            let kept = &self.rows[..usize::from(self.recorded)];
            kept.iter().copied().min().unwrap_or(0) as usize
        })
    }
}

/// Tells from the gaps between an index scan's rows whether the executor's table fetches go
/// to a device. The table can be cold while the index is resident or in the page cache (an
/// ivfflat scan's lists stream; a big table beside a prewarmed index), so the index's reads
/// alone cannot tell.
///
/// A gap is judged when the row handed out before it was not hinted and shared buffers
/// missed during it: longer than [`DEVICE_READ`] is slow, shorter is the page cache. Two slow
/// gaps in a row make the table slow, one fast gap makes it fast again. Hinted rows say
/// nothing (a hint makes a device read fast); a scan's first row is never hinted, so every
/// query is judged again. A backend's next scan starts where its last one ended. The clock
/// is read only after a gap with a miss, until [`QUIET_GAPS`] gaps in a row had none: a
/// resident table costs no clock read. Those quiet gaps also end a slow spell (hints never
/// bring a page into shared buffers, so a table still read from a device keeps missing):
/// a table that became resident is not looked up row by row for the rest of the session.
#[derive(Clone, Copy, Debug, Default)]
pub struct TableFetchWatch {
    /// The last row handed out: when (if timed), the shared-buffer reads counted by then,
    /// and whether its gap is judged.
    returned_at: Option<(Option<Duration>, i64, bool)>,
    timing: bool,
    quiet_gaps: u32,
    slow_in_a_row: u32,
    slow: bool,
}

/// Gaps in a row without a miss after which the watch stops reading the clock and takes the
/// table as resident.
pub const QUIET_GAPS: u32 = 8;

thread_local! {
    static LAST_WATCH: Cell<TableFetchWatch> = const { Cell::new(TableFetchWatch {
        returned_at: None,
        timing: false,
        quiet_gaps: 0,
        slow_in_a_row: 0,
        slow: false,
    }) };
    static RECENT: Cell<RecentScans> = const { Cell::new(RecentScans {
        rows: [0; RECENT_SCANS],
        recorded: 0,
        next: 0,
    }) };
}

/// Forgets what this thread's last scans saw of their table (a new backend).
pub fn forget_table_watch() {
    LAST_WATCH.with(|last| last.set(TableFetchWatch::default()));
    RECENT.with(|recent| recent.set(RecentScans::default()));
}

impl TableFetchWatch {
    /// Whether the next call's time is needed.
    pub fn timing(&self) -> bool {
        self.timing
    }

    /// The scan is asked for its next row at `now` (if [`timing`](Self::timing)), with
    /// `reads` shared-buffer reads counted so far: whether the table's fetches go to a device.
    pub fn next_call(&mut self, now: Option<Duration>, reads: i64) -> bool {
        let Some((at, before, judged)) = self.returned_at.take() else {
            return self.slow;
        };
        if reads == before {
            self.quiet_gaps += 1;
            if self.quiet_gaps >= QUIET_GAPS {
                self.timing = false;
                self.slow = false;
                self.slow_in_a_row = 0;
            }
            return self.slow;
        }
        self.quiet_gaps = 0;
        self.timing = true;
        if let (true, Some(at), Some(now)) = (judged, at, now) {
            if now.saturating_sub(at) > DEVICE_READ {
                self.slow_in_a_row += 1;
                self.slow |= self.slow_in_a_row >= 2;
            } else {
                self.slow_in_a_row = 0;
                self.slow = false;
            }
        }
        self.slow
    }

    /// A row was handed out at `now` (if [`timing`](Self::timing)), with `reads`
    /// shared-buffer reads counted so far; `hinted` if its table block was asked for ahead.
    pub fn row_returned(&mut self, now: Option<Duration>, reads: i64, hinted: bool) {
        self.returned_at = Some((now, reads, !hinted));
    }

    /// A rescan: the gap before its first row is not the last row's.
    pub fn restart(&mut self) {
        self.returned_at = None;
    }

    /// Whether the table's fetches go to a device.
    pub fn slow(&self) -> bool {
        self.slow
    }
}

/// Hints for the table blocks of the rows an index scan is about to return: after the walk,
/// the executor fetches each row's heap tuple one after the other, and these reads would
/// otherwise wait one by one. Used only when the walk ended cold or the table's own fetches
/// were seen going to a device ([`TableFetchWatch`]): a resident table is never hinted. Hints
/// never bring pages into shared buffers.
pub struct HeapRowHints<S: BlockSource> {
    heap: S,
    /// The table's tablespace I/O concurrency.
    budget: usize,
    /// Rows (in the order they are returned) already hinted or passed over.
    hinted: usize,
    last_block: Option<BlockNumber>,
    /// What asking for `last_block` found.
    last_result: Prefetched,
    /// `hinted` when the scan was last asked for a row.
    hinted_before_call: usize,
    watch: TableFetchWatch,
    /// Rows handed out since the scan began or was restarted.
    handed_out: usize,
    /// Rows this scan is expected to hand out, from the backend's recent scans.
    expected: Option<usize>,
    /// Rows (their place in the order returned) whose heap block was hinted, not found in
    /// shared buffers: their values are looked up once that read has had a call to complete.
    deferred: VecDeque<(usize, TableRow)>,
    /// Hints issued (blocks that were not already in shared buffers).
    pub issued: u64,
}

/// The first call (rows handed out) at which rows whose heap block was hinted have their
/// values looked up: a query that asks for a second row is not a `LIMIT 1`, which would pay
/// for the look-up of a row it never fetches.
pub const DEFERRED_LOOKUPS_FROM: usize = 2;

impl<S: BlockSource> HeapRowHints<S> {
    /// Hints for the rows of the table `heap` reads.
    pub fn new(mut heap: S) -> Self {
        let budget = heap.platform().io_concurrency;
        HeapRowHints {
            heap,
            budget,
            hinted: 0,
            last_block: None,
            last_result: Prefetched::NotStarted,
            hinted_before_call: 0,
            watch: LAST_WATCH.with(Cell::get),
            handed_out: 0,
            expected: RECENT.with(Cell::get).expected(),
            deferred: VecDeque::new(),
            issued: 0,
        }
    }

    /// A rescan starts numbering rows again (the table stays as slow as it was seen).
    pub fn restart(&mut self) {
        self.record_scan();
        self.expected = RECENT.with(Cell::get).expected();
        self.hinted = 0;
        self.last_block = None;
        self.last_result = Prefetched::NotStarted;
        self.deferred.clear();
        self.watch.restart();
    }

    /// The scan is asked for its next row: whether the executor's table fetches go to a
    /// device ([`TableFetchWatch`]).
    pub fn table_is_slow(&mut self) -> bool {
        self.hinted_before_call = self.hinted;
        let now = self.watch.timing().then(|| self.heap.clock());
        self.watch.next_call(now, self.heap.usage().reads)
    }

    /// The scan hands out its `returned`th row (the executor fetches it before asking for
    /// the next).
    pub fn row_returned(&mut self, returned: usize) {
        self.handed_out = self.handed_out.max(returned);
        let hinted = self.hinted_before_call >= returned;
        let now = self.watch.timing().then(|| self.heap.clock());
        let reads = self.heap.usage().reads;
        self.watch.row_returned(now, reads, hinted);
    }

    /// How many rows past the `returned` handed out to ask the table for
    /// ([`heap_lookahead_distance`]).
    pub fn distance(&self, returned: usize) -> usize {
        heap_lookahead_distance(returned, self.budget, self.expected)
    }

    /// Adds the rows handed out so far to the backend's recent scans.
    fn record_scan(&mut self) {
        let rows = std::mem::take(&mut self.handed_out);
        RECENT.with(|recent| {
            let mut scans = recent.get();
            scans.record(rows);
            recent.set(scans);
        });
    }

    /// The table's block source (the simulator fetches the rows through it).
    pub fn source(&mut self) -> &mut S {
        &mut self.heap
    }

    /// `returned` rows were handed out; `next_blocks` are the table blocks of the rows that
    /// follow, in the order they will be returned. Hints the ones within
    /// [`heap_lookahead_distance`] not hinted yet, each block once in a row.
    pub fn ahead(&mut self, returned: usize, next_blocks: impl Iterator<Item = BlockNumber>) {
        let rows = next_blocks.map(|block| TableRow { block, offset: 0 });
        self.ahead_rows(returned, rows, |_| 0);
    }

    /// As [`ahead`](Self::ahead), for rows whose values may be stored out of line:
    /// `out_of_line` reads the row's heap block, hints the blocks of its value (TOAST) and
    /// returns how many reads it started. It is called at once for a row whose heap block is
    /// already in shared buffers. A row whose heap block had to be hinted cannot tell where
    /// its value is yet: from [`DEFERRED_LOOKUPS_FROM`] rows on, it is looked up in the call
    /// that hands out the row before it, by when its heap read has had a whole row's fetch to
    /// complete; the executor then finds its value's blocks on their way.
    pub fn ahead_rows(
        &mut self,
        returned: usize,
        next_rows: impl Iterator<Item = TableRow>,
        mut out_of_line: impl FnMut(TableRow) -> u64,
    ) {
        while let Some(&(row, next)) = self.deferred.front() {
            if row > returned {
                break;
            }
            self.deferred.pop_front();
            // The row after the one handed out now (rows are numbered from 0); earlier rows
            // are fetched before a look-up could help.
            if row == returned && returned >= DEFERRED_LOOKUPS_FROM {
                self.issued += out_of_line(next);
            }
        }
        let until = returned + self.distance(returned);
        if self.hinted >= until {
            return;
        }
        for (row, next) in (returned..until).zip(next_rows) {
            if row >= self.hinted {
                if self.last_block != Some(next.block) {
                    self.last_block = Some(next.block);
                    self.last_result = self.heap.prefetch(next.block);
                    if self.last_result == Prefetched::Started {
                        self.issued += 1;
                    }
                }
                match self.last_result {
                    Prefetched::Cached => self.issued += out_of_line(next),
                    Prefetched::Started => self.deferred.push_back((row, next)),
                    Prefetched::NotStarted => {}
                }
            }
            self.hinted = self.hinted.max(row + 1);
        }
    }
}

/// Where a row is in its table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableRow {
    pub block: BlockNumber,
    pub offset: u16,
}

impl<S: BlockSource> Drop for HeapRowHints<S> {
    fn drop(&mut self) {
        self.record_scan();
        self.watch.restart();
        LAST_WATCH.with(|last| last.set(self.watch));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);
    const SLOW: Duration = Duration::from_micros(200);

    /// Hands out a row at `at` and asks for the next after `gap`, with `misses` misses.
    fn gap(
        w: &mut TableFetchWatch,
        at: Duration,
        gap: Duration,
        misses: i64,
        hinted: bool,
    ) -> bool {
        let timed = w.timing();
        w.row_returned(timed.then_some(at), 100, hinted);
        w.next_call(timed.then_some(at + gap), 100 + misses)
    }

    #[test]
    fn two_slow_gaps_with_misses_make_the_table_slow() {
        let mut w = TableFetchWatch::default();
        assert!(!w.next_call(None, 0), "nothing handed out yet");
        // A long gap without a miss (a slow client, a sort above) says nothing.
        assert!(!gap(&mut w, MS, 10 * MS, 0, false));
        assert!(!w.timing(), "no miss yet: no clock");
        // The first miss turns the clock on, untimed.
        assert!(!gap(&mut w, 2 * MS, SLOW, 1, false));
        assert!(w.timing());
        // A miss answered by the page cache says nothing.
        assert!(!gap(&mut w, 20 * MS, DEVICE_READ / 2, 1, false));
        // One slow miss is not enough (a noisy machine), two in a row are.
        assert!(!gap(&mut w, 30 * MS, SLOW, 1, false));
        assert!(gap(&mut w, 40 * MS, SLOW, 1, false));
        assert!(w.slow());
        // Hinted rows read fast and say nothing; an unhinted fast miss turns it back.
        assert!(gap(&mut w, 50 * MS, DEVICE_READ / 2, 1, true));
        assert!(
            gap(&mut w, 60 * MS, SLOW, 0, false),
            "a gap without a miss changes nothing"
        );
        assert!(!gap(&mut w, 70 * MS, DEVICE_READ / 2, 1, false));
    }

    #[test]
    fn quiet_gaps_stop_the_clock() {
        let mut w = TableFetchWatch::default();
        assert!(!gap(&mut w, MS, SLOW, 1, false));
        for i in 0..QUIET_GAPS {
            assert!(w.timing(), "quiet gap {i}");
            gap(&mut w, MS, SLOW, 0, false);
        }
        assert!(!w.timing());
    }

    #[test]
    fn a_table_that_became_resident_is_no_longer_slow() {
        let mut w = TableFetchWatch::default();
        assert!(!gap(&mut w, MS, SLOW, 1, false));
        assert!(!gap(&mut w, 2 * MS, SLOW, 1, false));
        assert!(gap(&mut w, 3 * MS, SLOW, 1, false), "two slow gaps");
        // Hinted rows that still miss keep it slow, however many.
        for i in 0..2 * QUIET_GAPS {
            assert!(
                gap(&mut w, 4 * MS, DEVICE_READ / 2, 1, true),
                "hinted row {i}"
            );
        }
        // Rows found in shared buffers: slow until the quiet gaps add up, then not.
        for i in 1..QUIET_GAPS {
            assert!(gap(&mut w, 5 * MS, SLOW, 0, true), "quiet gap {i}");
        }
        assert!(!gap(&mut w, 6 * MS, SLOW, 0, true));
        assert!(!w.slow() && !w.timing());
        // It takes two slow gaps again to turn it back.
        assert!(!gap(&mut w, 7 * MS, SLOW, 1, false), "turns the clock on");
        assert!(!gap(&mut w, 8 * MS, SLOW, 1, false));
        assert!(gap(&mut w, 9 * MS, SLOW, 1, false));
    }

    #[test]
    fn the_scans_own_work_and_a_rescan_are_no_gap() {
        let mut w = TableFetchWatch::default();
        assert!(!gap(&mut w, MS, SLOW, 1, false), "turns the clock on");
        assert!(!gap(&mut w, MS, SLOW, 1, false));
        // Reads and time between next_call and row_returned are the scan's own.
        assert!(!w.next_call(Some(20 * MS), 140));
        assert!(
            gap(&mut w, 30 * MS, SLOW, 1, false),
            "the second slow gap in a row"
        );
        let mut w = TableFetchWatch::default();
        assert!(!gap(&mut w, MS, SLOW, 1, false));
        assert!(!gap(&mut w, MS, SLOW, 1, false));
        w.row_returned(Some(2 * MS), 100, false);
        w.restart();
        assert!(
            !w.next_call(Some(9 * MS), 200),
            "a rescan's first call judges no gap"
        );
    }

    #[test]
    fn distance_grows_one_every_two_rows_up_to_the_budget() {
        let distances: Vec<usize> = (1..=8)
            .map(|r| heap_lookahead_distance(r, 3, None))
            .collect();
        assert_eq!(distances, vec![1, 2, 2, 3, 3, 3, 3, 3]);
        assert_eq!(heap_lookahead_distance(1000, 16, None), 16);
        assert_eq!(heap_lookahead_distance(5, 0, None), 0);
    }

    #[test]
    fn an_expected_count_asks_for_all_its_rows_at_once_within_the_budget() {
        let distances: Vec<usize> = (1..=12)
            .map(|r| heap_lookahead_distance(r, 16, Some(10)))
            .collect();
        // Rows 1..9 from the first row on; past the expected count it grows as before.
        assert_eq!(distances, vec![9, 8, 7, 6, 5, 4, 4, 5, 5, 6, 6, 7]);
        assert_eq!(
            heap_lookahead_distance(1, 4, Some(10)),
            4,
            "the budget caps it"
        );
        assert_eq!(heap_lookahead_distance(1, 16, Some(1)), 1);
    }

    #[test]
    fn the_expected_count_is_the_fewest_rows_of_the_last_scans() {
        let mut recent = RecentScans::default();
        assert_eq!(recent.expected(), None);
        recent.record(10);
        assert_eq!(recent.expected(), None, "one scan is no pattern");
        recent.record(0);
        assert_eq!(
            recent.expected(),
            None,
            "a scan without rows is not counted"
        );
        recent.record(25);
        assert_eq!(recent.expected(), Some(10));
        recent.record(5);
        recent.record(40);
        assert_eq!(recent.expected(), Some(5));
        // The 10, 25 and 5 are pushed out by newer scans.
        for _ in 0..3 {
            recent.record(40);
        }
        assert_eq!(recent.expected(), Some(40));
        recent.record(usize::MAX);
        assert_eq!(recent.expected(), Some(40));
    }
}
