//! Buffer access strategies: a small ring of buffers for reads that sweep a whole index.

use pgrx::pg_sys;

/// A buffer access strategy (a small ring of buffers) for reads that sweep the whole index.
pub struct AccessStrategy {
    pub(crate) raw: pg_sys::BufferAccessStrategy,
}

impl AccessStrategy {
    /// `GetAccessStrategy(BAS_BULKREAD)`, as pgvector's vacuum uses.
    pub fn bulk_read() -> Self {
        let kind = pg_sys::BufferAccessStrategyType::BAS_BULKREAD;
        // SAFETY: allocates a strategy in the current memory context; it is freed on drop.
        let raw = unsafe { pg_sys::GetAccessStrategy(kind) };
        AccessStrategy { raw }
    }
}

impl AccessStrategy {
    /// For a strategy whose memory a transaction abort has freed already.
    pub fn forget(self) {
        std::mem::forget(self)
    }
}

impl Drop for AccessStrategy {
    fn drop(&mut self) {
        // SAFETY: raw came from GetAccessStrategy and is freed only here.
        unsafe { pg_sys::FreeAccessStrategy(self.raw) }
    }
}
