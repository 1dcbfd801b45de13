//! The data types and their SQL functions: one module per type, as in pgvector's surface, and
//! the pieces the types share.

pub mod aggregate_state;
pub mod arrays;
pub mod binary_io;
pub mod bit;
pub mod checks;
pub mod dense_slices;
pub mod halfvec;
pub mod layout;
pub mod sparsevec;
pub mod typmod;
pub mod vector;
