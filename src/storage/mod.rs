//! Postgres storage for the index: the one module that calls the buffer manager, page, lock
//! and WAL functions. Everything else reaches pages through the guards defined here.
//!
//! # Guard rules
//!
//! * A [`PageReadGuard`] holds one pinned and locked buffer (share, exclusive or cleanup lock)
//!   and unlocks and unpins it when dropped. Its bytes are read through [`PageRef`].
//! * A [`PageWriteGuard`] changes up to [`MAX_WRITE_PAGES`] exclusively locked pages as one
//!   unit. With [`WriteMode::Wal`] it is one generic WAL record: pages are edited in private
//!   copies, [`PageWriteGuard::commit`] writes the record and installs the copies, and dropping
//!   the guard without committing (an early return, a panic, or a Postgres `ERROR` unwinding
//!   through Rust) discards every change. With [`WriteMode::Build`] pages are edited in place
//!   with no WAL (index build only; log the whole fork afterwards with
//!   [`Relation::log_newpage_range`]) and nothing can be undone.
//! * A guard never outlives the Postgres call that created its [`Relation`], and guards are
//!   dropped before control returns to Postgres. Do not reset the memory context that was
//!   current when a write guard started while it lives.
//! * Never lock the same block twice in one backend (buffer locks are not re-entrant and it
//!   deadlocks): register an already locked page into a write guard instead, and use
//!   [`PageWriteGuard::register_block`], which returns the existing slot for a block that is
//!   already registered.
//! * Lock pages in an order that cannot deadlock with other backends (pgvector's: an element
//!   page before the following neighbor page), and do not wait for anything else, nor check
//!   for interrupts, while holding a buffer lock.
//!
//! The byte layout of pages is in [`page`] (no Postgres calls); what the index stores in them
//! is in `crate::stores::hnsw::format`.

mod buffer;
pub mod chain_walk;
pub mod io;
pub mod lwlock;
pub use vector_formats::page;
pub mod page_lock;
pub mod pinned;
pub mod prefetch;
pub mod relation;
pub mod strategy;
pub mod temp_file;
pub mod tid;
pub mod toast;
pub mod vacuum;

pub use buffer::{
    ExtendedPages, HeldPages, Image, PageMut, PageReadGuard, PageWriteGuard, ReadMode, WriteMode,
    MAX_WRITE_PAGES,
};
pub use chain_walk::ChainWalk;
pub use page::{BlockNumber, ItemPointer, OffsetNumber, PageRef};
pub use page_lock::{in_recovery, PageLock, PageLockMode};
pub use prefetch::Prefetch;
pub use relation::{Fork, Relation};
pub use strategy::AccessStrategy;
pub use tid::{item_pointer_data, item_pointer_from};
pub use vacuum::{vacuum_delay_point, DeadTids};

use pgrx::pg_sys;

const _: () = assert!(pg_sys::BLCKSZ as usize == page::BLCKSZ);

#[cfg(any(test, feature = "pg_test"))]
#[pgrx::pg_schema]
mod tests {
    use super::page::{BLCKSZ, FIRST_OFFSET_NUMBER};
    use super::*;
    use pgrx::prelude::*;

    /// Opens table `name` for the length of `f`.
    fn with_table<R>(name: &str, f: impl FnOnce(Relation) -> R) -> R {
        let oid = Spi::get_one::<pg_sys::Oid>(&format!("select '{name}'::regclass::oid"))
            .unwrap()
            .unwrap();
        // SAFETY: the table exists; it stays open (and locked) until relation_close below.
        let raw = unsafe { pg_sys::relation_open(oid, pg_sys::AccessExclusiveLock as i32) };
        // SAFETY: raw is open until relation_close, after f returns.
        let rel = unsafe { Relation::from_raw(raw, Fork::Main) };
        let result = f(rel);
        // SAFETY: opened above, closed once.
        unsafe { pg_sys::relation_close(raw, pg_sys::AccessExclusiveLock as i32) };
        result
    }

