//! How many pages a batch keeps pinned at once.

/// Most pages a batch read keeps pinned at once. A backend tracks its first 8 pins in an
/// array and any more in a hash table (bufmgr's `REFCOUNT_ARRAY_ENTRIES`): 6 leave room for
/// the executor's own pins (the table row's page, an outer scan's), so every pin and unpin
/// stays an array update. With 16, a warm walk made ~2,000 extra hash look-ups per query
/// (counted with uprobes), and 6 measured as fast as 16 when resident.
pub const MAX_PINS: usize = 6;

/// How many pages a batch read may keep pinned at once with `nbuffers` shared buffers
/// (`NBuffers`): [`MAX_PINS`], fewer with a small `shared_buffers` (down to one at a time with
/// a few hundred buffers), so that a batch never takes the buffers other backends need.
pub fn pin_limit(nbuffers: i64) -> usize {
    let buffers = usize::try_from(nbuffers).unwrap_or(0);
    (buffers / 256).clamp(1, MAX_PINS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pin_cap_follows_shared_buffers() {
        assert_eq!(pin_limit(-1), 1);
        assert_eq!(pin_limit(0), 1);
        assert_eq!(pin_limit(300), 1);
        assert_eq!(pin_limit(512), 2);
        assert_eq!(pin_limit(16_384), MAX_PINS);
        assert_eq!(pin_limit(1 << 30), MAX_PINS);
    }
}
