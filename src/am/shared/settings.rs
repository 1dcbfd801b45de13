//! The plumbing of both access methods' options and settings: statics Postgres reads and
//! writes through pointers (GUC variables, reloption kinds), tables of C strings, enum entries
//! and reloption parse entries.

use pgrx::pg_sys;
use std::cell::UnsafeCell;
use std::ffi::{c_int, CStr};

/// A value Postgres reads and writes through a pointer (a GUC variable, the reloption kind).
/// Backends are single-threaded, so sharing it between "threads" never happens.
#[repr(transparent)]
pub struct PgCell<T>(UnsafeCell<T>);

// SAFETY: a Postgres backend runs one thread; the cell is only touched from it.
unsafe impl<T> Sync for PgCell<T> {}

impl<T: Copy> PgCell<T> {
    pub const fn new(value: T) -> Self {
        PgCell(UnsafeCell::new(value))
    }

    pub fn get(&self) -> T {
        // SAFETY: single-threaded; Postgres writes the value only between our calls.
        unsafe { *self.0.get() }
    }

    pub fn set(&self, value: T) {
        // SAFETY: as for get.
        unsafe { *self.0.get() = value }
    }

    pub fn as_ptr(&self) -> *mut T {
        self.0.get()
    }
}

/// Wrapper making tables of C pointers (to static strings) usable as statics.
#[repr(transparent)]
pub struct StaticTable<T>(pub T);

// SAFETY: the tables only hold pointers to 'static, immutable C strings.
unsafe impl<T> Sync for StaticTable<T> {}

/// One value of an enum setting.
pub const fn enum_entry(name: &'static CStr, val: c_int) -> pg_sys::config_enum_entry {
    pg_sys::config_enum_entry {
        name: name.as_ptr(),
        val,
        hidden: false,
    }
}

/// The entry that ends an enum setting's table.
pub const ENUM_END: pg_sys::config_enum_entry = pg_sys::config_enum_entry {
    name: std::ptr::null(),
    val: 0,
    hidden: false,
};

/// An int reloption stored at `offset` of an options struct.
pub const fn int_option(name: &'static CStr, offset: usize) -> pg_sys::relopt_parse_elt {
    typed_option(name, pg_sys::relopt_type::RELOPT_TYPE_INT, offset)
}

/// An enum reloption stored (as its int value) at `offset` of an options struct.
pub const fn enum_option(name: &'static CStr, offset: usize) -> pg_sys::relopt_parse_elt {
    typed_option(name, pg_sys::relopt_type::RELOPT_TYPE_ENUM, offset)
}

#[cfg(feature = "pg18")]
const fn typed_option(
    name: &'static CStr,
    opttype: pg_sys::relopt_type::Type,
    offset: usize,
) -> pg_sys::relopt_parse_elt {
    pg_sys::relopt_parse_elt {
        optname: name.as_ptr(),
        opttype,
        offset: offset as c_int,
        // No "was it set" flag.
        isset_offset: 0,
    }
}

#[cfg(not(feature = "pg18"))]
const fn typed_option(
    name: &'static CStr,
    opttype: pg_sys::relopt_type::Type,
    offset: usize,
) -> pg_sys::relopt_parse_elt {
    pg_sys::relopt_parse_elt {
        optname: name.as_ptr(),
        opttype,
        offset: offset as c_int,
    }
}
