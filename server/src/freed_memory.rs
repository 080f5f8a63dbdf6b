//! Handing memory freed by large work back to the system.
//!
//! glibc keeps freed blocks in the arena of the thread that freed them (malloc/malloc.c); the
//! server answers each request, each large message and each run on a thread of its own, so the
//! memory of a big parse, message or run otherwise stays with the process after the work is done
//! (issue 22: 13 requests on a 2 MB script left 2.5 GB behind).

/// Work this long was on a large file: its memory is handed back when it ends.
pub const HEAVY_WORK: std::time::Duration = std::time::Duration::from_millis(50);

/// Has every thread of the process allocate from one arena (glibc's `M_ARENA_MAX`), for the
/// language server and the debug adapter (called before the process starts a thread). Their
/// requests and analyses run on threads of their own, and memory a large parse freed in one
/// thread's arena was not reused by the next parse on another thread: the peak was the sum of
/// the arenas (273 MiB on a 430 KiB script of 95,000 tokens, 166 MiB in one arena; see
/// docs/BENCHMARKS.md). `check`, which allocates on every core at once, keeps glibc's default.
pub fn one_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter (glibc, malloc/malloc.c).
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// Returns free memory of every arena to the system.
pub fn release() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists (glibc, malloc/malloc.c).
    unsafe {
        libc::malloc_trim(0);
    }
}
