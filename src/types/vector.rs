//! vector
