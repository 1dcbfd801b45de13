//! The settings a walk's reads follow (`hnsw.io_method`, `hnsw.prefetch_lookahead`,
//! `hnsw.debug_heap_prefetch`), as a plain struct filled by the extension's options module.

/// How a walk reads the blocks of a hop (`hnsw.io_method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoMethod {
    /// One synchronous read after the other.
    Off,
    /// `PrefetchBuffer` hints ahead of the reads.
    Prefetch,
    /// A read stream per hop (PostgreSQL 17+; [`IoMethod::Prefetch`] before).
    ReadStream,
}

impl IoMethod {
    /// The method used where read streams exist or not.
    pub fn effective(self, read_streams: bool) -> Self {
        match self {
            IoMethod::ReadStream if !read_streams => IoMethod::Prefetch,
            other => other,
        }
    }

    /// The `hnsw.io_method` default: read streams where the server has them, unless its
    /// asynchronous I/O goes through worker processes (there every stream read is a round
    /// trip to one of `io_workers` processes, and `prefetch` measured faster at every
    /// `effective_io_concurrency`); `prefetch` otherwise.
    pub fn default_for(read_streams: bool, worker_io: bool) -> Self {
        if read_streams && !worker_io {
            IoMethod::ReadStream
        } else {
            IoMethod::Prefetch
        }
    }
}

/// `hnsw.prefetch_lookahead` default: look-ahead cost more reads than it saved time in every
/// measurement of the cold benchmark (eic 1..64, 100k x 768).
pub const DEFAULT_LOOKAHEAD: usize = 0;
/// `hnsw.prefetch_lookahead` upper bound.
pub const MAX_LOOKAHEAD: usize = 64;

/// The read settings in effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `hnsw.io_method`.
    pub method: IoMethod,
    /// `hnsw.prefetch_lookahead`: upcoming candidates whose neighbors are hinted early.
    pub lookahead: usize,
    /// `hnsw.debug_heap_prefetch`: cold scans may hint the table blocks of their next rows.
    pub heap_prefetch: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            method: IoMethod::Prefetch,
            lookahead: DEFAULT_LOOKAHEAD,
            heap_prefetch: true,
        }
    }
}

impl Settings {
    /// Whether a cold scan hints the table blocks of its next rows: not with `off`.
    pub fn heap_hints(&self) -> bool {
        self.heap_prefetch && self.method != IoMethod::Off
    }
}
