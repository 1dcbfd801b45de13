//! Owned copies of the values an index compares: a query, a new element's value, a value read
//! from a page.

use pgrx::pg_sys;

use crate::out_of_memory;

/// An owned copy of a value (a varlena with a 4-byte header), 8-byte aligned; or SQL NULL, as
/// a scan's query can be (then every distance is 0, as in pgvector). A quantized index's values
/// and records are [`crate::opclass::compare::CodedValue`]s around it.
#[derive(Clone, Debug, Default)]
pub struct Value {
    words: Vec<u64>,
    /// Length in bytes; 0 for NULL.
    len: usize,
}

impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
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
        }
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
