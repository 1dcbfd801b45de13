//! Owned copies of the values an index compares: a query, a new element's value, a value read
//! from a page.

use pgrx::pg_sys;

use crate::opclass::codes::CodeSpace;
use crate::out_of_memory;

/// An owned copy of a value (a varlena with a 4-byte header), 8-byte aligned; or SQL NULL, as
/// a scan's query can be (then every distance is 0, as in pgvector).
///
/// In a quantized index ([`crate::opclass::codes`]) a value is also one of two more things: a new
/// element's value with the code record the index stores for it
/// ([`Value::with_record_and_query`]), or a stored code record used as a query
/// ([`Value::stored_record`]). A query's estimates need it rotated and quantized once: that is
/// kept with the value on first use (a new element's comes with its record).
#[derive(Clone, Debug, Default)]
pub struct Value {
    words: Vec<u64>,
    /// Length in bytes; 0 for NULL.
    len: usize,
    /// The code record a quantized index stores for this value (a new element's).
    record: Option<Vec<u8>>,
    /// The bytes are a quantized index's code record, not a value of the column's type.
    is_record: bool,
    /// The query prepared for a quantized index's estimates, made on first use.
    prepared: std::cell::OnceCell<Box<vector_rabitq::QueryCode>>,
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
            && self.record == other.record
            && self.is_record == other.is_record
    }
}

impl Value {
    /// The NULL value.
    pub fn null() -> Self {
        Value::default()
    }

    /// Copies a varlena (header included).
    pub fn from_bytes(bytes: &[u8]) -> Self {
        // Samples and candidate lists hold many of these: fail as an ERROR, not an abort.
        let mut words = Vec::new();
        out_of_memory::reserve(&mut words, bytes.len().div_ceil(8), "a vector value");
        words.resize(bytes.len().div_ceil(8), 0u64);
        // SAFETY: `words` has at least bytes.len() bytes of storage; u8 has no alignment needs.
        let dst =
            unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), bytes.len()) };
        dst.copy_from_slice(bytes);
        Value {
            words,
            len: bytes.len(),
            ..Value::default()
        }
    }

    /// This value with the code record a quantized index stores for it, and the value prepared
    /// as that index's query (both from [`CodeSpace::record`]).
    pub fn with_record_and_query(
        mut self,
        record: Vec<u8>,
        query: vector_rabitq::QueryCode,
    ) -> Self {
        self.record = Some(record);
        self.prepared = std::cell::OnceCell::from(Box::new(query));
        self
    }

    /// This value with its code record cut to `len` bytes (a build's record without its finer
    /// codes) and no prepared query.
    pub fn with_record_truncated(mut self, len: usize) -> Self {
        if let Some(record) = self.record.as_mut() {
            record.truncate(len);
        }
        self.prepared = std::cell::OnceCell::new();
        self
    }

    /// A quantized index's stored code record, as a query.
    pub fn stored_record(record: &[u8]) -> Self {
        Value {
            is_record: true,
            ..Value::from_bytes(record)
        }
    }

    /// What an index stores for this value: its code record in a quantized index, else the
    /// value itself.
    pub fn stored_bytes(&self) -> Option<&[u8]> {
        match &self.record {
            Some(record) => Some(record),
            None => self.bytes(),
        }
    }

    /// Whether the bytes are a stored code record.
    pub fn is_record(&self) -> bool {
        self.is_record
    }

    /// Detoasts a varlena datum and copies it.
    ///
    /// # Safety
    ///
    /// `datum` is a non-NULL varlena datum that stays valid for the call.
    pub unsafe fn from_datum(datum: pg_sys::Datum) -> Self {
        // SAFETY: per the contract; pg_detoast_datum returns a plain 4-byte-header varlena
        // (the same pointer if it already was one, else a palloc'd copy freed below).
        unsafe {
            let raw = datum.cast_mut_ptr::<pg_sys::varlena>();
            let flat = pg_sys::pg_detoast_datum(raw);
            let len = pgrx::varsize_4b(flat);
            let value = Value::from_bytes(std::slice::from_raw_parts(flat.cast::<u8>(), len));
            if flat != raw {
                pg_sys::pfree(flat.cast());
            }
            value
        }
    }

    pub fn is_null(&self) -> bool {
        self.len == 0
    }

    /// The query prepared for `codes`, made on first use.
    pub(crate) fn prepared(&self, codes: &CodeSpace) -> &vector_rabitq::QueryCode {
        self.prepared.get_or_init(|| {
            Box::new(codes.prepare(self.bytes().expect("a prepared query is not NULL")))
        })
    }

    /// The varlena bytes, `None` for NULL.
    pub fn bytes(&self) -> Option<&[u8]> {
        if self.is_null() {
            return None;
        }
        // SAFETY: `words` holds at least `len` initialized bytes.
        Some(unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) })
    }

    /// A datum pointing at the bytes, valid while `self` is neither dropped nor changed.
    /// Callees must only read it.
    pub(crate) fn datum(&self) -> pg_sys::Datum {
        pg_sys::Datum::from(self.words.as_ptr())
    }
}
