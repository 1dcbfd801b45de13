//! What a parallel quantized build shares besides its graph: the file set with each
//! participant's rows, the sums the leader fixes the quantizer from, the quantizer itself, and
//! which row is inserted next.

use crate::am::hnsw::build::quantized::Scanned;
use crate::storage::page::maxalign;
use crate::storage::temp_file::{SharedFiles, TempFile};
use pgrx::pg_sys;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use vector_formats::hnsw_codes::QuantizerMeta;
use vector_rabitq::fit::MAX_BUILD_REGIONS;

/// Rows a participant takes from the files at a time.
pub const ROW_BATCH: u64 = 64;
/// `QuantizedChunk::state`: 0 (zeroed) until the leader has set up the file set, then
/// `FILES` while the participants read their shares of the table, then `READY` once the
/// quantizer is published.
pub const FILES: u32 = 1;
pub const READY: u32 = 2;

/// Sleeps a millisecond at a time, checking for interrupts, until `done`.
pub fn sleep_until(done: impl Fn() -> bool) {
    while !done() {
        pgrx::check_for_interrupts!();
        // SAFETY: sleeps this process for a millisecond.
        unsafe { pg_sys::pg_usleep(1000) };
    }
}

/// The name of participant `slot`'s file of rows in the build's shared file set.
pub fn rows_file(slot: u32) -> std::ffi::CString {
    std::ffi::CString::new(format!("hnsw rows {slot}")).expect("no NUL in the name")
}

/// What a quantized build shares besides the graph: the file set of its rows, which row is
/// next, and the quantizer. The struct is followed by the quantizer, encoded as the metapage
/// holds it ([`QuantizerMeta::encode`]), then one `RowSlot` per participant (the leader's 0,
/// worker k's k + 1), then each participant's per-dimension sum of its rows (`dims` doubles
/// each), then room for the region centroids ([`MAX_BUILD_REGIONS`] rows of `dims` floats).
#[repr(C)]
pub struct QuantizedChunk {
    files: pg_sys::SharedFileSet,
    state: AtomicU32,
    /// Participants done with their share of the table.
    scanned: AtomicU32,
    next_row: AtomicU64,
    slots: u32,
    dims: u32,
}

/// One participant's share of pass 1: its file's rows and bytes, and whether it wrote one.
#[repr(C)]
struct RowSlot {
    rows: u64,
    bytes: u64,
    written: AtomicU32,
}

impl QuantizedChunk {
    fn quantizer_offset() -> usize {
        maxalign(size_of::<QuantizedChunk>())
    }

    fn slots_offset(dims: usize) -> usize {
        maxalign(Self::quantizer_offset() + QuantizerMeta::contents_len(dims))
    }

    fn sums_offset(dims: usize, slots: usize) -> usize {
        maxalign(Self::slots_offset(dims) + slots * size_of::<RowSlot>())
    }

    fn centroids_offset(dims: usize, slots: usize) -> usize {
        maxalign(Self::sums_offset(dims, slots) + slots * dims * 8)
    }

    pub fn size(dims: usize, slots: usize) -> usize {
        Self::centroids_offset(dims, slots) + MAX_BUILD_REGIONS * dims * 4
    }

    fn centroids_ptr(&self) -> *mut f32 {
        let offset = Self::centroids_offset(self.dims as usize, self.slots as usize);
        // SAFETY: the centroids' room ends the chunk (`size`).
        unsafe { self.base().add(offset).cast::<f32>() }
    }

    /// Writes an empty chunk for `dims` dimensions and `slots` participants at `at`.
    ///
    /// # Safety
    ///
    /// `at` has [`QuantizedChunk::size`] bytes, maxaligned, that nothing else uses yet.
    pub unsafe fn init_at(at: *mut u8, dims: u32, slots: u32) {
        // SAFETY: per the contract; all-zero bytes are a valid chunk (atomics at 0, no file
        // set yet), and the slots are zeroed with it.
        unsafe {
            std::ptr::write_bytes(at, 0, Self::size(dims as usize, slots as usize));
            let chunk = &mut *at.cast::<QuantizedChunk>();
            chunk.dims = dims;
            chunk.slots = slots;
        }
    }

    fn base(&self) -> *mut u8 {
        (self as *const QuantizedChunk).cast::<u8>().cast_mut()
    }

    /// The bytes of the encoded quantizer.
    fn quantizer_bytes(&self) -> *mut u8 {
        // SAFETY: the chunk was sized for the struct and the encoded quantizer after it (`size`).
        unsafe { self.base().add(Self::quantizer_offset()) }
    }

    fn slot(&self, k: u32) -> &RowSlot {
        assert!(k < self.slots, "participant {k} of {}", self.slots);
        // SAFETY: `slots` slots follow the centroid (`size`), zeroed by init_at.
        unsafe {
            &*self
                .base()
                .add(Self::slots_offset(self.dims as usize))
                .cast::<RowSlot>()
                .add(k as usize)
        }
    }

