//! The data types and their SQL functions: one module per type, as in pgvector's surface.

pub mod bit;
pub mod halfvec;
pub mod layout;
pub mod sparsevec;
pub mod vector;
