//! Cache-line prefetch of values about to be compared.
//!
//! A distance over a 768-dimensional value reads 3 kB; when such values stream from memory
//! rather than the CPU caches, each one's lines arrive one after the other unless they were
//! asked for in advance. Asking for a whole page's lines at once keeps many in flight.

/// Asks the CPU to bring every cache line of `bytes` into its caches. A hint only: it never
/// faults and changes no memory.
#[inline]
pub fn prefetch_lines(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    for line in bytes.chunks(64) {
        // SAFETY: a prefetch has no architectural effect; the address lies inside `bytes`.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                line.as_ptr().cast(),
            )
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetching_changes_nothing() {
        let bytes: Vec<u8> = (0..8192u32).map(|i| (i % 251) as u8).collect();
        let before = bytes.clone();
        prefetch_lines(&bytes);
        prefetch_lines(&bytes[..0]);
        prefetch_lines(&bytes[8191..]);
        assert_eq!(bytes, before);
    }
}
