//! The list a value goes to: the nearest center by the operator class's distance (support
//! function 1, value first), the first list on ties. NaN distances never win, so a value
//! whose every distance is NaN goes to list 0, as in pgvector.

/// Index of the nearest of `distances` (one per list, in list order).
pub fn nearest_list(distances: impl IntoIterator<Item = f64>) -> usize {
    let mut best = 0;
    let mut min = f64::MAX;
    for (i, d) in distances.into_iter().enumerate() {
        if d < min {
            min = d;
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_nearest_wins() {
        assert_eq!(nearest_list([3.0, 1.0, 1.0, 2.0]), 1);
        assert_eq!(nearest_list([f64::NAN, f64::NAN]), 0);
        assert_eq!(nearest_list([f64::NAN, 5.0]), 1);
        assert_eq!(nearest_list(Vec::<f64>::new()), 0);
    }
}
