//! HNSW graph algorithms over a storage trait.
