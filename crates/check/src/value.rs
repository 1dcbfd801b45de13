//! The indexed value inside a tuple: a whole varlena of the column's type, with the index's
//! dimensions, and nothing an input function would have refused.

use vector_formats::varlena::{read_bit, read_halfvec, read_sparsevec, read_vector};

/// The type of the indexed column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueType {
    Vector,
    Halfvec,
    Bit,
    Sparsevec,
}

/// Checks a stored value (header included) against the index's `dimensions`; the error says
/// what is wrong with it.
pub fn check_value(kind: ValueType, dimensions: u32, value: &[u8]) -> Result<(), String> {
    let dims = match kind {
        ValueType::Vector => {
            let v = read_vector(value).map_err(|e| e.message())?;
            if v.x.iter().any(|x| !x.is_finite()) {
                return Err("value has a non-finite element".into());
            }
            v.dim() as u64
        }
        ValueType::Halfvec => {
            let v = read_halfvec(value).map_err(|e| e.message())?;
            if v.x.iter().any(|x| !x.is_finite()) {
                return Err("value has a non-finite element".into());
            }
            v.dim() as u64
        }
        ValueType::Bit => u64::from(read_bit(value).map_err(|e| e.message())?.bit_len),
        ValueType::Sparsevec => {
            let v = read_sparsevec(value).map_err(|e| e.message())?;
            let mut previous = -1i64;
            for (&i, &x) in v.indices.iter().zip(v.values) {
                if i64::from(i) <= previous || i >= v.dim {
                    return Err(format!("value has index {i} out of order or range"));
                }
                if !x.is_finite() || x == 0.0 {
                    return Err(format!("value has element {x} stored"));
                }
                previous = i64::from(i);
            }
            u64::try_from(v.dim).unwrap_or(0)
        }
    };
    if dims != u64::from(dimensions) {
        return Err(format!(
            "value has {dims} dimensions, the index {dimensions}"
        ));
    }
    Ok(())
}
