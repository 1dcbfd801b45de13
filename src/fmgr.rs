//! The V1 function-call convention, with link symbols equal to pgvector's.
//!
//! pgvector's install script names each C function's symbol (`AS 'MODULE_PATHNAME', 'vector_in'`).
//! A cluster created with pgvector keeps those names in `pg_proc.prosrc`, so every SQL-callable
//! function here is exported under exactly that symbol, with its `pg_finfo_` record beside it.

use pgrx::pg_sys;
use std::ffi::CStr;

/// Declares a SQL-callable V1 function exported under the symbol `$name`.
///
/// The body sees `$call: FnCall` and returns a `pg_sys::Datum`.
#[macro_export]
macro_rules! sql_function {
    ($(#[$attr:meta])* fn $name:ident($call:ident) $body:block) => {
        paste::paste! {
            #[unsafe(no_mangle)]
            #[doc(hidden)]
            pub extern "C" fn [<pg_finfo_ $name>]() -> &'static ::pgrx::pg_sys::Pg_finfo_record {
                const V1_API: ::pgrx::pg_sys::Pg_finfo_record =
                    ::pgrx::pg_sys::Pg_finfo_record { api_version: 1 };
                &V1_API
            }
        }
        $(#[$attr])*
        ///
        /// # Safety
        /// Called only by Postgres's function manager, with the call info of the SQL
        /// signature declared for this symbol in `sql/`.
        #[::pgrx::pg_guard]
        #[unsafe(no_mangle)]
        pub unsafe extern "C-unwind" fn $name(
            fcinfo: ::pgrx::pg_sys::FunctionCallInfo,
        ) -> ::pgrx::pg_sys::Datum {
            // SAFETY: Postgres calls a V1 function with a valid fcinfo whose arguments follow the
            // SQL signature declared for this symbol in sql/, which the body's reads follow too.
            let $call = unsafe { $crate::fmgr::FnCall::new(fcinfo) };
            $body
        }
    };
}

/// One call's arguments, read according to the function's SQL signature.
#[derive(Clone, Copy)]
pub struct FnCall {
    fcinfo: pg_sys::FunctionCallInfo,
}

impl FnCall {
    /// # Safety
    /// `fcinfo` must be the live call info of a V1 call, and every later read must match the
    /// SQL signature the function was declared with (argument count, types, strictness).
    pub unsafe fn new(fcinfo: pg_sys::FunctionCallInfo) -> Self {
        Self { fcinfo }
    }

    pub fn raw(&self) -> pg_sys::FunctionCallInfo {
        self.fcinfo
    }

    pub fn nargs(&self) -> usize {
        // SAFETY: fcinfo is live for the whole call (FnCall::new's contract).
        unsafe { (*self.fcinfo).nargs as usize }
    }

    pub fn is_null(&self, n: usize) -> bool {
        // SAFETY: fcinfo is live and `n` is within the declared arguments.
        unsafe { pgrx::fcinfo::pg_arg_is_null(self.fcinfo, n) }
    }

    pub fn datum(&self, n: usize) -> pg_sys::Datum {
        // SAFETY: fcinfo is live and `n` is within the declared arguments.
        unsafe { pgrx::fcinfo::pg_getarg_datum_raw(self.fcinfo, n) }
    }

    pub fn i32(&self, n: usize) -> i32 {
        self.datum(n).value() as i32
    }

    pub fn i16(&self, n: usize) -> i16 {
        self.datum(n).value() as i16
    }

    pub fn bool(&self, n: usize) -> bool {
        self.datum(n).value() != 0
    }

    pub fn f64(&self, n: usize) -> f64 {
        f64::from_bits(self.datum(n).value() as u64)
    }

    pub fn oid(&self, n: usize) -> pg_sys::Oid {
        pg_sys::Oid::from(self.datum(n).value() as u32)
    }

    /// A `cstring` argument.
    pub fn cstr(&self, n: usize) -> &CStr {
        // SAFETY: the declared argument type is cstring, a NUL-terminated string that lives
        // for the whole call.
        unsafe { CStr::from_ptr(self.datum(n).cast_mut_ptr::<std::ffi::c_char>()) }
    }

    /// A varlena argument, detoasted (decompressed and in-line, possibly a palloc'd copy).
    pub fn varlena(&self, n: usize) -> *mut pg_sys::varlena {
        // SAFETY: the declared argument type is a varlena type and the argument is not NULL.
        unsafe { pg_sys::pg_detoast_datum(self.datum(n).cast_mut_ptr()) }
    }

    /// An `internal` argument that points to `T` (for example a StringInfo in `recv`).
    pub fn internal<T>(&self, n: usize) -> *mut T {
        self.datum(n).cast_mut_ptr::<T>()
    }

    pub fn collation(&self) -> pg_sys::Oid {
        // SAFETY: fcinfo is live.
        unsafe { (*self.fcinfo).fncollation }
    }

    /// Returns SQL NULL.
    pub fn return_null(&self) -> pg_sys::Datum {
        // SAFETY: fcinfo is live and writable by the callee.
        unsafe { pgrx::fcinfo::pg_return_null(self.fcinfo) }
    }

    /// Is this an aggregate's transition or combine call? (`AggCheckCallContext`)
    pub fn in_aggregate(&self) -> bool {
        // SAFETY: fcinfo is live; a null out-pointer asks only whether the context is one.
        unsafe { pg_sys::AggCheckCallContext(self.fcinfo, std::ptr::null_mut()) != 0 }
    }
}

pub fn float8_datum(v: f64) -> pg_sys::Datum {
    pg_sys::Datum::from(v.to_bits())
}

pub fn float4_datum(v: f32) -> pg_sys::Datum {
    pg_sys::Datum::from(v.to_bits())
}

pub fn int32_datum(v: i32) -> pg_sys::Datum {
    pg_sys::Datum::from(v)
}

pub fn bool_datum(v: bool) -> pg_sys::Datum {
    pg_sys::Datum::from(v)
}

pub fn pointer_datum<T>(p: *mut T) -> pg_sys::Datum {
    pg_sys::Datum::from(p)
}

/// Allocates a zeroed varlena of `total` bytes (header included) in the current memory
/// context and sets its 4-byte header.
pub fn palloc_varlena(total: usize) -> *mut pg_sys::varlena {
    // SAFETY: palloc0 returns a zeroed, suitably aligned block of `total` bytes or raises an
    // ERROR; `total` includes the header that set_varsize_4b writes.
    unsafe {
        let ptr = pg_sys::palloc0(total).cast::<pg_sys::varlena>();
        pgrx::set_varsize_4b(ptr, total as i32);
        ptr
    }
}

/// Formats a float4 the way `float4out` does with shortest-exact output, through the server's
/// own routine, so text output matches pgvector byte for byte.
pub fn push_float4_shortest(out: &mut String, v: f32) {
    unsafe extern "C" {
        fn float_to_shortest_decimal_bufn(f: f32, result: *mut std::ffi::c_char) -> i32;
    }
    let mut buf = [0 as std::ffi::c_char; 32];
    // SAFETY: the routine writes at most 16 bytes (FLOAT_SHORTEST_DECIMAL_LEN) into `buf`
    // and returns how many it wrote; it is exported by every server version we support.
    let len = unsafe { float_to_shortest_decimal_bufn(v, buf.as_mut_ptr()) } as usize;
    let bytes = buf[..len].iter().map(|&c| c as u8);
    out.extend(bytes.map(char::from));
}

/// Returns a Rust string as a palloc'd cstring Datum (for `*_out` functions).
pub fn cstring_datum(s: &str) -> pg_sys::Datum {
    // SAFETY: palloc returns `len + 1` writable bytes or raises an ERROR; we copy the bytes and
    // terminate them with NUL.
    unsafe {
        let ptr = pg_sys::palloc(s.len() + 1).cast::<u8>();
        std::ptr::copy_nonoverlapping(s.as_ptr(), ptr, s.len());
        *ptr.add(s.len()) = 0;
        pg_sys::Datum::from(ptr)
    }
}
