//! How an hnsw index compares a query with what it stores, as a type chosen once, when a scan,
//! an insert, a vacuum or a build opens the index: [`Exact`] for pgvector's format (values of the
//! column's type, distances by the operator class's function) and [`Coded`] for a quantized
//! index (code records, distances estimated from the codes). The page and build graphs are
//! generic over it, so no distance asks which kind of index it is in.

use crate::opclass::codes::{CodeSpace, Prepared};
use crate::opclass::support::Support;
use crate::opclass::value::Value;
use std::cell::OnceCell;
use std::fmt::Debug;
use std::ops::Range;
use std::rc::Rc;
use vector_formats::hnsw_codes::CodeRecord;
use vector_formats::page::ItemPointer;

/// A distance from a query to a stored item: exact, or an estimate with how far below it the
/// exact distance can be.
#[derive(Clone, Copy, Debug)]
pub struct Estimate {
    pub distance: f64,
    /// 0 for an exact distance.
    pub error: f64,
    /// Where a quantized element's full vector is (invalid otherwise).
    pub vector: ItemPointer,
}

/// What an index compares, and how.
pub trait Compare: 'static {
    /// A value as the graph algorithms carry it: a search's query, a new element's value, or
    /// one read back from the index.
    type Value: Clone + Debug + Default + PartialEq;

    /// Whether distances are exact (pgvector's format), not estimates.
    const EXACT: bool;

    /// The operator class's support functions (exact distances, norms, normalization).
    fn support(&self) -> &Support;

    /// A value of the column's type (a scan's query, a row's value), as this index compares it.
    fn query(&self, value: Value) -> Self::Value;

    /// The value of the column's type behind `value` (for a record read back, its bytes).
    fn plain(value: &Self::Value) -> &Value;

    /// The same, taken.
    fn into_plain(value: Self::Value) -> Value;

    /// Whether `value` is SQL NULL (every distance to it is then 0).
    fn is_null(value: &Self::Value) -> bool;

    /// What the index stores for `value` (a new element's): `None` for NULL.
    fn stored(value: &Self::Value) -> Option<&[u8]>;

    /// A stored item, read back to be compared with others (neighbor selection).
    fn read_back(&self, stored: &[u8]) -> Self::Value;

    /// The distance from `query` to a stored item.
    fn estimate(&self, query: &Self::Value, stored: &[u8]) -> Estimate;

    /// `distance(query, stored)` of each of `stored` into `out` (as long).
    fn distances(&self, query: &Self::Value, stored: &[&[u8]], out: &mut [f64]);

    /// The distance between two stored items (`a` plays the query).
    fn pair_distance(&self, a: &[u8], b: &[u8]) -> f64;

    /// How many pairs [`Self::pair_distances`] computes for about the price of one.
    fn pair_batch(&self) -> usize;

    /// [`Self::pair_distance`] of each pair into `out`.
    fn pair_distances(&self, pairs: &[(&[u8], &[u8])], out: &mut [f64]);

    /// Whether `stored` stands for `value` (a new element's): rows with equal values share
    /// an element.
    fn same_value(&self, value: &Self::Value, stored: &[u8]) -> bool;

    /// The bytes of a stored item of `len` bytes that its distances read.
    fn compared_range(&self, len: usize) -> Range<usize>;
}

/// pgvector's format: the index stores values of the column's type and compares them with the
/// operator class's distance.
#[derive(Clone, Debug)]
pub struct Exact(pub Support);

impl Compare for Exact {
    type Value = Value;
    const EXACT: bool = true;

    fn support(&self) -> &Support {
        &self.0
    }

    fn query(&self, value: Value) -> Value {
        value
    }

    fn plain(value: &Value) -> &Value {
        value
    }

    fn into_plain(value: Value) -> Value {
        value
    }

    fn is_null(value: &Value) -> bool {
        value.is_null()
    }

    fn stored(value: &Value) -> Option<&[u8]> {
        value.bytes()
    }

    fn read_back(&self, stored: &[u8]) -> Value {
        Value::from_bytes(stored)
    }

    #[inline]
    fn estimate(&self, query: &Value, stored: &[u8]) -> Estimate {
        Estimate {
            distance: self.0.prepare(query).distance(stored),
            error: 0.0,
            vector: ItemPointer::INVALID,
        }
    }

    fn distances(&self, query: &Value, stored: &[&[u8]], out: &mut [f64]) {
        self.0.prepare(query).distances(stored, out);
    }

    #[inline]
    fn pair_distance(&self, a: &[u8], b: &[u8]) -> f64 {
        self.0.pair_distance(a, b)
    }

    fn pair_batch(&self) -> usize {
        self.0.pair_batch()
    }

    fn pair_distances(&self, pairs: &[(&[u8], &[u8])], out: &mut [f64]) {
        self.0.pair_distances(pairs, out);
    }

    fn same_value(&self, value: &Value, stored: &[u8]) -> bool {
        value.bytes() == Some(stored)
    }

    fn compared_range(&self, len: usize) -> Range<usize> {
        0..len
    }
}

/// A quantized index: it stores code records (`vector_formats::hnsw_codes::CodeRecord`) and
/// estimates distances from the codes; the operator class's own distance serves the rerank.
#[derive(Clone, Debug)]
pub struct Coded {
    exact: Support,
    codes: Rc<CodeSpace>,
}

impl Coded {
    pub fn new(exact: Support, codes: Rc<CodeSpace>) -> Self {
        Coded { exact, codes }
    }

