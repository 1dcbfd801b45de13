//! `heapallindexed`: which heap TIDs the index holds, with a fingerprint of each one's value,
//! so that a scan of the table can tell a row the index lacks or holds with another value.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use vector_formats::page::ItemPointer;

/// The heap TIDs an index holds (about 24 bytes each in memory).
#[derive(Default)]
pub struct IndexedTids {
    /// `None` for a value only Postgres can read (compressed): the TID alone is checked.
    fingerprints: HashMap<ItemPointer, Option<u64>>,
    /// The fingerprints are the vector hashes a quantized index keeps in its code records.
    vector_hashes: bool,
}

/// What the index holds for a heap row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presence {
    Indexed,
    Missing,
    /// The TID is there with another value.
    OtherValue,
}

/// A 64-bit fingerprint of a value's bytes (a collision can only hide a changed value).
pub fn fingerprint(value: &[u8]) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

impl std::fmt::Debug for IndexedTids {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IndexedTids({} heap TIDs)", self.len())
    }
}

impl IndexedTids {
    /// The TIDs of a quantized index: each row's value is known by the hash its code record
    /// holds (`vector_formats::hnsw_codes::vector_hash`).
    pub fn of_vector_hashes() -> Self {
        IndexedTids {
            vector_hashes: true,
            ..IndexedTids::default()
        }
    }

    /// Records that a quantized index holds `tid` with a vector of hash `hash`; false if it
    /// already held `tid`.
    pub fn insert_hash(&mut self, tid: ItemPointer, hash: u32) -> bool {
        self.fingerprints
            .insert(tid, Some(u64::from(hash)))
            .is_none()
    }

    fn fingerprint_of(&self, value: &[u8]) -> u64 {
        if self.vector_hashes {
            u64::from(vector_formats::hnsw_codes::vector_hash(value))
        } else {
            fingerprint(value)
        }
    }

    /// Makes room for `additional` more heap TIDs; on failure, the bytes asked for.
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), usize> {
        self.fingerprints.try_reserve(additional).map_err(|_| {
            additional.saturating_mul(std::mem::size_of::<(ItemPointer, Option<u64>)>() + 1)
        })
    }

    /// Records that the index holds `tid` with `value`; false if it already held `tid`.
    pub fn insert(&mut self, tid: ItemPointer, value: &[u8]) -> bool {
        self.fingerprints
            .insert(tid, Some(fingerprint(value)))
            .is_none()
    }

    /// Records that the index holds `tid` with a value this crate cannot read.
    pub fn insert_unknown_value(&mut self, tid: ItemPointer) -> bool {
        self.fingerprints.insert(tid, None).is_none()
    }

    /// Whether the index holds the heap row `tid`, whose indexed value is `value`.
    pub fn presence(&self, tid: ItemPointer, value: &[u8]) -> Presence {
        match self.fingerprints.get(&tid) {
            None => Presence::Missing,
            Some(None) => Presence::Indexed,
            Some(&Some(f)) if f == self.fingerprint_of(value) => Presence::Indexed,
            Some(Some(_)) => Presence::OtherValue,
        }
    }

    pub fn len(&self) -> usize {
        self.fingerprints.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fingerprints.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_missing_and_changed_rows() {
        let mut tids = IndexedTids::default();
        let a = ItemPointer::new(3, 7);
        assert!(tids.insert(a, b"value"));
        assert!(!tids.insert(a, b"value"));
        assert_eq!(tids.presence(a, b"value"), Presence::Indexed);
        assert_eq!(tids.presence(a, b"valuf"), Presence::OtherValue);
        assert_eq!(
            tids.presence(ItemPointer::new(3, 8), b"value"),
            Presence::Missing
        );
        assert!(tids.insert_unknown_value(ItemPointer::new(4, 1)));
        assert_eq!(
            tids.presence(ItemPointer::new(4, 1), b"any"),
            Presence::Indexed
        );
        assert_eq!(tids.len(), 2);
    }
}
