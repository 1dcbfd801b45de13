//! A temporary file (`BufFile`): where a quantized build keeps the full vectors while its graph
//! holds only codes. A private one ([`TempFile::create`]), or one in a parallel build's shared
//! file set ([`SharedFiles`]) that the leader writes and every participant then reads.
//!
//! Postgres deletes a private file at the end of the transaction, and a shared one when the last
//! process detaches from the build's segment, whatever happens; the guard closes it when
//! dropped, except while unwinding from an error, when that cleanup does.

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

    /// Creates `name` in `files` for writing (the leader of a parallel build).
    pub fn create_shared(files: &SharedFiles, name: &std::ffi::CStr) -> Self {
        // SAFETY: the file set was initialized or attached in this process and lives in the
        // segment for as long as the build; the name is NUL-terminated.
        let file = unsafe { pg_sys::BufFileCreateFileSet(&raw mut (*files.0).fs, name.as_ptr()) };
        TempFile {
            file,
            len: 0,
            at_end: true,
        }
    }

    /// Opens `name` of `files`, `len` bytes written and exported by another process, for
    /// reading.
    pub fn open_shared(files: &SharedFiles, name: &std::ffi::CStr, len: u64) -> Self {
        // SAFETY: as in create_shared; the file was exported, so it is complete and read-only.
        let file = unsafe {
            pg_sys::BufFileOpenFileSet(&raw mut (*files.0).fs, name.as_ptr(), libc::O_RDONLY, false)
        };
        TempFile {
            file,
            len,
            at_end: false,
        }
    }

    /// Ends writing a shared file: from now on other processes may open it (read-only).
    pub fn export(&mut self) {
        // SAFETY: the file is open and belongs to a file set.
        unsafe { pg_sys::BufFileExportFileSet(self.file) };
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

/// A parallel build's shared file set, in its segment.
pub struct SharedFiles(*mut pg_sys::SharedFileSet);

impl SharedFiles {
    /// Bytes the set takes in a segment.
    pub const SIZE: usize = std::mem::size_of::<pg_sys::SharedFileSet>();

    /// Initializes the set at `at` (the leader), cleaned up when the last process detaches from
    /// `segment`.
    ///
    /// # Safety
    ///
    /// `at` points to [`Self::SIZE`] bytes of `segment`, suitably aligned, not yet used.
    pub unsafe fn init(at: *mut u8, segment: *mut pg_sys::dsm_segment) -> Self {
        let set = at.cast::<pg_sys::SharedFileSet>();
        // SAFETY: per the contract.
        unsafe { pg_sys::SharedFileSetInit(set, segment) };
        SharedFiles(set)
    }

    /// Attaches a worker to the set the leader initialized at `at`.
    ///
    /// # Safety
    ///
    /// `at` is where the leader initialized the set, in `segment`, mapped in this process.
    pub unsafe fn attach(at: *mut u8, segment: *mut pg_sys::dsm_segment) -> Self {
        let set = at.cast::<pg_sys::SharedFileSet>();
        // SAFETY: per the contract.
        unsafe { pg_sys::SharedFileSetAttach(set, segment) };
        SharedFiles(set)
    }
}
