//! How both access methods show what a scan did: a list of named counters ([`Field`]), printed
//! by `EXPLAIN (ANALYZE, HNSW | IVFFLAT)` ([`crate::am::explain`]) and returned by the
//! methods' `*_last_scan_stats()` functions as one row, a column per field in order (bigint,
//! or float8 for a mean).

use pgrx::pg_sys;
use std::ffi::CStr;

/// A counter's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stat {
    Count(u64),
    /// Printed with one decimal.
    Mean(f64),
}

/// One counter: its key in EXPLAIN's text line, its label in the structured formats.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Field {
    pub key: &'static str,
    pub label: &'static CStr,
    pub value: Stat,
}

/// A scan's counters as EXPLAIN shows them: `PREFIX: key=value ...` in text, a group in the
/// other formats.
pub trait ScanStats {
    /// The text line's prefix and the structured group's name.
    const GROUP: &'static CStr;
    fn fields(&self) -> Vec<Field>;
}

/// The EXPLAIN text line of `stats`.
pub fn text_line<S: ScanStats>(stats: &S) -> String {
    let values: Vec<String> = stats
        .fields()
        .iter()
        .map(|f| match f.value {
            Stat::Count(n) => format!("{}={n}", f.key),
            Stat::Mean(x) => format!("{}={x:.1}", f.key),
        })
        .collect();
    format!("{}: {}\n", S::GROUP.to_string_lossy(), values.join(" "))
}

/// The row of a `*_last_scan_stats()` function: the fields of `stats`, or NULLs if there was
/// no scan. As many columns as the SQL definition has: fields it lacks (an extension not yet
/// updated) are left out, and columns a scan has no field for (the rerank of an index that is not
/// quantized) are NULL.
///
/// # Safety
///
/// `fcinfo` is the live call of a function whose OUT columns are the types of the fields, in
/// order, for as many as it has.
pub unsafe fn stats_row<S: ScanStats>(
    fcinfo: pg_sys::FunctionCallInfo,
    stats: Option<&S>,
) -> pg_sys::Datum {
    let fields = stats.map(ScanStats::fields);
    // SAFETY: per the contract; get_call_result_type resolves the OUT parameters into a tuple
    // descriptor, which BlessTupleDesc registers so the datum can be returned.
    unsafe {
        let mut desc: pg_sys::TupleDesc = std::ptr::null_mut();
        let kind = pg_sys::get_call_result_type(fcinfo, std::ptr::null_mut(), &mut desc);
        if kind != pg_sys::TypeFuncClass::TYPEFUNC_COMPOSITE {
            pgrx::error!("a last_scan_stats function must return a record");
        }
        let desc = pg_sys::BlessTupleDesc(desc);
        let columns = usize::try_from((*desc).natts).unwrap_or(0);
        let mut datums = vec![pg_sys::Datum::from(0usize); columns];
        let mut nulls = vec![true; columns];
        for (i, field) in fields.iter().flatten().enumerate().take(columns) {
            datums[i] = match field.value {
                Stat::Count(n) => pg_sys::Datum::from(n as i64),
                Stat::Mean(x) => crate::fmgr::float8_datum(x),
            };
            nulls[i] = false;
        }
        let tuple = pg_sys::heap_form_tuple(desc, datums.as_mut_ptr(), nulls.as_mut_ptr());
        pg_sys::HeapTupleHeaderGetDatum((*tuple).t_data)
    }
}