    pub fn codes(&self) -> &CodeSpace {
        &self.codes
    }

    /// A new element's value with the record the index stores for it (`vector` names where its
    /// full vector is, or in a build its row) and the value prepared as a query, both made at
    /// once ([`CodeSpace::record`]).
    pub fn new_element(&self, value: Value, vector: ItemPointer) -> CodedValue {
        let bytes = value.bytes().expect("indexed values are not NULL");
        let (record, query) = self.codes.record(bytes, vector);
        CodedValue::New {
            value,
            record,
            prepared: OnceCell::from(Box::new(query)),
        }
    }
}

/// A value of a quantized index.
#[derive(Clone, Debug)]
pub enum CodedValue {
    /// A value of the column's type as a query (a scan's), prepared on first use.
    Query {
        value: Value,
        prepared: OnceCell<Box<Prepared>>,
    },
    /// A new element's value and the record the index stores for it; prepared as a query on
    /// first use, unless it came prepared.
    New {
        value: Value,
        record: Vec<u8>,
        prepared: OnceCell<Box<Prepared>>,
    },
    /// A record read back from the index, as a query (neighbor selection).
    Record(Value),
}

impl Default for CodedValue {
    fn default() -> Self {
        CodedValue::Query {
            value: Value::null(),
            prepared: OnceCell::new(),
        }
    }
}

impl PartialEq for CodedValue {
    fn eq(&self, other: &Self) -> bool {
        Coded::stored(self) == Coded::stored(other)
    }
}

impl CodedValue {
    /// The query prepared for `codes`, made on first use (`None` for a record or NULL).
    fn prepared(&self, codes: &CodeSpace) -> Option<&Prepared> {
        let (value, prepared) = match self {
            CodedValue::Query { value, prepared }
            | CodedValue::New {
                value, prepared, ..
            } => (value, prepared),
            CodedValue::Record(_) => return None,
        };
        let bytes = value.bytes()?;
        Some(prepared.get_or_init(|| Box::new(codes.prepare(bytes))))
    }
}

impl Compare for Coded {
    type Value = CodedValue;
    const EXACT: bool = false;

    fn support(&self) -> &Support {
        &self.exact
    }

    fn query(&self, value: Value) -> CodedValue {
        CodedValue::Query {
            value,
            prepared: OnceCell::new(),
        }
    }

    fn plain(value: &CodedValue) -> &Value {
        match value {
            CodedValue::Query { value, .. }
            | CodedValue::New { value, .. }
            | CodedValue::Record(value) => value,
        }
    }

    fn into_plain(value: CodedValue) -> Value {
        match value {
            CodedValue::Query { value, .. }
            | CodedValue::New { value, .. }
            | CodedValue::Record(value) => value,
        }
    }

    fn is_null(value: &CodedValue) -> bool {
        Coded::plain(value).is_null()
    }

    fn stored(value: &CodedValue) -> Option<&[u8]> {
        match value {
            CodedValue::New { record, .. } => Some(record),
            CodedValue::Query { value, .. } | CodedValue::Record(value) => value.bytes(),
        }
    }

    fn read_back(&self, stored: &[u8]) -> CodedValue {
        CodedValue::Record(Value::from_bytes(stored))
    }

    #[inline]
    fn estimate(&self, query: &CodedValue, stored: &[u8]) -> Estimate {
        if let Some(prepared) = query.prepared(&self.codes) {
            let (distance, error, vector) = self.codes.estimate_with_vector(prepared, stored);
            return Estimate {
                distance,
                error,
                vector,
            };
        }
        let vector = self.codes.record_vector(stored);
        let distance = match query {
            CodedValue::Record(record) => match record.bytes() {
                Some(record) => self.codes.pair_distance(record, stored),
                None => 0.0,
            },
            _ => 0.0,
        };
        Estimate {
            distance,
            error: 0.0,
            vector,
        }
    }

    /// Distances only (a build's, or neighbor selection's): no error bound, no vector's place.
    fn distances(&self, query: &CodedValue, stored: &[&[u8]], out: &mut [f64]) {
        if let Some(prepared) = query.prepared(&self.codes) {
            for (o, s) in out.iter_mut().zip(stored) {
                *o = self.codes.distance(prepared, s);
            }
            return;
        }
        let record = match query {
            CodedValue::Record(record) => record.bytes(),
            _ => None,
        };
        for (o, s) in out.iter_mut().zip(stored) {
            *o = record.map_or(0.0, |r| self.codes.pair_distance(r, s));
        }
    }

    #[inline]
    fn pair_distance(&self, a: &[u8], b: &[u8]) -> f64 {
        self.codes.pair_distance(a, b)
    }

    fn pair_batch(&self) -> usize {
        1
    }

    fn pair_distances(&self, pairs: &[(&[u8], &[u8])], out: &mut [f64]) {
        for (o, (a, b)) in out.iter_mut().zip(pairs) {
            *o = self.codes.pair_distance(a, b);
        }
    }

    fn same_value(&self, value: &CodedValue, stored: &[u8]) -> bool {
        let Some(mine) = Coded::stored(value) else {
            return false;
        };
        match (CodeRecord::parse(mine), CodeRecord::parse(stored)) {
            (Ok(a), Ok(b)) => a.same_vector(&b),
            _ => false,
        }
    }

    fn compared_range(&self, len: usize) -> Range<usize> {
        self.codes.compared_range(len)
    }
}
