//! Text input and output (`{1:1.5,3:2}/5`: 1-based indices in text, 0-based in storage) and
//! the type modifier. `vector_formats::text` parses the input.

use super::TYPE_NAME;
use crate::fmgr;
use crate::types::checks::OrRaise;
use crate::types::layout::{SparsevecMut, SPARSEVEC_MAX_DIM};
use crate::types::typmod::dims_typmod_in;
use vector_formats::text::parse_sparsevec;

crate::sql_function! {
    fn sparsevec_in(call) {
        let parsed = parse_sparsevec(call.cstr(0), call.i32(2)).or_raise();
        SparsevecMut::from_parts(parsed.dim, &parsed.indices, &parsed.values).into_datum()
    }
}

crate::sql_function! {
    fn sparsevec_out(call) {
        let svec = call.sparsevec(0);
        let mut out = String::with_capacity(16 + svec.nnz() * 24);
        out.push('{');
        for (k, (&index, &value)) in svec.indices.iter().zip(svec.values).enumerate() {
            if k > 0 {
                out.push(',');
            }
            // Text uses 1-based indices.
            out.push_str(&(index as i64 + 1).to_string());
            out.push(':');
            fmgr::push_float4_shortest(&mut out, value);
        }
        out.push_str("}/");
        out.push_str(&svec.dim.to_string());
        fmgr::cstring_datum(&out)
    }
}

crate::sql_function! {
    fn sparsevec_typmod_in(call) {
        dims_typmod_in(&call, TYPE_NAME, SPARSEVEC_MAX_DIM)
    }
}
