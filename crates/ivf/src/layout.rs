//! How many pages a build's lists fill, counted before they are written: a build that knows
//! it can add them to the index many at a time, and still give every page the block that
//! adding them one at a time would.
//!
//! The rule is pgvector's (`InsertTuples`): every list, even one with no entries, starts on a
//! new page; an entry goes on a new page when the current one's `PageGetFreeSpace` is less
//! than its `MAXALIGN`ed size; each entry also takes one line pointer.

/// Bytes of a line pointer (`ItemIdData`).
const ITEM_ID: usize = 4;

/// `MAXALIGN` on the 64-bit platforms Postgres supports.
const fn maxalign(n: usize) -> usize {
    (n + 7) & !7
}

/// Counts the pages of lists whose entries arrive in list order.
#[derive(Clone, Debug)]
pub struct PagePlanner {
    /// `pd_upper - pd_lower` of an empty entry page.
    empty: usize,
    /// The list of the page being filled, and that page's `pd_upper - pd_lower`.
    current: Option<(usize, usize)>,
    pages: u64,
}

impl PagePlanner {
    /// `empty_space`: `PageGetExactFreeSpace` of a freshly initialized entry page.
    pub fn new(empty_space: usize) -> Self {
        PagePlanner {
            empty: empty_space,
            current: None,
            pages: 0,
        }
    }

    /// One more entry, `len` bytes, in `list` (not below the previous entry's list).
    pub fn entry(&mut self, list: usize, len: usize) {
        self.start_lists_before(list);
        let aligned = maxalign(len);
        let space = match self.current {
            Some((l, space)) if l == list && space.saturating_sub(ITEM_ID) >= aligned => space,
            _ => {
                self.pages += 1;
                self.empty
            }
        };
        self.current = Some((list, space.saturating_sub(aligned + ITEM_ID)));
    }

    /// No more entries: every list below `lists` not seen yet gets its one empty page.
    pub fn finish(&mut self, lists: usize) {
        self.start_lists_before(lists);
    }

    /// Pages counted so far.
    pub fn pages(&self) -> u64 {
        self.pages
    }

    /// Lists after the current one and before `list` have no entries: one page each.
    fn start_lists_before(&mut self, list: usize) {
        let next = self.current.map_or(0, |(l, _)| l + 1);
        for l in next..list {
            self.pages += 1;
            self.current = Some((l, self.empty));
        }
    }
}
