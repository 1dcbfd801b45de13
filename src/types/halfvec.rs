//! halfvec
