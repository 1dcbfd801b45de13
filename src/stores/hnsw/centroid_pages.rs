//! The region centroids of a quantized index (format 2): a chain of centroid pages after the
//! vector pages, written once by the build and read whole by every scan, insert and vacuum
//! that estimates distances. Each page holds one item, the next piece of the centroids' byte
//! stream ([`vector_formats::hnsw_codes::encode_centroids`]).
//!
//! The read is cached per backend: the centroids of an index never change after its build,
//! and a `REINDEX` gives it a new relfilenode and a new rotation seed, the cache's key.

use crate::opclass::codes::regions_of;
use crate::storage::{BlockNumber, ChainWalk, ReadMode, Relation, WriteMode};
use crate::stores::hnsw::format::{new_opaque, PageOpaque, OPAQUE_SIZE};
use std::cell::RefCell;
use std::rc::Rc;
use vector_formats::hnsw_codes::{
    centroid_bytes, decode_centroids, encode_centroids, is_centroid_page, QuantizerMeta,
    CENTROID_PAGE,
};
use vector_rabitq::Regions;

/// Bytes of centroid data on one page: one maxaligned item, with its line pointer, fits.
pub const CENTROID_ITEM_BYTES: usize = 8128;

/// Indexes whose regions a backend keeps.
const CACHED_INDEXES: usize = 8;

/// The special space of a new centroid page.
fn centroid_opaque() -> PageOpaque {
    PageOpaque {
        unused: CENTROID_PAGE,
        ..new_opaque()
    }
}

/// Pages the centroid chain of `count` centroids of `dims` values takes.
pub fn centroid_pages(count: usize, dims: usize) -> u32 {
    centroid_bytes(count, dims)
        .div_ceil(CENTROID_ITEM_BYTES)
        .max(1) as u32
}

/// Writes the centroid chain (`centroids`, row-major) during a build, from the next block of
/// the relation on, which must be `first`.
pub fn write_centroids(rel: Relation, first: BlockNumber, centroids: &[f32]) {
    let bytes = encode_centroids(centroids);
    let mut pieces: Vec<&[u8]> = bytes.chunks(CENTROID_ITEM_BYTES).collect();
    if pieces.is_empty() {
        pieces.push(&[]);
    }
    let last = pieces.len() - 1;
    for (k, piece) in pieces.into_iter().enumerate() {
        let mut guard = rel.begin_write(WriteMode::Build);
        let slot = guard.add_new_page(OPAQUE_SIZE);
        let block = guard.block(slot);
        assert_eq!(block, first + k as u32, "centroid pages are added in order");
        let mut page = guard.page_mut(slot);
        centroid_opaque().encode(page.special_mut());
        if k < last {
            PageOpaque::set_next_blkno(page.special_mut(), block + 1);
        }
        if page.add_item(piece) != Some(1) {
            pgrx::error!("failed to add index item to \"{}\"", rel.name());
        }
        guard.commit();
    }
}

/// Reads the centroids of a format-2 index into `meta` (nothing to read in format 1).
pub fn read_centroids(rel: Relation, meta: &mut QuantizerMeta) {
    let dims = meta.dims();
    let Some(regions) = meta.regions.as_mut() else {
        return;
    };
    let want = centroid_bytes(regions.count as usize, dims);
    let mut bytes = Vec::with_capacity(want);
    let mut walk = ChainWalk::new(rel);
    let mut next = walk.next(regions.first_page);
    while let Some(block) = next {
        let guard = rel.read_page(block, ReadMode::Shared);
        let page = guard.page();
        let opaque = PageOpaque::decode(page.special());
        if !opaque.is_some_and(|o| is_centroid_page(o.unused)) {
            corrupt(
                rel,
                format!("links to block {block}, not a centroid page, from its centroids"),
            );
        }
        let item = page.item(1).unwrap_or(&[]);
        if bytes.len() + item.len() > want {
            corrupt(
                rel,
                format!("has more centroid data than its {} regions", regions.count),
            );
        }
        bytes.extend_from_slice(item);
        next = if bytes.len() == want {
            None
        } else {
            walk.next(PageOpaque::next_of(page.special()))
        };
    }
    if bytes.len() != want {
        corrupt(
            rel,
            format!("has {} bytes of centroids, {want} expected", bytes.len()),
        );
    }
    let centroids = decode_centroids(&bytes);
    if centroids.iter().any(|v| !v.is_finite()) {
        corrupt(rel, "has a centroid with a non-finite element".into());
    }
    regions.centroids = centroids;
}

fn corrupt(rel: Relation, problem: String) -> ! {
    pgrx::ereport!(
        ERROR,
        pgrx::PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
        format!("index \"{}\" {problem}", rel.name())
    );
}

/// What identifies one build of one index in a backend.
#[derive(Clone, Copy, PartialEq, Eq)]
struct CacheKey {
    locator: (u32, u32, u32),
    seed: u64,
    first_page: BlockNumber,
    count: u32,
}

thread_local! {
    static CACHE: RefCell<Vec<(CacheKey, Rc<Regions>)>> = const { RefCell::new(Vec::new()) };
}

/// The regions of the quantized index `rel` whose metapage section is `meta`: its centroids
/// read from its pages (or this backend's copy) and rotated.
pub fn regions_for(rel: Relation, meta: &QuantizerMeta) -> Rc<Regions> {
    let Some(regions) = &meta.regions else {
        return Rc::new(regions_of(meta));
    };
    let key = CacheKey {
        locator: storage_of(rel),
        seed: meta.seed,
        first_page: regions.first_page,
        count: regions.count,
    };
    if let Some(hit) = CACHE.with_borrow(|c| c.iter().find(|(k, _)| *k == key).map(|e| e.1.clone()))
    {
        return hit;
    }
    let mut read = meta.clone();
    read_centroids(rel, &mut read);
    let regions = Rc::new(regions_of(&read));
    CACHE.with_borrow_mut(|c| {
        if c.len() == CACHED_INDEXES {
            c.remove(0);
        }
        c.push((key, regions.clone()));
    });
    regions
}

/// The relation's storage (tablespace, database, file number): a `REINDEX` changes it.
fn storage_of(rel: Relation) -> (u32, u32, u32) {
    // SAFETY: an open relation's relcache entry, read by value.
    #[cfg(not(feature = "pg15"))]
    let l = unsafe {
        let l = (*rel.raw()).rd_locator;
        (l.spcOid, l.dbOid, l.relNumber)
    };
    // SAFETY: as above.
    #[cfg(feature = "pg15")]
    let l = unsafe {
        let l = (*rel.raw()).rd_node;
        (l.spcNode, l.dbNode, l.relNode)
    };
    (u32::from(l.0), u32::from(l.1), u32::from(l.2))
}