    /// A new block, initialized with an 8-byte special space, committed through WAL.
    fn add_page(rel: Relation) -> BlockNumber {
        let mut w = rel.begin_write(WriteMode::Wal);
        let slot = w.add_new_page(8);
        w.page_mut(slot)
            .special_mut()
            .copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let block = w.block(slot);
        w.commit();
        block
    }

    #[pg_test]
    fn write_commit_and_read_back() {
        Spi::run("create table st1(i int)").unwrap();
        with_table("st1", |rel| {
            assert_eq!(rel.nblocks(), 0);
            assert!(rel.needs_wal());
            let block = add_page(rel);
            assert_eq!(block, 0);
            assert_eq!(rel.nblocks(), 1);

            let mut w = rel.write_page(block, WriteMode::Wal);
            let mut p = w.page_mut(0);
            assert_eq!(p.add_item(&[7u8; 24]), Some(FIRST_OFFSET_NUMBER));
            assert_eq!(p.add_item(&[8u8; 16]), Some(2));
            assert!(p.overwrite_item(1, &[9u8; 24]));
            assert!(!p.overwrite_item(5, &[9u8; 24]));
            p.item_mut(2).unwrap()[0] = 42;
            w.commit();

            let r = rel.read_page(block, ReadMode::Shared);
            let page = r.page();
            assert_eq!(page.max_offset(), 2);
            assert_eq!(page.item(1), Some(&[9u8; 24][..]));
            assert_eq!(page.item(2).unwrap()[0], 42);
            assert_eq!(page.special(), &[1, 2, 3, 4, 5, 6, 7, 8]);
            assert_eq!(page.free_space(), BLCKSZ - 24 - 8 - 8 - 24 - 16 - 4);
            assert_ne!(page.header().lsn, 0, "the change was WAL-logged");
            drop(r);
            assert_eq!(rel.prefetch_block(block), Prefetch::Cached);
        });
    }

    #[pg_test]
    #[cfg(feature = "pg18")]
    fn range_hints_look_blocks_up_in_shared_buffers() {
        Spi::run("create table st_lookup(i int)").unwrap();
        with_table("st_lookup", |rel| {
            let blocks: Vec<BlockNumber> = (0..3).map(|_| add_page(rel)).collect();
            for &block in &blocks {
                assert!(
                    rel.in_shared_buffers(block),
                    "block {block} was just written"
                );
            }
            assert!(!rel.in_shared_buffers(3), "past the end: never read");
            let (mut evicted, mut flushed, mut skipped) = (0, 0, 0);
            // SAFETY: the relation is open and none of its buffers is pinned here.
            unsafe {
                pg_sys::EvictRelUnpinnedBuffers(rel.raw, &mut evicted, &mut flushed, &mut skipped)
            };
            assert_eq!((evicted, skipped), (3, 0));
            for &block in &blocks {
                assert!(!rel.in_shared_buffers(block), "block {block} was evicted");
            }
            drop(rel.read_page(blocks[1], ReadMode::Shared));
            let found: Vec<bool> = blocks.iter().map(|&b| rel.in_shared_buffers(b)).collect();
            assert_eq!(found, [false, true, false]);
            // Blocks 0 and 2 are hinted (two runs), block 1 is skipped.
            assert!(rel.prefetch_range(0, 3));
            assert_eq!(rel.prefetch_block(blocks[1]), Prefetch::Cached);
        });
    }

