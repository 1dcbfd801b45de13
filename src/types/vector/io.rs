//! Text and binary input/output of `vector`, and its type modifier.
//!
//! Text input accepts what pgvector accepts (`vector_formats::text` parses it); output prints
//! each element in the shortest form that reads back exactly, like `float4out`.

use super::TYPE_NAME;
use crate::fmgr;
use crate::types::binary_io::{bytea_datum, receive};
use crate::types::checks::OrRaise;
use crate::types::layout::{VectorMut, VECTOR_MAX_DIM};
use crate::types::typmod::dims_typmod_in;
use pgrx::pg_sys;
use vector_formats::{binary, text};

/// Builds a vector from validated elements.
fn vector_from(x: &[f32]) -> pg_sys::Datum {
    let mut result = VectorMut::new(x.len());
    result.x().copy_from_slice(x);
    result.into_datum()
}

crate::sql_function! {
    /// `vector_in(cstring, oid, integer)`: text to vector, checked against the typmod.
    fn vector_in(call) {
        vector_from(&text::parse_vector(call.cstr(0), call.i32(2)).or_raise())
    }
}

crate::sql_function! {
    /// `vector_out(vector)`: `[x1,x2,...]` with shortest round-trip floats.
    fn vector_out(call) {
        let v = call.vector(0);
        let mut out = String::with_capacity(v.dim() * 16 + 3);
        out.push('[');
        for (i, &value) in v.x.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            fmgr::push_float4_shortest(&mut out, value);
        }
        out.push(']');
        fmgr::cstring_datum(&out)
    }
}

crate::sql_function! {
    /// `vector_typmod_in(cstring[])`: the `n` of `vector(n)`.
    fn vector_typmod_in(call) {
        dims_typmod_in(&call, TYPE_NAME, VECTOR_MAX_DIM)
    }
}

crate::sql_function! {
    /// `vector_recv(internal, oid, integer)`: int16 dim, int16 unused (must be 0), then dim
    /// float4s, all in network byte order. Short messages raise the server's own error.
    fn vector_recv(call) {
        vector_from(&receive(&call, binary::recv_vector))
    }
}

crate::sql_function! {
    /// `vector_send(vector)`: the layout `vector_recv` reads, as bytea.
    fn vector_send(call) {
        bytea_datum(&binary::send_vector(call.vector(0)))
    }
}
