//! The receive and send functions' side of `vector_formats::binary`: handing it the unread
//! part of the message, and the bytea a send function returns.

use super::checks::raise;
use crate::fmgr::{self, FnCall};
use pgrx::pg_sys;
use vector_formats::binary::Received;
use vector_formats::error::ParseError;

/// Runs `recv` (one of `vector_formats::binary`'s receivers) on the unread part of the message
/// of a receive function (argument 0), with its type modifier (argument 2), and moves the
/// message's cursor past what it read. Its errors are raised as pgvector raises them; a
/// message too short is reported by the server's own reader, as pgvector's is.
pub fn receive<T>(
    call: &FnCall,
    recv: impl FnOnce(&[u8], i32) -> Result<Received<T>, ParseError>,
) -> T {
    let buf = call.internal::<pg_sys::StringInfoData>(0);
    let typmod = call.i32(2);
    // SAFETY: the first argument of a receive function is the message's StringInfo: `data`
    // holds `len` bytes and `cursor` <= `len`. The slice lives until the cursor moves below.
    let unread = unsafe {
        let (cursor, len) = ((*buf).cursor as usize, (*buf).len as usize);
        if cursor >= len {
            &[][..]
        } else {
            std::slice::from_raw_parts((*buf).data.cast::<u8>().add(cursor), len - cursor)
        }
    };
    match recv(unread, typmod) {
        Ok(Received { value, consumed }) => {
            // SAFETY: the receiver read `consumed` bytes of the unread part, so the cursor
            // stays within the message.
            unsafe { (*buf).cursor += consumed as i32 };
            value
        }
        Err(ParseError::MessageTooShort) => message_too_short(buf),
        Err(err) => raise(err),
    }
}

/// Has the server raise its "insufficient data left in message", by asking its reader for more
/// than is left.
fn message_too_short(buf: *mut pg_sys::StringInfoData) -> ! {
    // SAFETY: `buf` is the live StringInfo of the call; with the cursor at its end,
    // pq_getmsgint raises an ERROR instead of reading.
    unsafe {
        (*buf).cursor = (*buf).len;
        pg_sys::pq_getmsgint(buf, 4);
    }
    unreachable!("pq_getmsgint read past the end of the message")
}

/// A `bytea` holding `payload`: the result of a send function.
pub fn bytea_datum(payload: &[u8]) -> pg_sys::Datum {
    let bytea = fmgr::palloc_varlena(4 + payload.len());
    // SAFETY: the block has room for the payload after its 4-byte header.
    unsafe {
        std::ptr::copy_nonoverlapping(payload.as_ptr(), bytea.cast::<u8>().add(4), payload.len())
    };
    fmgr::pointer_datum(bytea)
}
