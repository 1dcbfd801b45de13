//! A temporary file of fixed-size records (`BufFile`): where a quantized build keeps the full
//! vectors while its graph holds only codes.
//!
//! Postgres deletes the file at the end of the transaction whatever happens; the guard closes it
//! when dropped, except while unwinding from an error, when the transaction's cleanup does.

use pgrx::pg_sys;

/// Bytes per segment of a temporary `BufFile` (`MAX_PHYSICAL_FILESIZE`).
const SEGMENT: u64 = 1 << 30;

/// An open temporary file.
pub struct TempFile {
    file: *mut pg_sys::BufFile,
    /// Bytes written so far.
    len: u64,
    /// The file position is at the end (no read since the last write).
    at_end: bool,
}

impl TempFile {
    /// A new, empty temporary file, deleted at the end of the transaction.
    pub fn create() -> Self {
        // SAFETY: runs in a backend inside a transaction; the BufFile lives in the current
        // memory context and its file in the transaction's resource owner.
        let file = unsafe { pg_sys::BufFileCreateTemp(false) };
        TempFile {
            file,
            len: 0,
            at_end: true,
        }
    }

    /// Bytes written so far.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `bytes`.
    pub fn append(&mut self, bytes: &[u8]) {
        if !self.at_end {
            self.seek(self.len);
            self.at_end = true;
        }
        // SAFETY: the file is open; BufFileWrite copies `bytes` and raises an ERROR if it
        // cannot write them.
        unsafe {
            #[cfg(feature = "pg15")]
            pg_sys::BufFileWrite(self.file, bytes.as_ptr().cast_mut().cast(), bytes.len());
            #[cfg(not(feature = "pg15"))]
            pg_sys::BufFileWrite(self.file, bytes.as_ptr().cast(), bytes.len());
        }
        self.len += bytes.len() as u64;
    }

    /// Reads `out.len()` bytes from `offset`.
    pub fn read_at(&mut self, offset: u64, out: &mut [u8]) {
        self.seek(offset);
        self.at_end = false;
        self.read_next(out);
    }

    /// Reads the next `out.len()` bytes after the last read (or from the start).
    pub fn read_next(&mut self, out: &mut [u8]) {
        self.at_end = false;
        // SAFETY: the file is open and `out` has room for out.len() bytes.
        let got = unsafe { pg_sys::BufFileRead(self.file, out.as_mut_ptr().cast(), out.len()) };
        if got != out.len() {
            pgrx::error!(
                "could not read temporary file: read only {got} of {} bytes",
                out.len()
            );
        }
    }

    /// Moves to `offset` (bytes from the start) for reading.
    pub fn rewind_to(&mut self, offset: u64) {
        self.seek(offset);
        self.at_end = offset == self.len;
    }

    fn seek(&mut self, offset: u64) {
        let fileno = (offset / SEGMENT) as i32;
        let within = (offset % SEGMENT) as pg_sys::off_t;
        // SAFETY: the file is open; a position inside what was written is always valid.
        let rc = unsafe { pg_sys::BufFileSeek(self.file, fileno, within, libc::SEEK_SET) };
        if rc != 0 {
            pgrx::error!("could not seek in temporary file to {offset}");
        }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            // SAFETY: the file is open and closed once, here.
            unsafe { pg_sys::BufFileClose(self.file) };
        }
    }
}
