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
//!
//! An arena can also take a snapshot of everything it holds and later rewind to it: since
//! every block of a state lives in its arena, rewinding brings the state back byte for byte
//! (see `Sandbox::snapshot`). Chunks and large blocks that existed at the snapshot stay at
//! their addresses until the arena is dropped, so that the pointers inside the image stay
//! valid; everything allocated after it is released by the rewind.

use std::ffi::{c_int, c_void};
use std::mem::MaybeUninit;
use std::ptr::null_mut;

use mlua::ffi;

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

/// Header of a large block: links of the list of live large blocks and the block's size
/// (32 bytes, so the block after it stays 16-byte aligned).
#[repr(C)]
struct Large {
    prev: *mut Large,
    next: *mut Large,
    /// Bytes after the header.
    size: usize,
    _pad: usize,
}

const HEADER: usize = std::mem::size_of::<Large>();

pub(super) struct Arena {
    cursor: Cursor,
    /// The cap on the bytes Lua holds (0: none).
    limit: usize,
    /// Every chunk, freed on drop.
    chunks: Vec<*mut c_void>,
    snapshot: Option<Box<Snapshot>>,
    /// The state this arena serves, once it exists: where a refused allocation is located.
    state: *mut ffi::lua_State,
    /// The script line running when the cap first refused an allocation since
    /// [`Self::clear_failure`]. PUC Lua raises its memory error without a position (and
    /// without calling a message handler), so this is the only moment the line is known.
    failed_line: Option<u32>,
}

/// The arena's bookkeeping of its blocks: what a snapshot saves beside the memory itself.
#[derive(Clone, Copy)]
struct Cursor {
    /// Bytes Lua holds.
    used: usize,
    /// Bytes taken from the system (chunks and large blocks with headers).
    footprint: usize,
    /// Free blocks per size class, linked through their first word.
    free: [*mut u8; CLASSES],
    /// The unused tail of the current chunk.
    bump: *mut u8,
    bump_end: *mut u8,
    /// Live large blocks.
    large: *mut Large,
}

/// A copy of some arena memory. The bytes may be uninitialised (padding, the unused tail
/// of a full chunk, a header's `_pad`), so they are copied as such, never read as `u8`.
type Image = Box<[MaybeUninit<u8>]>;

/// Copies `len` bytes from `start`.
///
/// # Safety
/// The `len` bytes at `start` are allocated and nothing writes them meanwhile.
unsafe fn image(start: *const u8, len: usize) -> Image {
    // SAFETY: see above; MaybeUninit<u8> accepts any byte, initialised or not.
    Box::from(unsafe { std::slice::from_raw_parts(start.cast::<MaybeUninit<u8>>(), len) })
}

/// Writes `image` back to where it was copied from.
///
/// # Safety
/// `to` is the start `image` was copied from, still allocated, and unused by anyone else.
unsafe fn restore(image: &Image, to: *mut u8) {
    // SAFETY: see above.
    unsafe { std::ptr::copy_nonoverlapping(image.as_ptr(), to.cast(), image.len()) }
}

/// What [`Arena::rewind`] restores.
struct Snapshot {
    cursor: Cursor,
    /// The contents of the chunks that existed, in order (the last one up to its bump
    /// pointer: the rest of it was unused).
    chunks: Vec<Image>,
    /// The large blocks that existed, with their contents (header included). They are
    /// pinned: never returned to the system before the arena is dropped, even once Lua
    /// frees them.
    large: Vec<(*mut Large, Image)>,
    /// [`Arena::failed_line`] then (a debugger's evaluation may hit the cap in between).
    failed_line: Option<u32>,
}

impl Snapshot {
    fn pins(&self, header: *mut Large) -> bool {
        self.large.iter().any(|&(pinned, _)| pinned == header)
    }
}

fn class_of(size: usize) -> usize {
    (size - 1) / GRAIN
}

impl Arena {
    pub(super) fn new(limit: usize) -> Self {
        Arena {
            cursor: Cursor {
                used: 0,
                footprint: 0,
                free: [null_mut(); CLASSES],
                bump: null_mut(),
                bump_end: null_mut(),
                large: null_mut(),
            },
            limit,
            chunks: Vec::new(),
            snapshot: None,
            state: null_mut(),
            failed_line: None,
        }
    }

    /// Records the state this arena serves (see [`Self::failed_line`]).
    pub(super) fn serve(&mut self, state: *mut ffi::lua_State) {
        self.state = state;
    }

    /// The script line running when the cap first refused an allocation since the last
    /// [`Self::clear_failure`] (`None` outside a script, or before a refusal).
    pub(super) fn failed_line(&self) -> Option<u32> {
        self.failed_line
    }

