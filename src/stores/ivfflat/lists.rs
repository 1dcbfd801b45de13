//! The metapage and the list pages of an ivfflat index.
//!
//! Lists are found by walking the chain of list pages from block 1 and their items in offset
//! order, each page under a share lock released before the next is read, as pgvector does.
//! Only a list's two block numbers ever change after the build ([`update_list`]).

use crate::storage::{BlockNumber, ChainWalk, ItemPointer, ReadMode, Relation, WriteMode};
use crate::stores::ivfflat::format::{
    set_insert_page, set_start_page, ListTuple, MetaPage, HEAD_BLKNO, METAPAGE_BLKNO, PAGE_ID,
};
use vector_formats::page::{ChainOpaque, INVALID_BLOCK_NUMBER};

/// The relation, its pages checked to be ivfflat pages when read.
pub fn ivfflat_relation(rel: Relation) -> Relation {
    rel.with_page_id(PAGE_ID)
}

/// Reads the metapage (pgvector's `IvfflatGetMetaPageInfo`: only the magic number is checked).
pub fn read_meta(rel: Relation) -> MetaPage {
    let guard = ivfflat_relation(rel).read_page(METAPAGE_BLKNO, ReadMode::Shared);
    match MetaPage::decode(guard.page().contents()) {
        Some(meta) => meta,
        None => pgrx::error!("ivfflat index is not valid"),
    }
}

/// One list as read from its list page.
#[derive(Clone, Debug)]
pub struct List {
    /// Where its list tuple is.
    pub location: ItemPointer,
    pub start_page: BlockNumber,
    pub insert_page: BlockNumber,
}

/// Calls `visit(list, center)` for every list, in on-disk order, while its page is locked.
pub fn for_each_list(rel: Relation, mut visit: impl FnMut(List, &[u8])) {
    let rel = ivfflat_relation(rel);
    let mut walk = ChainWalk::new(rel);
    let mut next = walk.next(HEAD_BLKNO);
    while let Some(block) = next {
        let guard = rel.read_page(block, ReadMode::Shared);
        let page = guard.page();
        for (offset, item) in page.items() {
            let tuple = list_tuple(rel, block, offset, item);
            let list = List {
                location: ItemPointer::new(block, offset),
                start_page: tuple.start_page(),
                insert_page: tuple.insert_page(),
            };
            visit(list, tuple.center());
        }
        next = walk.next(ChainOpaque::next_of(page.special()));
    }
}

fn list_tuple(rel: Relation, block: BlockNumber, offset: u16, item: &[u8]) -> ListTuple<'_> {
    ListTuple::parse(item).unwrap_or_else(|_| {
        pgrx::ereport!(
            ERROR,
            pgrx::PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED,
            format!(
                "index \"{}\" has a malformed list tuple at ({block},{offset})",
                rel.name()
            )
        );
    })
}

/// Changes a list's block numbers (pgvector's `IvfflatUpdateList`): the insert page to
/// `insert_page` unless `original_insert_page` is valid and the new one is below it (vacuum
/// moved it back meanwhile), and the start page to `start_page`; invalid blocks change
/// nothing. Writes a record only if something changed.
pub fn update_list(
    rel: Relation,
    mode: WriteMode,
    location: ItemPointer,
    insert_page: BlockNumber,
    original_insert_page: BlockNumber,
    start_page: BlockNumber,
) {
    let rel = ivfflat_relation(rel);
    let mut guard = rel.write_page(location.block, mode);
    let changed = {
        let mut page = guard.page_mut(0);
        let Some(item) = page.item_mut(location.offset) else {
            pgrx::error!(
                "ivfflat list tuple ({},{}) not found",
                location.block,
                location.offset
            );
        };
        let tuple = list_tuple(rel, location.block, location.offset, item);
        let (old_insert, old_start) = (tuple.insert_page(), tuple.start_page());
        let mut changed = false;
        if insert_page != INVALID_BLOCK_NUMBER
            && insert_page != old_insert
            && !(original_insert_page != INVALID_BLOCK_NUMBER && insert_page < original_insert_page)
        {
            set_insert_page(item, insert_page);
            changed = true;
        }
        if start_page != INVALID_BLOCK_NUMBER && start_page != old_start {
            set_start_page(item, start_page);
            changed = true;
        }
        changed
    };
    if changed {
        guard.commit();
    }
}
