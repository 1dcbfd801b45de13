//! Adaptive look-ahead: whether a cold walk hints the blocks of the candidates it will probably
//! expand next ([`crate::lookahead`]), decided from how long its hops take.
//!
//! A hint reports no completion, so a wrong guess shows only as device time taken from the
//! reads the walk does need, and as the hint's own system call. [`Speculation`] alternates
//! phases of [`PHASE_HOPS`] cold hops with and without look-ahead and keeps, for each kind, a
//! running mean of the time per block of a hop, from its first read to its last page's work
//! (right guesses arrive early and shorten it, wrong ones lengthen it, so the mean weighs the
//! gains against the losses). Look-ahead stays on while its mean is no higher than the mean
//! without it, with one phase in [`PROBE_WHILE_WINNING`] off to keep that
//! baseline fresh; otherwise it stays off, with one phase in [`PROBE_WHILE_LOSING`] on, in case
//! the disk got room again. The state outlives a walk (a walk of 50 hops makes six phases), as
//! the cold state does.

use std::cell::Cell;
use std::time::Duration;

/// Cold hops with blocks in a phase.
pub const PHASE_HOPS: u32 = 8;
/// While look-ahead wins, one phase in this many runs without it.
pub const PROBE_WHILE_WINNING: u32 = 8;
/// While look-ahead loses, one phase in this many runs with it.
pub const PROBE_WHILE_LOSING: u32 = 8;

/// Weight of a new phase in a running mean.
const NEW_PHASE_WEIGHT: f64 = 0.5;

/// The state of the decision. Plain data, so that it can be kept between walks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Speculation {
    /// This phase hints look-ahead blocks.
    on: bool,
    /// Hops left in this phase.
    hops_left: u32,
    /// Phases ended so far.
    phases: u32,
    /// This phase's hop time (µs) and blocks.
    took_us: f64,
    blocks: u64,
    /// Running means of the hop time per block (µs), with and without look-ahead.
    mean_on: Option<f64>,
    mean_off: Option<f64>,
}

impl Default for Speculation {
    /// The first phase runs without look-ahead, to measure the baseline.
    fn default() -> Self {
        Speculation {
            on: false,
            hops_left: PHASE_HOPS,
            phases: 0,
            took_us: 0.0,
            blocks: 0,
            mean_on: None,
            mean_off: None,
        }
    }
}

impl Speculation {
    /// Whether the hops of this phase hint look-ahead blocks.
    pub fn on(&self) -> bool {
        self.on
    }

    /// Whether look-ahead is winning by the means so far (it is, until measured).
    pub fn winning(&self) -> bool {
        match (self.mean_on, self.mean_off) {
            (Some(on), Some(off)) => on <= off,
            _ => true,
        }
    }

    /// The running means of the hop time per block with and without look-ahead, µs.
    pub fn means(&self) -> (Option<f64>, Option<f64>) {
        (self.mean_on, self.mean_off)
    }

    /// Records a cold hop of `blocks` blocks that took `took` (hops without blocks are not
    /// counted).
    pub fn record_hop(&mut self, took: Duration, blocks: u32) {
        if blocks == 0 {
            return;
        }
        self.took_us += took.as_secs_f64() * 1e6;
        self.blocks += u64::from(blocks);
        self.hops_left -= 1;
        if self.hops_left == 0 {
            self.end_phase();
        }
    }

    fn end_phase(&mut self) {
        let mean = self.took_us / self.blocks as f64;
        let slot = if self.on {
            &mut self.mean_on
        } else {
            &mut self.mean_off
        };
        *slot = Some(match *slot {
            Some(old) => old + NEW_PHASE_WEIGHT * (mean - old),
            None => mean,
        });
        self.phases += 1;
        self.on = if self.winning() {
            !self.phases.is_multiple_of(PROBE_WHILE_WINNING)
        } else {
            self.phases.is_multiple_of(PROBE_WHILE_LOSING)
        };
        self.hops_left = PHASE_HOPS;
        self.took_us = 0.0;
        self.blocks = 0;
    }
}

thread_local! {
    /// The decision of this backend's last walk with look-ahead.
    static LAST: Cell<Speculation> = Cell::new(Speculation::default());
}

/// The state the last walk of this thread (backend) left.
pub fn last() -> Speculation {
    LAST.with(Cell::get)
}

/// Keeps `state` for the next walk of this thread.
pub fn keep(state: Speculation) {
    LAST.with(|last| last.set(state));
}

/// Forgets it (a new backend).
pub fn forget() {
    keep(Speculation::default());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(s: &mut Speculation, us_per_block: u64) {
        for _ in 0..PHASE_HOPS {
            s.record_hop(Duration::from_micros(us_per_block * 4), 4);
        }
    }

    #[test]
    fn starts_off_then_tries_look_ahead() {
        let mut s = Speculation::default();
        assert!(!s.on());
        s.record_hop(Duration::from_micros(400), 0);
        assert!(!s.on(), "hops without blocks do not count");
        phase(&mut s, 100);
        assert!(s.on(), "untried look-ahead is tried");
    }

    #[test]
    fn stays_on_while_hops_do_not_slow_down_and_probes_the_baseline() {
        let mut s = Speculation::default();
        phase(&mut s, 100);
        let mut on = Vec::new();
        for _ in 0..24 {
            let wait = if s.on() { 60 } else { 100 };
            phase(&mut s, wait);
            on.push(s.on());
        }
        let off = on.iter().filter(|&&o| !o).count();
        assert_eq!(off, 3, "one phase in eight measures the baseline: {on:?}");
        assert!(s.winning());
    }

    #[test]
    fn turns_off_when_hops_slow_down_and_probes_again() {
        let mut s = Speculation::default();
        phase(&mut s, 100);
        let mut on = Vec::new();
        for _ in 0..16 {
            let wait = if s.on() { 130 } else { 100 };
            phase(&mut s, wait);
            on.push(s.on());
        }
        assert!(!s.winning());
        let probes = on.iter().filter(|&&o| o).count();
        assert_eq!(probes, 2, "one phase in eight tries again: {on:?}");
    }

    #[test]
    fn comes_back_when_the_disk_gets_room() {
        let mut s = Speculation::default();
        phase(&mut s, 100);
        for _ in 0..8 {
            let wait = if s.on() { 150 } else { 100 };
            phase(&mut s, wait);
        }
        assert!(!s.winning());
        for _ in 0..24 {
            let wait = if s.on() { 50 } else { 100 };
            phase(&mut s, wait);
        }
        assert!(s.winning(), "{:?}", s.means());
        assert!(s.on() || s.phases.is_multiple_of(PROBE_WHILE_WINNING));
    }

    #[test]
    fn kept_between_walks_of_a_thread() {
        forget();
        let mut s = last();
        phase(&mut s, 100);
        keep(s);
        assert!(last().on());
        forget();
        assert!(!last().on());
    }
}