    /// Forgets the refused allocation's line (a new run starts).
    pub(super) fn clear_failure(&mut self) {
        self.failed_line = None;
    }

    /// Records every block's contents and the bookkeeping, for [`Self::rewind`]. Taken once
    /// per arena (its blocks stay pinned until the arena is dropped).
    ///
    /// # Safety
    /// No block is being written while this reads them.
    pub(super) unsafe fn take_snapshot(&mut self) {
        assert!(self.snapshot.is_none(), "an arena takes one snapshot");
        let last = self.chunks.len().saturating_sub(1);
        let chunks = self.chunks.iter().enumerate().map(|(index, &chunk)| {
            let chunk = chunk.cast::<u8>();
            let len = if index == last {
                self.cursor.bump as usize - chunk as usize
            } else {
                CHUNK
            };
            // SAFETY: the first `len` bytes of the chunk are within it.
            unsafe { image(chunk, len) }
        });
        let chunks = chunks.collect();
        let mut large = Vec::new();
        let mut header = self.cursor.large;
        while !header.is_null() {
            // SAFETY: a live large block: its header and `size` bytes after it.
            unsafe {
                large.push((header, image(header.cast(), HEADER + (*header).size)));
                header = (*header).next;
            }
        }
        self.snapshot = Some(Box::new(Snapshot {
            cursor: self.cursor,
            chunks,
            large,
            failed_line: self.failed_line,
        }));
    }

    /// Brings every block and the bookkeeping back to the snapshot, and releases what was
    /// allocated since. Without a snapshot, does nothing.
    ///
    /// # Safety
    /// Nothing uses a block allocated since the snapshot any more.
    pub(super) unsafe fn rewind(&mut self) {
        let Some(snapshot) = self.snapshot.take() else {
            return;
        };
        // SAFETY: chunks and large blocks made since the snapshot came from malloc and
        // are unused; the snapshot's own blocks are pinned, hence still allocated at their
        // addresses, and their images are exactly their sizes.
        unsafe {
            for chunk in self.chunks.drain(snapshot.chunks.len()..) {
                free(chunk);
            }
            self.free_unpinned_large(Some(&snapshot));
            for (&chunk, image) in self.chunks.iter().zip(&snapshot.chunks) {
                restore(image, chunk.cast());
            }
            for (header, image) in &snapshot.large {
                restore(image, header.cast());
            }
        }
        self.cursor = snapshot.cursor;
        self.failed_line = snapshot.failed_line;
        self.snapshot = Some(snapshot);
    }

    /// Drops the snapshot right after a [`Self::rewind`] (every block it pins is live
    /// again then, so none is lost), so that another can be taken.
    pub(super) fn forget_snapshot(&mut self) {
        self.snapshot = None;
    }

    /// Frees the live large blocks that `snapshot` does not pin, and empties the list.
    ///
    /// # Safety
    /// Nothing uses those blocks any more.
    unsafe fn free_unpinned_large(&mut self, snapshot: Option<&Snapshot>) {
        let mut header = self.cursor.large;
        while !header.is_null() {
            // SAFETY: a live large block from malloc (see the caller).
            unsafe {
                let next = (*header).next;
                if !snapshot.is_some_and(|s| s.pins(header)) {
                    free(header.cast());
                }
                header = next;
            }
        }
        self.cursor.large = null_mut();
    }

    fn pinned(&self, header: *mut Large) -> bool {
        self.snapshot.as_ref().is_some_and(|s| s.pins(header))
    }

    pub(super) fn limit(&self) -> usize {
        self.limit
    }

    /// Whether taking `more` bytes from the system stays within twice the cap.
    fn footprint_allows(&self, more: usize) -> bool {
        self.limit == 0 || self.cursor.footprint + more <= self.limit.saturating_mul(2)
    }

    /// A block of `size` (1..=SMALL_MAX) bytes from the free list or the chunk.
    #[inline(never)]
    unsafe fn alloc_small(&mut self, size: usize) -> *mut u8 {
        let class = class_of(size);
        let head = self.cursor.free[class];
        if !head.is_null() {
            // SAFETY: a free block's first word links to the next free block.
            self.cursor.free[class] = unsafe { *head.cast::<*mut u8>() };
            return head;
        }
        let rounded = (class + 1) * GRAIN;
        if (self.cursor.bump_end as usize) - (self.cursor.bump as usize) < rounded {
            if !self.footprint_allows(CHUNK) {
                return null_mut();
            }
            // SAFETY: plain malloc; the chunk is freed on drop.
            let chunk = unsafe { malloc(CHUNK) }.cast::<u8>();
            if chunk.is_null() {
                return null_mut();
            }
            self.chunks.push(chunk.cast());
            self.cursor.footprint += CHUNK;
            self.cursor.bump = chunk;
            // SAFETY: within the chunk.
            self.cursor.bump_end = unsafe { chunk.add(CHUNK) };
        }
        let block = self.cursor.bump;
        // SAFETY: `rounded` bytes remain in the chunk.
        self.cursor.bump = unsafe { block.add(rounded) };
        block
    }

