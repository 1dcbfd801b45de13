//! Postgres's tuplesort over small virtual tuples, as pgvector's ivfflat uses it: a scan sorts
//! `(distance float8, heap tid)` by distance within `work_mem`, a build sorts
//! `(list int4, heap tid, value)` by list within `maintenance_work_mem`. Using the server's own
//! sort keeps pgvector's order of equal keys (and spills to disk past the memory limit).
//!
//! A [`Tuplesort`] is Postgres memory (its own context, under the one current when it is
//! made) and possibly temporary files: make it in a context that outlives the value, end it by
//! dropping it, or [`Tuplesort::forget`] it after a transaction abort freed it already.

use crate::am::shared::parallel::Coordinate;
use pgrx::pg_sys;
use std::ffi::CStr;

/// `Float8LessOperator` (`float8lt`).
const FLOAT8_LESS: pg_sys::Oid = pg_sys::Oid::from_u32(672);
/// `Int4LessOperator` (`int4lt`).
const INT4_LESS: pg_sys::Oid = pg_sys::Oid::from_u32(97);

/// A sort of tuples whose first column is the key.
pub struct Tuplesort {
    state: *mut pg_sys::Tuplesortstate,
    put: *mut pg_sys::TupleTableSlot,
    get: *mut pg_sys::TupleTableSlot,
    columns: usize,
}

impl Tuplesort {
    /// `(distance float8, heaptid tid)` sorted by distance, within `work_mem`.
    pub fn by_distance() -> Self {
        // SAFETY: work_mem is a plain int GUC read by value.
        let memory = unsafe { pg_sys::work_mem };
        Self::new(
            &[
                (c"distance", pg_sys::FLOAT8OID),
                (c"heaptid", pg_sys::TIDOID),
            ],
            FLOAT8_LESS,
            memory,
            std::ptr::null_mut(),
        )
    }

    /// `(list int4, tid tid, vector <value_type>)` sorted by list, within `work_mem_kb`; in
    /// a parallel build, one participant's sort or the leader's merge (`coordinate`).
    pub fn by_list(
        value_type: pg_sys::Oid,
        work_mem_kb: i32,
        coordinate: Option<&mut Coordinate>,
    ) -> Self {
        Self::new(
            &[
                (c"list", pg_sys::INT4OID),
                (c"tid", pg_sys::TIDOID),
                (c"vector", value_type),
            ],
            INT4_LESS,
            work_mem_kb,
            coordinate.map_or(std::ptr::null_mut(), Coordinate::as_ptr),
        )
    }

    fn new(
        columns: &[(&'static CStr, pg_sys::Oid)],
        less: pg_sys::Oid,
        work_mem: i32,
        coordinate: pg_sys::SortCoordinate,
    ) -> Self {
        let mut key_column: pg_sys::AttrNumber = 1;
        let mut operator = less;
        let mut collation = pg_sys::InvalidOid;
        let mut nulls_first = false;
        // SAFETY: the descriptor gets one entry per column (numbered from 1); the slots and the
        // sort are created in the current memory context for this descriptor, and the sort
        // copies the key arrays it is given; the coordinate is null or outlives the sort.
        unsafe {
            let desc = pg_sys::CreateTemplateTupleDesc(columns.len() as i32);
            for (i, (name, typ)) in columns.iter().enumerate() {
                pg_sys::TupleDescInitEntry(desc, (i + 1) as i16, name.as_ptr(), *typ, -1, 0);
            }
            let state = pg_sys::tuplesort_begin_heap(
                desc,
                1,
                &mut key_column,
                &mut operator,
                &mut collation,
                &mut nulls_first,
                work_mem,
                coordinate,
                pg_sys::TUPLESORT_NONE as i32,
            );
            Tuplesort {
                state,
                put: pg_sys::MakeSingleTupleTableSlot(desc, &pg_sys::TTSOpsVirtual),
                get: pg_sys::MakeSingleTupleTableSlot(desc, &pg_sys::TTSOpsMinimalTuple),
                columns: columns.len(),
            }
        }
    }

    /// Adds a tuple of non-NULL `values` (copied by the sort).
    pub fn put(&mut self, values: &[pg_sys::Datum]) {
        assert_eq!(values.len(), self.columns, "one datum per column");
        // SAFETY: the virtual slot has `columns` value and null slots; its values point at
        // data valid during the call, which tuplesort_puttupleslot copies.
        unsafe {
            let slot = &mut *self.put;
            for (i, value) in values.iter().enumerate() {
                *slot.tts_values.add(i) = *value;
                *slot.tts_isnull.add(i) = false;
            }
            // What ExecStoreVirtualTuple does: every value is valid. Done here, as the slot is
            // our own virtual one and never owns memory, because each call through pgrx's
            // guard costs a sigsetjmp, once per entry of every probed list.
            slot.tts_flags &= !(pg_sys::TTS_FLAG_EMPTY as u16);
            slot.tts_nvalid = self.columns as pg_sys::AttrNumber;
            pg_sys::tuplesort_puttupleslot(self.state, self.put);
        }
    }

    /// Sorts what was put (call once before [`Tuplesort::next_tuple`]).
    pub fn perform(&mut self) {
        // SAFETY: a live sort in its loading phase.
        unsafe { pg_sys::tuplesort_performsort(self.state) }
    }

    /// The next tuple in key order, valid until the next call; `None` at the end.
    pub fn next_tuple(&mut self) -> Option<&[pg_sys::Datum]> {
        // SAFETY: a live, performed sort; the slot belongs to its descriptor. After a tuple
        // is stored, all its columns are deformed into the slot's arrays, which stay valid
        // until the slot is cleared by the next call.
        unsafe {
            if !pg_sys::tuplesort_gettupleslot(
                self.state,
                true,
                false,
                self.get,
                std::ptr::null_mut(),
            ) {
                return None;
            }
            pg_sys::slot_getsomeattrs_int(self.get, self.columns as i32);
            Some(std::slice::from_raw_parts(
                (*self.get).tts_values,
                self.columns,
            ))
        }
    }

    /// Empties the sort for a new batch (`tuplesort_reset`).
    pub fn reset(&mut self) {
        // SAFETY: a live sort.
        unsafe { pg_sys::tuplesort_reset(self.state) }
    }

    /// For a sort whose memory and files a transaction abort has freed already.
    pub fn forget(self) {
        std::mem::forget(self)
    }
}

impl Drop for Tuplesort {
    fn drop(&mut self) {
        if std::thread::panicking() {
            // Unwinding from an ERROR: the abort frees the sort's memory and files.
            return;
        }
        // SAFETY: the sort and slots are live and ended only here.
        unsafe {
            pg_sys::tuplesort_end(self.state);
            pg_sys::ExecDropSingleTupleTableSlot(self.put);
            pg_sys::ExecDropSingleTupleTableSlot(self.get);
        }
    }
}
