//! Binary I/O: int32 dim, int32 nnz, int32 unused, int32 indices[nnz] (0-based), float4
//! values[nnz], all in network byte order (`vector_formats::binary` reads and writes it).

use crate::types::binary_io::{bytea_datum, receive};
use crate::types::layout::SparsevecMut;
use vector_formats::binary;

crate::sql_function! {
    fn sparsevec_recv(call) {
        let received = receive(&call, binary::recv_sparsevec);
        SparsevecMut::from_parts(received.dim, &received.indices, &received.values).into_datum()
    }
}

crate::sql_function! {
    fn sparsevec_send(call) {
        bytea_datum(&binary::send_sparsevec(call.sparsevec(0)))
    }
}
