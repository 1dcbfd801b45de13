//! Slicing and joining of the dense types (`vector`, `halfvec`), which differ only in the
//! element type and the name and limit their errors carry.

use super::checks::check_dim;
use super::layout::{DenseElement, DenseMut, DenseRef};

/// `subvector(v, start, count)`: `count` elements from 1-based `start`, clipped to the value
/// like `substring`; an empty result raises "at least 1 dimension" as pgvector does.
pub fn subvector<T: DenseElement>(
    v: DenseRef<T>,
    start: i32,
    count: i32,
    type_name: &'static str,
    max_dim: usize,
) -> DenseMut<T> {
    let mut start = start;
    let dim = v.dim() as i32;
    if count < 1 {
        check_dim(type_name, max_dim, 0);
    }
    // Written so that nothing overflows: dim - count cannot, and start + count is only formed
    // when it stays within dim.
    let end = if start > dim - count {
        dim + 1
    } else {
        start + count
    };
    if start < 1 {
        start = 1;
    } else if start > dim {
        check_dim(type_name, max_dim, 0);
    }
    let len = end - start;
    check_dim(type_name, max_dim, len);
    let first = (start - 1) as usize;
    let mut result = DenseMut::new(len as usize);
    result
        .x()
        .copy_from_slice(&v.x[first..first + len as usize]);
    result
}

/// `a || b`: the elements of `a` then those of `b`, within the type's limit.
pub fn concat<T: DenseElement>(
    a: DenseRef<T>,
    b: DenseRef<T>,
    type_name: &'static str,
    max_dim: usize,
) -> DenseMut<T> {
    let dim = a.dim() + b.dim();
    check_dim(type_name, max_dim, dim as i64);
    let mut result = DenseMut::new(dim);
    let (head, tail) = result.x().split_at_mut(a.dim());
    head.copy_from_slice(a.x);
    tail.copy_from_slice(b.x);
    result
}