    /// Puts a small block of `size` bytes back on its class's free list.
    unsafe fn free_small(&mut self, block: *mut u8, size: usize) {
        let class = class_of(size);
        // SAFETY: the block has at least GRAIN bytes and is no longer used by Lua.
        unsafe { *block.cast::<*mut u8>() = self.cursor.free[class] };
        self.cursor.free[class] = block;
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
            (*header).size = size;
            self.cursor.footprint += size + HEADER;
            self.link(header);
            header.cast::<u8>().add(HEADER)
        }
    }

    unsafe fn free_large(&mut self, block: *mut u8, size: usize) {
        // SAFETY: `block` came from alloc_large/realloc_large, right after its header. A
        // pinned block only leaves the list: the snapshot's image still refers to it.
        unsafe {
            let header = block.sub(HEADER).cast::<Large>();
            self.unlink(header);
            if !self.pinned(header) {
                free(header.cast());
            }
        }
        self.cursor.footprint -= size + HEADER;
    }

    unsafe fn realloc_large(&mut self, block: *mut u8, old: usize, new: usize) -> *mut u8 {
        if new > old && !self.footprint_allows(new - old) {
            return null_mut();
        }
        // SAFETY: as in free_large; the header is relinked at its new address.
        unsafe {
            let header = block.sub(HEADER).cast::<Large>();
            if self.pinned(header) {
                // `realloc` could free it: move it by hand instead.
                let moved = self.alloc_large(new);
                if !moved.is_null() {
                    std::ptr::copy_nonoverlapping(block, moved, old.min(new));
                    self.free_large(block, old);
                }
                return moved;
            }
            self.unlink(header);
            let moved = realloc(header.cast(), new + HEADER).cast::<Large>();
            if moved.is_null() {
                self.link(header);
                return null_mut();
            }
            (*moved).size = new;
            self.cursor.footprint = self.cursor.footprint - old + new;
            self.link(moved);
            moved.cast::<u8>().add(HEADER)
        }
    }

    unsafe fn link(&mut self, header: *mut Large) {
        // SAFETY: `header` and the list's blocks are live large blocks.
        unsafe {
            (*header).prev = null_mut();
            (*header).next = self.cursor.large;
            if !self.cursor.large.is_null() {
                (*self.cursor.large).prev = header;
            }
        }
        self.cursor.large = header;
    }

    unsafe fn unlink(&mut self, header: *mut Large) {
        // SAFETY: as in link.
        unsafe {
            let (prev, next) = ((*header).prev, (*header).next);
            if prev.is_null() {
                self.cursor.large = next;
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
                    let used = self.cursor.used + new;
                    if !self.within_limit(used) {
                        return null_mut();
                    }
                    let class = class_of(new);
                    let head = self.cursor.free[class];
                    let rounded = (class + 1) * GRAIN;
                    let moved = if !head.is_null() {
                        // SAFETY: a free block's first word links to the next free block.
                        self.cursor.free[class] = *head.cast::<*mut u8>();
                        head
                    } else if (self.cursor.bump_end as usize) - (self.cursor.bump as usize)
                        >= rounded
                    {
                        let block = self.cursor.bump;
                        // SAFETY: `rounded` bytes remain in the chunk.
                        self.cursor.bump = block.add(rounded);
                        block
                    } else {
                        self.alloc_small(new)
                    };
                    if !moved.is_null() {
                        self.cursor.used = used;
                    }
                    return moved;
                }
            } else if new == 0 {
                if old <= SMALL_MAX {
                    self.free_small(block, old);
                } else {
                    self.free_large(block, old);
                }
                self.cursor.used -= old;
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
            let used = self.cursor.used - old + new;
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
                self.cursor.used = used;
                moved
            } else if new < old {
                // Lua assumes a shrink never fails: keep the block (it is large enough,
                // and whichever list it is freed to later, the arena releases it on drop).
                self.cursor.used = used;
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
            let snapshot = self.snapshot.take();
            self.free_unpinned_large(snapshot.as_deref());
            for (header, _) in snapshot.into_iter().flat_map(|s| s.large) {
                free(header.cast());
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
        let arena = ud.cast::<Arena>();
        let moved = (*arena).reallocate(block.cast(), old_size, new_size);
        if moved.is_null() && new_size > 0 && (*arena).failed_line.is_none() {
            let state = (*arena).state;
            if !state.is_null() {
                (*arena).failed_line = script_line_now(state);
            }
        }
        moved.cast()
    }
}

/// How many call levels [`script_line_now`] looks through for the script's own code.
const LEVELS: c_int = 200;

/// The line the script (chunk `<string>`) is at in the innermost of its running functions:
/// a refused allocation inside a library call (`string.rep`) is located at the script line
/// that called it.
///
/// # Safety
/// `state` is a valid state inside an allocation Lua asked for. `lua_getstack` and
/// `lua_getinfo` with "Sl" only read call records and prototypes (they allocate nothing), and
/// the caller's record holds its `savedpc` from the call on (ldo.c `luaD_precall`).
unsafe fn script_line_now(state: *mut ffi::lua_State) -> Option<u32> {
    const SCRIPT_SOURCE: &[u8] = b"<string>";
    for level in 0..LEVELS {
        // SAFETY: see above; `record` is plain data lua_getstack fills.
        unsafe {
            let mut record = MaybeUninit::<ffi::lua_Debug>::zeroed().assume_init();
            if ffi::lua_getstack(state, level, &mut record) == 0 {
                return None;
            }
            if ffi::lua_getinfo(state, c"Sl".as_ptr(), &mut record) == 0 {
                return None;
            }
            let source = std::ffi::CStr::from_ptr(record.short_src.as_ptr());
            if record.currentline > 0 && source.to_bytes() == SCRIPT_SOURCE {
                return u32::try_from(record.currentline).ok();
            }
        }
    }
    None
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
            assert_eq!(arena.cursor.used, 40 + 2000);
            // a freed small block is handed out again
            assert!(arena.reallocate(b, 40, 0).is_null());
            assert_eq!(arena.reallocate(null_mut(), 0, 33), b);
            let large = arena.reallocate(grown, 2000, 100_000);
            assert!(!large.is_null());
            assert_eq!(std::slice::from_raw_parts(large, 40), &[7u8; 40][..]);
            // over the cap: refused, nothing changes
            assert!(arena.reallocate(null_mut(), 0, 1 << 20).is_null());
            assert_eq!(arena.cursor.used, 33 + 100_000);
            assert!(arena.reallocate(large, 100_000, 0).is_null());
            assert_eq!(arena.cursor.used, 33);
        }
    }

    #[test]
    fn rewind_restores_every_block_and_releases_the_newer_ones() {
        let mut arena = Arena::new(1 << 20);
        unsafe {
            let small = arena.reallocate(null_mut(), 0, 40);
            let large = arena.reallocate(null_mut(), 0, 3000);
            let freed_later = arena.reallocate(null_mut(), 0, 2000);
            small.write_bytes(1, 40);
            large.write_bytes(2, 3000);
            freed_later.write_bytes(3, 2000);
            arena.take_snapshot();
            let used = arena.cursor.used;
            // A run: overwrite, free and move the snapshot's blocks, make new ones of
            // every kind (more than a chunk of small ones).
            small.write_bytes(9, 40);
            let moved = arena.reallocate(large, 3000, 50_000);
            assert!(!moved.is_null() && moved != large);
            arena.reallocate(freed_later, 2000, 0);
            for _ in 0..(2 * CHUNK / 512) {
                assert!(!arena.reallocate(null_mut(), 0, 500).is_null());
            }
            assert!(!arena.reallocate(null_mut(), 0, 200_000).is_null());
            assert!(arena.chunks.len() > 1);
            arena.rewind();
            assert_eq!(arena.cursor.used, used);
            assert_eq!(arena.chunks.len(), 1);
            assert_eq!(std::slice::from_raw_parts(small, 40), &[1u8; 40][..]);
            assert_eq!(std::slice::from_raw_parts(large, 3000), &[2u8; 3000][..]);
            assert_eq!(
                std::slice::from_raw_parts(freed_later, 2000),
                &[3u8; 2000][..]
            );
            // The blocks are live again: the list holds exactly the snapshot's large ones,
            // and allocation goes on from where the snapshot left off.
            let mut live = Vec::new();
            let mut header = arena.cursor.large;
            while !header.is_null() {
                live.push(header.cast::<u8>().add(HEADER));
                header = (*header).next;
            }
            live.sort();
            let mut want = vec![large, freed_later];
            want.sort();
            assert_eq!(live, want);
            assert_eq!(arena.reallocate(null_mut(), 0, 40), small.add(48));
            // A second run and rewind, then drop with pinned blocks freed by Lua.
            arena.reallocate(large, 3000, 0);
            arena.rewind();
            assert_eq!(std::slice::from_raw_parts(large, 3000), &[2u8; 3000][..]);
            arena.reallocate(large, 3000, 0);
        }
    }
}
