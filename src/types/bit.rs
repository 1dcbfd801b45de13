//! Distances between values of Postgres's own `bit` type (VarBit: int32 vl_len_, int32 bit
//! length, then the bits packed MSB-first with zeroed padding).

use crate::fmgr::{self, FnCall};
use pgrx::PgSqlErrorCode::ERRCODE_DATA_EXCEPTION;

/// A detoasted `bit` argument: its length in bits and its packed bytes.
struct BitString<'a> {
    len: u32,
    bytes: &'a [u8],
}

fn bit_arg(call: &FnCall, n: usize) -> BitString<'static> {
    let ptr = call.varlena(n);
    // SAFETY: the declared argument type is bit; pg_detoast_datum gives a 4-byte-header
    // VarBit that lives for the call: the bit length at offset 4, data bytes from offset 8 to
    // the varlena's end.
    unsafe {
        let total = pgrx::varsize_4b(ptr);
        let base = ptr.cast::<u8>();
        let len = base.add(4).cast::<u32>().read();
        let bytes = std::slice::from_raw_parts(base.add(8), total.saturating_sub(8));
        BitString { len, bytes }
    }
}

/// Both arguments, which must have the same bit length.
fn same_length_args(call: &FnCall) -> (BitString<'static>, BitString<'static>) {
    let a = bit_arg(call, 0);
    let b = bit_arg(call, 1);
    if a.len != b.len {
        pgrx::ereport!(
            ERROR,
            ERRCODE_DATA_EXCEPTION,
            format!("different bit lengths {} and {}", a.len, b.len)
        );
    }
    // Equal bit lengths mean equal byte counts; only a corrupt value could differ, and then
    // neither side is read past its end.
    let bytes = a.bytes.len().min(b.bytes.len());
    (
        BitString {
            len: a.len,
            bytes: &a.bytes[..bytes],
        },
        BitString {
            len: b.len,
            bytes: &b.bytes[..bytes],
        },
    )
}

crate::sql_function! {
    /// `hamming_distance(bit, bit)`: the number of differing bits.
    ///
    /// # Safety
    /// Called only by the function manager, with two `bit` arguments.
    fn hamming_distance(call) {
        let (a, b) = same_length_args(&call);
        fmgr::float8_datum(vector_distance::bits::hamming_distance(a.bytes, b.bytes, a.len as usize))
    }
}

crate::sql_function! {
    /// `jaccard_distance(bit, bit)`: one minus the share of set bits the two have in common.
    ///
    /// # Safety
    /// Called only by the function manager, with two `bit` arguments.
    fn jaccard_distance(call) {
        let (a, b) = same_length_args(&call);
        fmgr::float8_datum(vector_distance::bits::jaccard_distance(a.bytes, b.bytes, a.len as usize))
    }
}
