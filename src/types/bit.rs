//! bit