    #[pg_test]
    fn dropped_write_guard_discards_changes() {
        Spi::run("create table st2(i int)").unwrap();
        with_table("st2", |rel| {
            let block = add_page(rel);
            let before = rel
                .read_page(block, ReadMode::Shared)
                .page()
                .bytes()
                .to_vec();
            {
                let mut w = rel.write_page(block, WriteMode::Wal);
                w.page_mut(0).add_item(&[1u8; 100]).unwrap();
                w.page_mut(0).special_mut().fill(0);
            }
            // A Rust panic and a Postgres ERROR unwinding through the guard.
            PgTryBuilder::new(|| {
                let mut w = rel.write_page(block, WriteMode::Wal);
                w.page_mut(0).add_item(&[2u8; 100]).unwrap();
                panic!("boom");
            })
            .catch_others(|_| ())
            .execute();
            PgTryBuilder::new(|| {
                let mut w = rel.write_page(block, WriteMode::Wal);
                w.page_mut(0).add_item(&[3u8; 100]).unwrap();
                // SAFETY: a valid C string; Postgres raises an ERROR for it, which pgrx turns
                // into a panic that unwinds through the guard.
                unsafe { pg_sys::pg_strtoint32(c"not a number".as_ptr()) };
            })
            .catch_others(|_| ())
            .execute();
            // Each guard released its lock (or this would wait forever) and changed nothing.
            let w = rel.write_page(block, WriteMode::Wal);
            assert_eq!(w.page(0).bytes(), &before[..]);
            w.abort();
        });
    }

    #[pg_test]
    fn multi_page_record_and_kept_buffers() {
        Spi::run("create table st3(i int)").unwrap();
        with_table("st3", |rel| {
            let a = add_page(rel);
            let b = add_page(rel);
            let mut w = rel.write_page(a, WriteMode::Wal);
            let sb = w.register_block(b);
            assert_eq!(w.register_block(a), 0, "same block, same slot");
            let sc = w.add_new_page(8);
            assert_eq!(w.len(), 3);
            let c = w.block(sc);
            assert_eq!(c, 2);
            w.page_mut(0).add_item(&[1u8; 8]).unwrap();
            w.page_mut(sb).add_item(&[2u8; 8]).unwrap();
            w.page_mut(sc).add_item(&[3u8; 8]).unwrap();
            let mut held = w.commit();
            // Keep page a locked for a second record; b and c are released with `held`.
            let kept = held.take(0).unwrap();
            drop(held);
            let mut w = rel.begin_write(WriteMode::Wal);
            let s = w.register(kept, Image::Delta);
            w.page_mut(s).add_item(&[4u8; 8]).unwrap();
            w.commit();

            for (block, items) in [(a, vec![1u8, 4]), (b, vec![2]), (c, vec![3])] {
                let r = rel.read_page(block, ReadMode::Shared);
                let got: Vec<u8> = r.page().items().map(|(_, bytes)| bytes[0]).collect();
                assert_eq!(got, items);
            }
        });
    }

    #[pg_test]
    fn build_mode_and_log_newpage_range() {
        Spi::run("create table st4(i int)").unwrap();
        with_table("st4", |rel| {
            let mut w = rel.begin_write(WriteMode::Build);
            let s = w.add_new_page(8);
            w.page_mut(s).add_item(&[5u8; 40]).unwrap();
            w.commit();
            let new = rel.new_page();
            assert_eq!(new.block(), 1);
            assert!(new.page().is_new());
            let mut w = rel.begin_write(WriteMode::Build);
            let s = w.register(new, Image::Full);
            w.page_mut(s).init(8);
            w.commit();
            assert_eq!(
                rel.read_page(0, ReadMode::Shared).page().header().lsn,
                0,
                "build mode writes no WAL"
            );
            rel.log_newpage_range();
            let r = rel.read_page(0, ReadMode::Shared);
            assert_ne!(r.page().header().lsn, 0);
            assert_eq!(r.page().item(1), Some(&[5u8; 40][..]));
            drop(r);
            let r = rel.read_page(1, ReadMode::Cleanup);
            assert_eq!(r.page().max_offset(), 0);
        });
    }

