//! sparsevec
