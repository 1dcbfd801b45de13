//! A batch's distinct blocks and which of its ids lie on each ([`BatchLayout`]).

use crate::source::BlockNumber;

/// A batch's distinct blocks, in the order the batch first needs them, and the positions of
/// its ids grouped by block: one pass over the ids instead of one per block. Reused from batch
/// to batch (no allocation once its vectors have grown).
#[derive(Default, Debug)]
pub struct BatchLayout {
    blocks: Vec<BlockNumber>,
    /// Positions in the batch, block by block: block `k`'s are `members[starts[k]..starts[k + 1]]`.
    members: Vec<u32>,
    starts: Vec<u32>,
    /// Scratch: the block index of each id, and the next free member slot of each block.
    block_of: Vec<u32>,
    cursor: Vec<u32>,
}

impl BatchLayout {
    /// Groups `ids` by their block (`block(id)`).
    pub fn group<T>(&mut self, ids: &[T], block: impl Fn(&T) -> BlockNumber) {
        self.blocks.clear();
        self.block_of.clear();
        for id in ids {
            let b = block(id);
            let k = match self.blocks.iter().position(|&x| x == b) {
                Some(k) => k,
                None => {
                    self.blocks.push(b);
                    self.blocks.len() - 1
                }
            };
            self.block_of.push(k as u32);
        }
        self.starts.clear();
        self.starts.resize(self.blocks.len() + 1, 0);
        for &k in &self.block_of {
            self.starts[k as usize + 1] += 1;
        }
        for k in 0..self.blocks.len() {
            self.starts[k + 1] += self.starts[k];
        }
        self.members.clear();
        self.members.resize(ids.len(), 0);
        self.cursor.clear();
        self.cursor
            .extend_from_slice(&self.starts[..self.blocks.len()]);
        for (i, &k) in self.block_of.iter().enumerate() {
            let slot = &mut self.cursor[k as usize];
            self.members[*slot as usize] = i as u32;
            *slot += 1;
        }
    }

    /// The distinct blocks, in the order the batch first needs them.
    pub fn blocks(&self) -> &[BlockNumber] {
        &self.blocks
    }

    /// Positions (in the batch) of the ids on block `k`, in batch order.
    pub fn members(&self, k: usize) -> &[u32] {
        &self.members[self.starts[k] as usize..self.starts[k + 1] as usize]
    }

    /// The ids on block `k`, in batch order.
    pub fn ids_on<'a, T>(&'a self, k: usize, ids: &'a [T]) -> impl Iterator<Item = &'a T> + 'a {
        self.members(k).iter().map(move |&i| &ids[i as usize])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_ids_by_first_need() {
        // (block, offset) pairs.
        let ids = [(7u32, 1u16), (3, 2), (7, 3), (9, 1), (3, 1)];
        let mut layout = BatchLayout::default();
        layout.group(&ids, |id| id.0);
        assert_eq!(layout.blocks(), &[7, 3, 9]);
        assert_eq!(layout.members(0), &[0, 2]);
        assert_eq!(layout.members(1), &[1, 4]);
        assert_eq!(layout.members(2), &[3]);
        let on_3: Vec<u16> = layout.ids_on(1, &ids).map(|id| id.1).collect();
        assert_eq!(on_3, vec![2, 1]);
        layout.group(&ids[..1], |id| id.0);
        assert_eq!(layout.blocks(), &[7]);
        assert_eq!(layout.members(0), &[0]);
        layout.group::<(u32, u16)>(&[], |id| id.0);
        assert!(layout.blocks().is_empty());
    }
}