    /// Rebuilds the pages of an index built by pgvector through the guards (so with
    /// Postgres's `PageInit` and `PageAddItem`, and in WAL mode) and compares the bytes.
    #[pg_test]
    fn guards_reproduce_pgvector_pages() {
        let pages = page::fixture_pages(include_str!(
            "../../tests/fixtures/pgvector-hnsw/t1_idx.pages"
        ));
        Spi::run("create table st6(i int)").unwrap();
        with_table("st6", |rel| {
            for (blkno, original) in pages.iter().enumerate() {
                let original = PageRef::new(original);
                let mut w = rel.begin_write(WriteMode::Wal);
                let slot = w.add_new_page(original.special().len());
                assert_eq!(w.block(slot) as usize, blkno);
                let mut p = w.page_mut(slot);
                p.special_mut().copy_from_slice(original.special());
                if blkno == 0 {
                    let contents = original.contents();
                    let lower = original.header().lower;
                    p.contents_mut().copy_from_slice(contents);
                    p.set_lower(lower);
                } else {
                    for (offset, item) in original.items() {
                        assert_eq!(p.add_item(item), Some(offset));
                    }
                }
                w.commit();
                let r = rel.read_page(blkno as BlockNumber, ReadMode::Shared);
                // Everything but the LSN and checksum, which the server sets.
                assert_eq!(
                    r.page().bytes()[10..],
                    original.bytes()[10..],
                    "block {blkno}"
                );
            }
            // Overwriting an item with itself changes nothing.
            let mut w = rel.write_page(1, WriteMode::Wal);
            let item = w.page(0).item(1).unwrap().to_vec();
            assert!(w.page_mut(0).overwrite_item(1, &item));
            w.commit();
            let r = rel.read_page(1, ReadMode::Shared);
            assert_eq!(r.page().bytes()[10..], pages[1][10..]);
        });
    }

    #[pg_test]
    fn block_ranges_stream_in_order() {
        Spi::run("create table st6(i int)").unwrap();
        with_table("st6", |rel| {
            for _ in 0..40 {
                add_page(rel);
            }
            let mut blocks = io::RelationBlocks::new(rel, false);
            for strategy in [vector_io::Strategy::BulkRead, vector_io::Strategy::Normal] {
                let read: Vec<BlockNumber> = vector_io::read_range(&mut blocks, 3..37, strategy)
                    .map(|page| {
                        let block = page.block();
                        let guard = page.lock(ReadMode::Shared);
                        assert_eq!(guard.page().special(), &[1, 2, 3, 4, 5, 6, 7, 8]);
                        block
                    })
                    .collect();
                assert_eq!(read, (3..37).collect::<Vec<_>>());
                // Left early and empty: the stream releases what it holds.
                let mut range = vector_io::read_range(&mut blocks, 0..40, strategy);
                assert_eq!(range.next().map(|p| p.block()), Some(0));
                drop(range);
                assert_eq!(
                    vector_io::read_range(&mut blocks, 5..5, strategy).count(),
                    0
                );
            }
            // Every pin was released: the table can be dropped... after the relation is closed;
            // a page can be locked exclusively now.
            let w = rel.write_page(36, WriteMode::Wal);
            w.abort();
        });
    }

    #[pg_test]
    fn page_locks_and_strategy() {
        Spi::run("create table st5(i int)").unwrap();
        with_table("st5", |rel| {
            add_page(rel);
            let shared = rel.lock_page(0, PageLockMode::Share);
            let again = rel.try_lock_page(0, PageLockMode::Share);
            assert!(again.is_some());
            drop((shared, again));
            let exclusive = rel.lock_page(1, PageLockMode::Exclusive);
            assert_eq!(exclusive.block(), 1);
            drop(exclusive);
            let strategy = AccessStrategy::bulk_read();
            let r = rel.read_page_with(0, ReadMode::Shared, &strategy);
            assert_eq!(r.page().special(), &[1, 2, 3, 4, 5, 6, 7, 8]);
        });
    }
}
