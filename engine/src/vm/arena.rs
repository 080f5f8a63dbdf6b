//! The allocator of a [`super::Sandbox`]: Lua's blocks come from an arena that is released
//! as a whole when the sandbox is dropped, so a state never needs `lua_close` (which would
//! free its objects one by one) and small allocations skip `malloc`.
//!
//! Small blocks (up to [`SMALL_MAX`] bytes) are carved from 64 KiB chunks in 16-byte size
//! classes, with a free list per class (Lua passes a block's size when freeing it, so no
//! header is needed). Larger blocks come from `malloc` with a header linking them into a
//! list, to be freed with the arena.
//!
//! Two limits apply: the memory cap on the bytes Lua holds (as mlua's allocator counts
//! them, so scripts hit the cap where they did before), and twice that on the memory the
//! arena takes from the system, so that blocks freed in one size class and never reused in
//! another cannot grow the process without bound.

use std::ffi::c_void;
use std::ptr::null_mut;

unsafe extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn realloc(block: *mut c_void, size: usize) -> *mut c_void;
    fn free(block: *mut c_void);
}

/// Size-class granularity; also the alignment of every block (Lua needs 8).
const GRAIN: usize = 16;
/// Largest block served from the chunks.
const SMALL_MAX: usize = 1024;
const CLASSES: usize = SMALL_MAX / GRAIN;
const CHUNK: usize = 64 * 1024;

/// Header of a large block: links of the list of live large blocks (16 bytes, so the
/// block after it stays 16-byte aligned).
#[repr(C)]
struct Large {
    prev: *mut Large,
    next: *mut Large,
}

const HEADER: usize = std::mem::size_of::<Large>();

pub(super) struct Arena {
    /// Bytes Lua holds, and the cap on them (0: none).
    used: usize,
    limit: usize,
    /// Bytes taken from the system (chunks and large blocks with headers).
    footprint: usize,
    /// Free blocks per size class, linked through their first word.
    free: [*mut u8; CLASSES],
    /// The unused tail of the current chunk.
    bump: *mut u8,
    bump_end: *mut u8,
    /// Every chunk, freed on drop.
    chunks: Vec<*mut c_void>,
    /// Live large blocks.
    large: *mut Large,
}

fn class_of(size: usize) -> usize {
    (size - 1) / GRAIN
}

impl Arena {
    pub(super) fn new(limit: usize) -> Self {
        Arena {
            used: 0,
            limit,
            footprint: 0,
            free: [null_mut(); CLASSES],
            bump: null_mut(),
            bump_end: null_mut(),
            chunks: Vec::new(),
            large: null_mut(),
        }
    }

    pub(super) fn limit(&self) -> usize {
        self.limit
    }

    /// Whether taking `more` bytes from the system stays within twice the cap.
    fn footprint_allows(&self, more: usize) -> bool {
        self.limit == 0 || self.footprint + more <= self.limit.saturating_mul(2)
    }

    /// A block of `size` (1..=SMALL_MAX) bytes from the free list or the chunk.
    #[inline(never)]
    unsafe fn alloc_small(&mut self, size: usize) -> *mut u8 {
        let class = class_of(size);
        let head = self.free[class];
        if !head.is_null() {
            // SAFETY: a free block's first word links to the next free block.
            self.free[class] = unsafe { *head.cast::<*mut u8>() };
            return head;
        }
        let rounded = (class + 1) * GRAIN;
        if (self.bump_end as usize) - (self.bump as usize) < rounded {
            if !self.footprint_allows(CHUNK) {
                return null_mut();
            }
            // SAFETY: plain malloc; the chunk is freed on drop.
            let chunk = unsafe { malloc(CHUNK) }.cast::<u8>();
            if chunk.is_null() {
                return null_mut();
            }
            self.chunks.push(chunk.cast());
            self.footprint += CHUNK;
            self.bump = chunk;
            // SAFETY: within the chunk.
            self.bump_end = unsafe { chunk.add(CHUNK) };
        }
        let block = self.bump;
        // SAFETY: `rounded` bytes remain in the chunk.
        self.bump = unsafe { block.add(rounded) };
        block
    }