    fn sum_ptr(&self, k: u32) -> *mut f64 {
        assert!(k < self.slots, "participant {k} of {}", self.slots);
        let dims = self.dims as usize;
        // SAFETY: `slots` sums of `dims` doubles follow the slots (`size`).
        unsafe {
            self.base()
                .add(Self::sums_offset(dims, self.slots as usize))
                .cast::<f64>()
                .add(k as usize * dims)
        }
    }

    /// Participant `k` has read its share of the table into `scanned`'s file (exported).
    pub fn share_scanned(&self, k: u32, scanned: &Scanned) {
        let slot = self.slot(k);
        let me = (slot as *const RowSlot).cast_mut();
        // SAFETY: slot k and its sum are written only by participant k, before `written` is
        // stored; the leader reads them after loading it (release/acquire).
        unsafe {
            (*me).rows = scanned.rows.count();
            (*me).bytes = scanned.rows.bytes();
            std::ptr::copy_nonoverlapping(scanned.sum.as_ptr(), self.sum_ptr(k), scanned.sum.len());
        }
        slot.written.store(1, Ordering::Release);
        self.scanned.fetch_add(1, Ordering::AcqRel);
    }

    /// Waits (checking for interrupts) until `participants` shares are scanned; then the rows'
    /// count and per-dimension sum over every share.
    pub fn wait_scanned(&self, participants: u32) -> (u64, Vec<f64>) {
        sleep_until(|| self.scanned.load(Ordering::Acquire) >= participants);
        let mut count = 0;
        let mut sum = vec![0f64; self.dims as usize];
        for k in 0..self.slots {
            if self.slot(k).written.load(Ordering::Acquire) == 0 {
                continue;
            }
            count += self.slot(k).rows;
            // SAFETY: the slot was written (acquired above) and its sum has `dims` doubles.
            let part = unsafe { std::slice::from_raw_parts(self.sum_ptr(k), sum.len()) };
            for (s, p) in sum.iter_mut().zip(part) {
                *s += p;
            }
        }
        (count, sum)
    }

    /// Every share's file, in slot order, with its row count.
    pub fn open_rows(&self, files: &SharedFiles) -> Vec<(TempFile, u64)> {
        (0..self.slots)
            .filter(|&k| self.slot(k).written.load(Ordering::Acquire) != 0)
            .map(|k| {
                let slot = self.slot(k);
                let file = TempFile::open_shared(files, &rows_file(k), slot.bytes);
                (file, slot.rows)
            })
            .collect()
    }

    /// The quantizer is fixed: the participants may start inserting.
    pub fn publish(&self, quantizer: &QuantizerMeta) {
        let len = QuantizerMeta::contents_len(self.dims as usize);
        // SAFETY: only the leader writes these bytes, before READY is stored; workers read them
        // after loading READY (release/acquire). They fit (`size`).
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.quantizer_bytes(), len) };
        quantizer.encode(bytes);
        let centroids = quantizer.region_centroids();
        assert!(
            centroids.len() <= MAX_BUILD_REGIONS * self.dims as usize,
            "more regions than a build makes"
        );
        // SAFETY: as above, written before READY; the room holds MAX_BUILD_REGIONS rows.
        unsafe {
            std::ptr::copy_nonoverlapping(
                centroids.as_ptr(),
                self.centroids_ptr(),
                centroids.len(),
            );
        }
        self.state.store(READY, Ordering::Release);
    }

    /// Waits (checking for interrupts) until the state is at least `state`.
    pub fn wait_for(&self, state: u32) {
        sleep_until(|| self.state.load(Ordering::Acquire) >= state);
    }

    /// The file set is ready: workers may attach to it.
    pub fn files_ready(&self) {
        self.state.store(FILES, Ordering::Release);
    }

    /// The first of the next `batch` rows to insert.
    pub fn take_rows(&self, batch: u64) -> u64 {
        self.next_row.fetch_add(batch, Ordering::AcqRel)
    }

    /// The quantizer the leader published.
    pub fn quantizer(&self) -> QuantizerMeta {
        let len = QuantizerMeta::contents_len(self.dims as usize);
        // SAFETY: read after wait_for(READY), when the leader has written them (`publish`).
        let bytes = unsafe { std::slice::from_raw_parts(self.quantizer_bytes(), len) };
        let mut meta =
            QuantizerMeta::decode(bytes).unwrap_or_else(|e| pgrx::error!("hnsw build: {e}"));
        if let Some(regions) = meta.regions.as_mut() {
            let values = regions.count as usize * self.dims as usize;
            assert!(
                values <= MAX_BUILD_REGIONS * self.dims as usize,
                "too many regions"
            );
            // SAFETY: as above; `publish` wrote this many values into the room.
            let centroids = unsafe { std::slice::from_raw_parts(self.centroids_ptr(), values) };
            regions.centroids = centroids.to_vec();
        }
        meta
    }

    pub fn files_ptr(&self) -> *mut u8 {
        (&self.files as *const pg_sys::SharedFileSet)
            .cast::<u8>()
            .cast_mut()
    }
}
