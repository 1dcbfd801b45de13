//! What the verifier functions of both access methods share, after amcheck's conventions:
//! opening the index and its table (table first, in the same lock mode), refusing what cannot
//! be checked, running as the table's owner, and the `heapallindexed` pass over the table.

use crate::am::shared::build::TableScan;
use crate::opclass::{Method, Support, Value, ValueKind};
use crate::out_of_memory;
use crate::storage::{in_recovery, Fork, ItemPointer, Relation};
use pgrx::{ereport, pg_sys, PgLogLevel, PgSqlErrorCode};
use vector_check::heap::{IndexedTids, Presence};
use vector_check::value::ValueType;
use vector_check::Corruption;

/// An index opened for checking, with its table; both closed (locks kept to the end of the
/// transaction, as amcheck does) and the user restored on drop.
pub struct CheckTarget {
    heap: pg_sys::Relation,
    index: pg_sys::Relation,
    saved_user: pg_sys::Oid,
    saved_context: i32,
    guc_level: i32,
}

/// The lock of a check: AccessShareLock, as `bt_index_check` takes (writers go on meanwhile),
/// or ShareLock for a `parent` check, as `bt_index_parent_check` takes (no writer meanwhile).
pub fn lockmode(parent: bool) -> pg_sys::LOCKMODE {
    (if parent {
        pg_sys::ShareLock
    } else {
        pg_sys::AccessShareLock
    }) as pg_sys::LOCKMODE
}

/// Opens `index_oid` for a check of `method`'s index under `lockmode`. `None` (after a NOTICE)
/// for an index that has nothing to check: unlogged, on a server in recovery.
pub fn open_target(
    index_oid: pg_sys::Oid,
    lockmode: pg_sys::LOCKMODE,
    method: Method,
    is_method: impl Fn(&pg_sys::IndexAmRoutine) -> bool,
) -> Option<CheckTarget> {
    // SAFETY: catalog lookups and relation opens by OID; each raises an ERROR for a relation
    // that is not there or not of the right kind. The table is locked before the index, as
    // every index operation does, so that the two locks cannot deadlock.
    let (heap, index) = unsafe {
        let heap_oid = pg_sys::IndexGetRelation(index_oid, true);
        let heap = if heap_oid == pg_sys::InvalidOid {
            std::ptr::null_mut()
        } else {
            pg_sys::table_open(heap_oid, lockmode)
        };
        let index = pg_sys::index_open(index_oid, lockmode);
        if heap.is_null() || pg_sys::IndexGetRelation(index_oid, false) != (*heap).rd_id {
            ereport!(
                ERROR,
                PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
                format!(
                    "could not open parent table of index \"{}\"",
                    rel_name(index)
                )
            );
        }
        (heap, index)
    };
    let name = rel_name(index);
    // SAFETY: index is open; rd_indam, rd_rel and rd_index are set for every open index.
    let (routine, rel_class, index_form) =
        unsafe { (&*(*index).rd_indam, &*(*index).rd_rel, &*(*index).rd_index) };
    if !is_method(routine) {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!(
                "only {} indexes are supported as targets for this verification",
                method.name()
            ),
            format!("Relation \"{name}\" is not an {} index.", method.name())
        );
    }
    // SAFETY: index is open; rd_islocaltemp is set with it.
    let other_temp = rel_class.relpersistence == pg_sys::RELPERSISTENCE_TEMP as std::ffi::c_char
        && unsafe { !(*index).rd_islocaltemp };
    if other_temp {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            "cannot access temporary tables of other sessions",
            format!("Index \"{name}\" is associated with temporary relation.")
        );
    }
    if !index_form.indisvalid {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            format!("cannot check index \"{name}\""),
            "Index is not valid."
        );
    }
    let in_recovery = in_recovery();
    let permanent =
        rel_class.relpersistence == pg_sys::RELPERSISTENCE_PERMANENT as std::ffi::c_char;
    if !permanent && in_recovery {
        ereport!(
            PgLogLevel::NOTICE,
            PgSqlErrorCode::ERRCODE_READ_ONLY_SQL_TRANSACTION,
            format!("cannot verify unlogged index \"{name}\" during recovery, skipping")
        );
        // SAFETY: both were opened above with lockmode; the locks are kept.
        unsafe {
            pg_sys::index_close(index, pg_sys::NoLock as pg_sys::LOCKMODE);
            pg_sys::table_close(heap, pg_sys::NoLock as pg_sys::LOCKMODE);
        }
        return None;
    }
    // Index expressions and predicates run as the table's owner, in a restricted operation, as
    // in amcheck: checking an index must not run another user's code with the caller's rights.
    let (mut saved_user, mut saved_context) = (pg_sys::InvalidOid, 0);
    // SAFETY: reads and sets this backend's current user; restored on drop (or by the
    // transaction abort that an ERROR causes).
    let guc_level = unsafe {
        pg_sys::GetUserIdAndSecContext(&mut saved_user, &mut saved_context);
        pg_sys::SetUserIdAndSecContext(
            (*(*heap).rd_rel).relowner,
            saved_context | pg_sys::SECURITY_RESTRICTED_OPERATION as i32,
        );
        pg_sys::NewGUCNestLevel()
    };
    Some(CheckTarget {
        heap,
        index,
        saved_user,
        saved_context,
        guc_level,
    })
}