    /// Puts a small block of `size` bytes back on its class's free list.
    unsafe fn free_small(&mut self, block: *mut u8, size: usize) {
        let class = class_of(size);
        // SAFETY: the block has at least GRAIN bytes and is no longer used by Lua.
        unsafe { *block.cast::<*mut u8>() = self.free[class] };
        self.free[class] = block;
    }

    unsafe fn alloc_large(&mut self, size: usize) -> *mut u8 {
        if !self.footprint_allows(size + HEADER) {
            return null_mut();
        }
        // SAFETY: plain malloc; linked below and freed on drop or by free_large.
        unsafe {
            let header = malloc(size + HEADER).cast::<Large>();
            if header.is_null() {
                return null_mut();
            }
            self.footprint += size + HEADER;
            self.link(header);
            header.cast::<u8>().add(HEADER)
        }
    }

    unsafe fn free_large(&mut self, block: *mut u8, size: usize) {
        // SAFETY: `block` came from alloc_large/realloc_large, right after its header.
        unsafe {
            let header = block.sub(HEADER).cast::<Large>();
            self.unlink(header);
            free(header.cast());
        }
        self.footprint -= size + HEADER;
    }

    unsafe fn realloc_large(&mut self, block: *mut u8, old: usize, new: usize) -> *mut u8 {
        if new > old && !self.footprint_allows(new - old) {
            return null_mut();
        }
        // SAFETY: as in free_large; the header is relinked at its new address.
        unsafe {
            let header = block.sub(HEADER).cast::<Large>();
            self.unlink(header);
            let moved = realloc(header.cast(), new + HEADER).cast::<Large>();
            if moved.is_null() {
                self.link(header);
                return null_mut();
            }
            self.footprint = self.footprint - old + new;
            self.link(moved);
            moved.cast::<u8>().add(HEADER)
        }
    }

    unsafe fn link(&mut self, header: *mut Large) {
        // SAFETY: `header` and the list's blocks are live large blocks.
        unsafe {
            (*header).prev = null_mut();
            (*header).next = self.large;
            if !self.large.is_null() {
                (*self.large).prev = header;
            }
        }
        self.large = header;
    }

    unsafe fn unlink(&mut self, header: *mut Large) {
        // SAFETY: as in link.
        unsafe {
            let (prev, next) = ((*header).prev, (*header).next);
            if prev.is_null() {
                self.large = next;
            } else {
                (*prev).next = next;
            }
            if !next.is_null() {
                (*next).prev = prev;
            }
        }
    }

    /// Whether Lua may hold `used` bytes.
    #[inline(always)]
    fn within_limit(&self, used: usize) -> bool {
        self.limit == 0 || used <= self.limit
    }

    /// Lua's allocation function contract (`lua_Alloc`): free when `new` is 0, else
    /// allocate or resize, returning null (and changing nothing) on failure.
    ///
    /// The two calls that make up nearly all of a short run's traffic, freeing a small
    /// block and allocating one from its class's free list or the current chunk, are
    /// handled first without the general resizing logic.
    #[inline(always)]
    unsafe fn reallocate(&mut self, block: *mut u8, old: usize, new: usize) -> *mut u8 {
        unsafe {
            if block.is_null() {
                if new.wrapping_sub(1) < SMALL_MAX {
                    let used = self.used + new;
                    if !self.within_limit(used) {
                        return null_mut();
                    }
                    let class = class_of(new);
                    let head = self.free[class];
                    let rounded = (class + 1) * GRAIN;
                    let moved = if !head.is_null() {
                        // SAFETY: a free block's first word links to the next free block.
                        self.free[class] = *head.cast::<*mut u8>();
                        head
                    } else if (self.bump_end as usize) - (self.bump as usize) >= rounded {
                        let block = self.bump;
                        // SAFETY: `rounded` bytes remain in the chunk.
                        self.bump = block.add(rounded);
                        block
                    } else {
                        self.alloc_small(new)
                    };
                    if !moved.is_null() {
                        self.used = used;
                    }
                    return moved;
                }
            } else if new == 0 {
                if old <= SMALL_MAX {
                    self.free_small(block, old);
                } else {
                    self.free_large(block, old);
                }
                self.used -= old;
                return null_mut();
            }
            self.resize(block, old, new)
        }
    }

