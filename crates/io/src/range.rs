//! Reading a contiguous block range in order ([`read_range`]), e.g. the pages of an ivfflat
//! list: a read stream with a buffer access strategy where the server has them, else a window
//! of hints ([`RangeWindow`]) within the I/O concurrency.

use crate::source::{BlockNumber, BlockSource, Strategy};
use std::ops::Range;

/// Where read streams are missing: which blocks to hint before reading each block of a range,
/// so that `window` reads are in flight (the one being read and `window - 1` hinted ahead).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RangeWindow {
    next: BlockNumber,
    end: BlockNumber,
    /// Blocks before this one have been hinted (or read).
    hinted: BlockNumber,
    window: u32,
}

impl RangeWindow {
    /// A window over `range` with the tablespace's I/O concurrency `io_concurrency` (0 or 1:
    /// no hints).
    pub fn new(range: Range<BlockNumber>, io_concurrency: usize) -> Self {
        RangeWindow {
            next: range.start,
            end: range.end.max(range.start),
            hinted: range.start,
            window: u32::try_from(io_concurrency.max(1)).unwrap_or(u32::MAX),
        }
    }

    /// The next block to read, and the blocks to hint first; `None` at the end of the range.
    pub fn advance(&mut self) -> Option<(BlockNumber, Range<BlockNumber>)> {
        if self.next >= self.end {
            return None;
        }
        let block = self.next;
        self.next += 1;
        // The block being read needs no hint; the ones after it do, up to the window.
        let from = self.hinted.max(block + 1);
        let until = block.saturating_add(self.window).min(self.end).max(from);
        self.hinted = until;
        Some((block, from..until))
    }
}

/// Reads the blocks of `range` in order with `strategy`; ended when dropped.
pub fn read_range<S: BlockSource>(
    source: &mut S,
    range: Range<BlockNumber>,
    strategy: Strategy,
) -> RangeRead<'_, S> {
    let stream = Some(source.begin_range(range, strategy));
    RangeRead { source, stream }
}

/// A range being read ([`read_range`]).
pub struct RangeRead<'a, S: BlockSource> {
    source: &'a mut S,
    stream: Option<S::RangeStream>,
}

impl<S: BlockSource> Iterator for RangeRead<'_, S> {
    type Item = S::Page;

    fn next(&mut self) -> Option<S::Page> {
        let stream = self.stream.as_mut()?;
        self.source.range_next(stream)
    }
}

impl<S: BlockSource> Drop for RangeRead<'_, S> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            return;
        }
        if let Some(stream) = self.stream.take() {
            self.source.end_range(stream);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(range: Range<BlockNumber>, eic: usize) -> Vec<(BlockNumber, Vec<BlockNumber>)> {
        let mut w = RangeWindow::new(range, eic);
        std::iter::from_fn(|| w.advance().map(|(b, h)| (b, h.collect()))).collect()
    }

    #[test]
    fn window_keeps_eic_reads_in_flight() {
        assert_eq!(
            plan(10..15, 3),
            vec![
                (10, vec![11, 12]),
                (11, vec![13]),
                (12, vec![14]),
                (13, vec![]),
                (14, vec![]),
            ]
        );
        assert_eq!(plan(0..3, 1), vec![(0, vec![]), (1, vec![]), (2, vec![])]);
        assert_eq!(plan(0..3, 0), plan(0..3, 1));
        assert!(plan(5..5, 8).is_empty());
        assert_eq!(plan(0..2, 64), vec![(0, vec![1]), (1, vec![])]);
    }
}
