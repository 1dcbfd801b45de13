//! Distances between values of Postgres's own `bit` type (VarBit: int32 vl_len_, int32 bit
//! length, then the bits packed MSB-first with zeroed padding).

use crate::fmgr::{self, FnCall};
use crate::types::layout::BitRef;
use pgrx::PgSqlErrorCode::ERRCODE_DATA_EXCEPTION;

/// Both arguments, which must have the same bit length (and so, being checked datums, the
/// same byte count).
fn same_length_args(call: &FnCall) -> (BitRef<'static>, BitRef<'static>) {
    let a = call.bit(0);
    let b = call.bit(1);
    if a.bit_len != b.bit_len {
        pgrx::ereport!(
            ERROR,
            ERRCODE_DATA_EXCEPTION,
            format!("different bit lengths {} and {}", a.bit_len, b.bit_len)
        );
    }
    (a, b)
}

crate::sql_function! {
    /// `hamming_distance(bit, bit)`: the number of differing bits.
    ///
    /// # Safety
    /// Called only by the function manager, with two `bit` arguments.
    fn hamming_distance(call) {
        let (a, b) = same_length_args(&call);
        fmgr::float8_datum(vector_distance::bits::hamming_distance(a.bytes, b.bytes, a.bit_len as usize))
    }
}

crate::sql_function! {
    /// `jaccard_distance(bit, bit)`: one minus the share of set bits the two have in common.
    ///
    /// # Safety
    /// Called only by the function manager, with two `bit` arguments.
    fn jaccard_distance(call) {
        let (a, b) = same_length_args(&call);
        fmgr::float8_datum(vector_distance::bits::jaccard_distance(a.bytes, b.bytes, a.bit_len as usize))
    }
}