    /// The rest of [`Self::reallocate`]: large blocks and resizing.
    #[inline(never)]
    unsafe fn resize(&mut self, block: *mut u8, old: usize, new: usize) -> *mut u8 {
        let old = if block.is_null() { 0 } else { old };
        unsafe {
            if new == 0 {
                return null_mut();
            }
            let used = self.used - old + new;
            if new > old && !self.within_limit(used) {
                return null_mut();
            }
            let moved = if block.is_null() {
                self.acquire(new)
            } else if old <= SMALL_MAX && new <= SMALL_MAX && class_of(old) == class_of(new) {
                block
            } else if old > SMALL_MAX && new > SMALL_MAX {
                self.realloc_large(block, old, new)
            } else {
                let moved = self.acquire(new);
                if !moved.is_null() {
                    std::ptr::copy_nonoverlapping(block, moved, old.min(new));
                    self.release(block, old);
                }
                moved
            };
            if !moved.is_null() {
                self.used = used;
                moved
            } else if new < old {
                // Lua assumes a shrink never fails: keep the block (it is large enough,
                // and whichever list it is freed to later, the arena releases it on drop).
                self.used = used;
                block
            } else {
                null_mut()
            }
        }
    }

    unsafe fn acquire(&mut self, size: usize) -> *mut u8 {
        unsafe {
            if size <= SMALL_MAX {
                self.alloc_small(size)
            } else {
                self.alloc_large(size)
            }
        }
    }

    unsafe fn release(&mut self, block: *mut u8, size: usize) {
        unsafe {
            if size <= SMALL_MAX {
                self.free_small(block, size);
            } else {
                self.free_large(block, size);
            }
        }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: every chunk and large block came from malloc and is freed once; no state
        // uses the arena any more (the sandbox drops it last).
        unsafe {
            for &chunk in &self.chunks {
                free(chunk);
            }
            let mut header = self.large;
            while !header.is_null() {
                let next = (*header).next;
                free(header.cast());
                header = next;
            }
        }
    }
}

/// The allocation function of a sandbox (`lua_Alloc`), with its [`Arena`] as user data.
pub(super) unsafe extern "C" fn arena_alloc(
    ud: *mut c_void,
    block: *mut c_void,
    old_size: usize,
    new_size: usize,
) -> *mut c_void {
    // SAFETY: `ud` is the sandbox's arena, alive as long as its state; `block` is null or
    // a block of `old_size` bytes this arena returned.
    unsafe {
        (*ud.cast::<Arena>())
            .reallocate(block.cast(), old_size, new_size)
            .cast()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_reused_resized_and_capped() {
        let mut arena = Arena::new(1 << 20);
        unsafe {
            let a = arena.reallocate(null_mut(), 0, 40);
            let b = arena.reallocate(null_mut(), 0, 40);
            assert!(!a.is_null() && !b.is_null() && a != b);
            assert_eq!(a as usize % GRAIN, 0);
            a.write_bytes(7, 40);
            // same class: same block; other class: moved with the contents
            assert_eq!(arena.reallocate(a, 40, 48), a);
            let grown = arena.reallocate(a, 48, 2000);
            assert_eq!(std::slice::from_raw_parts(grown, 40), &[7u8; 40][..]);
            assert_eq!(arena.used, 40 + 2000);
            // a freed small block is handed out again
            assert!(arena.reallocate(b, 40, 0).is_null());
            assert_eq!(arena.reallocate(null_mut(), 0, 33), b);
            let large = arena.reallocate(grown, 2000, 100_000);
            assert!(!large.is_null());
            assert_eq!(std::slice::from_raw_parts(large, 40), &[7u8; 40][..]);
            // over the cap: refused, nothing changes
            assert!(arena.reallocate(null_mut(), 0, 1 << 20).is_null());
            assert_eq!(arena.used, 33 + 100_000);
            assert!(arena.reallocate(large, 100_000, 0).is_null());
            assert_eq!(arena.used, 33);
        }
    }
}
