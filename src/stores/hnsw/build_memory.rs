//! What pgvector allocates for its build graph, so that ours leaves memory after as many
//! tuples as pgvector's would: 1 MB generation blocks in a serial build ([`MemoryAccount`]),
//! allocation by allocation in a parallel one ([`pgvector_shared_bytes`]).

use crate::storage::page::maxalign;
use crate::stores::hnsw::format::layer_m;

/// `sizeof(HnswElementData)` in pgvector 0.8.6.
const PG_ELEMENT_SIZE: usize = 128;
/// `sizeof(HnswCandidate)`.
const PG_CANDIDATE_SIZE: usize = 16;
/// `offsetof(HnswNeighborArray, items)`.
const PG_NEIGHBOR_ARRAY_HEADER: usize = 8;

/// The chunks pgvector allocates for one element: the element, its array of per-layer
/// pointers, one neighbor array per layer, the value.
fn pgvector_chunks(level: u8, m: usize, value_len: usize) -> impl Iterator<Item = usize> {
    let arrays = (0..=level)
        .map(move |layer| PG_NEIGHBOR_ARRAY_HEADER + PG_CANDIDATE_SIZE * layer_m(m, layer));
    [PG_ELEMENT_SIZE, 8 * (usize::from(level) + 1)]
        .into_iter()
        .chain(arrays)
        .chain(std::iter::once(value_len))
}

/// Bytes pgvector's parallel build takes from its shared area for one element.
pub fn pgvector_shared_bytes(level: u8, m: usize, value_len: usize) -> usize {
    pgvector_chunks(level, m, value_len).map(maxalign).sum()
}

/// pgvector's generation context block size for the build graph.
pub(crate) const BLOCK_SIZE: usize = 1024 * 1024;
/// Header of one generation context block (`GenerationBlock`), before its chunks.
const BLOCK_HEADER: usize = 56;
/// The context header (`GenerationContext`) shares the first block, which is that much smaller
/// (and counted so): a graph of exactly `maintenance_work_mem` MB fits.
const CONTEXT_HEADER: usize = 192;
/// Header of one chunk (`MemoryChunk`).
const CHUNK_HEADER: usize = 8;

/// Bytes pgvector's serial build has allocated for its graph, in whole blocks.
#[derive(Clone, Debug)]
pub struct MemoryAccount {
    /// Bytes used in the current block.
    block_used: usize,
    /// Blocks allocated so far (the context starts with one).
    blocks: usize,
}

impl Default for MemoryAccount {
    fn default() -> Self {
        MemoryAccount {
            block_used: CONTEXT_HEADER + BLOCK_HEADER,
            blocks: 1,
        }
    }
}

impl MemoryAccount {
    /// `MemoryContextMemAllocated` of pgvector's graph context.
    pub fn allocated(&self) -> usize {
        self.blocks * BLOCK_SIZE - CONTEXT_HEADER
    }

    fn chunk(&mut self, size: usize) {
        let need = maxalign(size) + CHUNK_HEADER;
        if self.block_used + need > BLOCK_SIZE {
            // Large chunks get a block of their own in pgvector too; the block count is what
            // matters here.
            self.blocks += need.div_ceil(BLOCK_SIZE);
            self.block_used = BLOCK_HEADER + need.min(BLOCK_SIZE - BLOCK_HEADER);
        } else {
            self.block_used += need;
        }
    }

    /// Accounts one element of `level` with a value of `value_len` bytes, as pgvector allocates
    /// it.
    pub fn add_element(&mut self, level: u8, m: usize, value_len: usize) {
        for size in pgvector_chunks(level, m, value_len) {
            self.chunk(size);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Elements of level 0 with a vector(32) value that fit before a build of `mb` MB leaves
    /// memory.
    fn fitting(mb: usize) -> usize {
        let mut account = MemoryAccount::default();
        let mut n = 0;
        while account.allocated() < mb * BLOCK_SIZE {
            account.add_element(0, 16, 8 + 4 * 32);
            n += 1;
        }
        n
    }

    #[test]
    fn leaves_memory_where_pgvector_does() {
        // pgvector 0.8.6 on Postgres 18 with m = 16 and vector(32) values (about 1 in 16
        // elements above level 0): 1245, 2485, 3731 and 9951 tuples for 1, 2, 3 and 8 MB.
        for (mb, pgvector) in [(1, 1245), (2, 2485), (3, 3731), (8, 9951)] {
            let ours = fitting(mb);
            assert!(
                ours.abs_diff(pgvector) * 100 <= pgvector * 3,
                "{mb} MB: {ours}"
            );
        }
    }
}