fn rel_name(rel: pg_sys::Relation) -> String {
    // SAFETY: rel is open; relname is a NUL-terminated NameData.
    unsafe {
        std::ffi::CStr::from_ptr((*(*rel).rd_rel).relname.data.as_ptr())
            .to_string_lossy()
            .into_owned()
    }
}

impl CheckTarget {
    pub fn index(&self) -> Relation {
        // SAFETY: the index stays open and locked for this value's life.
        unsafe { Relation::from_raw(self.index, Fork::Main) }
    }

    pub fn index_name(&self) -> String {
        rel_name(self.index)
    }

    /// The indexed column's type.
    pub fn value_type(&self, support: &Support) -> ValueType {
        match support.type_info().kind {
            ValueKind::Vector => ValueType::Vector,
            ValueKind::Halfvec => ValueType::Halfvec,
            ValueKind::Bit => ValueType::Bit,
            ValueKind::Sparsevec => ValueType::Sparsevec,
        }
    }

    /// Raises the first corruption found, as `ERRCODE_INDEX_CORRUPTED`, or "out of memory" when
    /// the check stopped for want of memory.
    pub fn corrupted(&self, c: &Corruption) -> ! {
        if let Some(bytes) = c.out_of_memory {
            out_of_memory::raise(bytes, &format!("checking index \"{}\"", self.index_name()));
        }
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
            format!("index \"{}\" is corrupted at {c}", self.index_name())
        );
    }

    /// The MVCC snapshot of a `heapallindexed` check, taken before the index is read: every
    /// row it sees had its index entry written before the check began.
    pub fn snapshot(&self) -> Snapshot {
        // SAFETY: registers the transaction's current snapshot; unregistered on drop.
        Snapshot(unsafe { pg_sys::RegisterSnapshot(pg_sys::GetTransactionSnapshot()) })
    }

    /// `heapallindexed`: every row of the table that `snapshot` sees and the index would hold
    /// must be in `tids` with the value the index stores for it, which `form` makes from the
    /// row's indexed datum (`None`: not indexed).
    pub fn check_heap(
        &self,
        snapshot: &Snapshot,
        form: &dyn Fn(pg_sys::Datum) -> Option<Value>,
        tids: &IndexedTids,
    ) {
        let mut rows = 0u64;
        let mut row = |datum: pg_sys::Datum, tid: ItemPointer| {
            pgrx::check_for_interrupts!();
            let Some(value) = form(datum) else {
                return; // not indexed (a zero vector under cosine distance)
            };
            rows += 1;
            let what = match tids.presence(tid, value.bytes().expect("not NULL")) {
                Presence::Indexed => return,
                Presence::Missing => "lacks a matching index tuple",
                Presence::OtherValue => "has another value in the index",
            };
            self.heap_error(tid, what);
        };
        let mut scan = TableScan::new("vector index check tuple context", &mut row);
        // SAFETY: heap and index are open and locked; the scan is begun on the heap with a
        // registered snapshot (which outlives it) and ended by table_index_build_scan.
        unsafe {
            let info = pg_sys::BuildIndexInfo(self.index);
            // An MVCC scan: only the rows the snapshot sees.
            (*info).ii_Concurrent = true;
            let begin = (*(*self.heap).rd_tableam)
                .scan_begin
                .expect("a table access method can begin scans");
            let flags = pg_sys::ScanOptions::SO_TYPE_SEQSCAN
                | pg_sys::ScanOptions::SO_ALLOW_STRAT
                | pg_sys::ScanOptions::SO_ALLOW_SYNC
                | pg_sys::ScanOptions::SO_ALLOW_PAGEMODE;
            let table_scan = begin(
                self.heap,
                snapshot.0,
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                flags,
            );
            scan.run(self.heap, self.index, info, false, table_scan);
        }
        pgrx::debug1!(
            "index \"{}\": {} heap rows, all indexed",
            self.index_name(),
            rows
        );
    }
}

impl Drop for CheckTarget {
    fn drop(&mut self) {
        // SAFETY: restores what open_target changed and closes what it opened, keeping the
        // locks to the end of the transaction.
        unsafe {
            pg_sys::AtEOXact_GUC(false, self.guc_level);
            pg_sys::SetUserIdAndSecContext(self.saved_user, self.saved_context);
            pg_sys::index_close(self.index, pg_sys::NoLock as pg_sys::LOCKMODE);
            pg_sys::table_close(self.heap, pg_sys::NoLock as pg_sys::LOCKMODE);
        }
    }
}

/// A registered snapshot, unregistered on drop.
pub struct Snapshot(pg_sys::Snapshot);

impl Drop for Snapshot {
    fn drop(&mut self) {
        // SAFETY: registered by CheckTarget::snapshot and unregistered only here.
        unsafe { pg_sys::UnregisterSnapshot(self.0) }
    }
}

impl CheckTarget {
    fn heap_error(&self, tid: ItemPointer, what: &str) -> ! {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
            format!(
                "heap tuple ({},{}) from table \"{}\" {what} within index \"{}\"",
                tid.block,
                tid.offset,
                rel_name(self.heap),
                self.index_name()
            )
        );
    }
}

/// Reports what a check counted without calling it corruption.
pub fn notice(message: String) {
    ereport!(
        PgLogLevel::NOTICE,
        PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
        message
    );
}
