//! Handing memory freed by large work back to the system.
//!
//! glibc keeps freed blocks in the arena of the thread that freed them (malloc/malloc.c); the
//! server answers each request, each large message and each run on a thread of its own, so the
//! memory of a big parse, message or run otherwise stays with the process after the work is done
//! (issue 22: 13 requests on a 2 MB script left 2.5 GB behind).

/// Work this long was on a large file: its memory is handed back when it ends.
pub const HEAVY_WORK: std::time::Duration = std::time::Duration::from_millis(50);

/// Returns free memory of every arena to the system.
pub fn release() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists (glibc, malloc/malloc.c).
    unsafe {
        libc::malloc_trim(0);
    }
}
