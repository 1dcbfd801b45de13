//! Look-ahead planning: which blocks to hint for the candidates a walk will probably expand
//! after its next hop ([`Lookahead`]), from the neighbor lists its loads captured
//! ([`CapturedNeighbors`]).

use crate::reader::BlockReader;
use crate::source::{BlockNumber, BlockSource};
use std::collections::HashMap;
use std::hash::Hash;

/// Most neighbor ids captured per walk (then look-ahead skips the elements loaded after).
pub const MAX_CAPTURED: usize = 1 << 18;

/// Layer lists of loaded elements whose neighbor tuple shares their page, copied while the
/// page was locked anyway, so that look-ahead can name their unvisited neighbors without
/// reading a page. Only filled while the walk is cold and look-ahead is on
/// ([`BlockReader::captures`]).
#[derive(Debug)]
pub struct CapturedNeighbors<Id> {
    lists: HashMap<Id, (u32, u16, u8)>,
    ids: Vec<Id>,
}

impl<Id> Default for CapturedNeighbors<Id> {
    fn default() -> Self {
        CapturedNeighbors {
            lists: HashMap::new(),
            ids: Vec::new(),
        }
    }
}

impl<Id: Copy + Eq + Hash> CapturedNeighbors<Id> {
    /// Forgets every list (a new walk: lists of the previous one may be stale).
    pub fn clear(&mut self) {
        self.lists.clear();
        self.ids.clear();
    }

    /// Keeps `id`'s list on `layer`.
    pub fn add(&mut self, id: Id, layer: u8, neighbors: impl Iterator<Item = Id>) {
        if self.ids.len() >= MAX_CAPTURED {
            return;
        }
        let start = self.ids.len();
        self.ids.extend(neighbors);
        let len = (self.ids.len() - start) as u16;
        self.lists.insert(id, (start as u32, len, layer));
    }

    /// `id`'s list on `layer`, if it was captured on that layer.
    pub fn get(&self, id: &Id, layer: u8) -> Option<&[Id]> {
        let &(start, len, captured_on) = self.lists.get(id)?;
        if captured_on != layer {
            return None;
        }
        let start = start as usize;
        self.ids.get(start..start + usize::from(len))
    }
}

/// Captured lists and the scratch of look-ahead planning, kept by a walk's store.
#[derive(Debug)]
pub struct Lookahead<Id> {
    /// Lists captured while loading.
    pub captured: CapturedNeighbors<Id>,
    /// Scratch: blocks to hint.
    blocks: Vec<BlockNumber>,
}

impl<Id> Default for Lookahead<Id> {
    fn default() -> Self {
        Lookahead {
            captured: CapturedNeighbors::default(),
            blocks: Vec::new(),
        }
    }
}

impl<Id: Copy + Eq + Hash> Lookahead<Id> {
    /// A new walk.
    pub fn clear(&mut self) {
        self.captured.clear();
    }

    /// Gives `reader` the blocks of the `upcoming` candidates' unvisited neighbors on `layer`
    /// (each block once, in the order met), from the captured lists, to hint when the next hop
    /// starts ([`BlockReader::speculate`]).
    pub fn plan<'a, S: BlockSource>(
        &mut self,
        reader: &mut BlockReader<S>,
        layer: u8,
        upcoming: impl Iterator<Item = &'a Id>,
        visited: impl Fn(&Id) -> bool,
        block: impl Fn(&Id) -> BlockNumber,
    ) where
        Id: 'a,
    {
        self.blocks.clear();
        for candidate in upcoming {
            let Some(list) = self.captured.get(candidate, layer) else {
                continue;
            };
            for id in list {
                let b = block(id);
                if !visited(id) && !self.blocks.contains(&b) {
                    self.blocks.push(b);
                }
            }
        }
        reader.speculate(&self.blocks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_are_per_layer_and_capped() {
        let mut c = CapturedNeighbors::default();
        c.add(1u32, 0, [2, 3, 4].into_iter());
        c.add(5, 1, [6].into_iter());
        assert_eq!(c.get(&1, 0), Some(&[2, 3, 4][..]));
        assert_eq!(c.get(&1, 1), None);
        assert_eq!(c.get(&5, 1), Some(&[6][..]));
        assert_eq!(c.get(&9, 0), None);
        c.clear();
        assert_eq!(c.get(&1, 0), None);
        c.add(1, 0, std::iter::repeat_n(7, MAX_CAPTURED));
        c.add(2, 0, [8].into_iter());
        assert_eq!(c.get(&2, 0), None, "past the cap nothing more is kept");
    }
}
