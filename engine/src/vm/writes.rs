//! The write recorder: during one run, which script line last stored each key of each table
//! (`t.k = v`, a constructor's fields and items, `rawset`, `table.insert` and every other
//! store through the C API). Off by default: the patched VM then pays one test of a null
//! pointer per store. It is turned on for a second run of a step whose result needs
//! explaining (see `runner::provenance`), never for `check`'s own run.

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};

use mlua::ffi;

use super::{Sandbox, State};

/// Distinct (table, key) pairs a log keeps at most: a script storing millions of keys stays
/// within bounded memory (later new pairs are not recorded; [`WriteLog::truncated`] says so).
pub const MAX_RECORDED_WRITES: usize = 200_000;

/// Bytes of string keys a log keeps at most (a script storing and deleting long keys one after
/// another holds little in its own heap, but each distinct key would be copied here).
pub const MAX_RECORDED_KEY_BYTES: usize = 16 << 20;

/// A key as the recorder sees it: a string's bytes or a number's bits (other keys are not
/// recorded: they cannot appear in a JSON result).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum WriteKey {
    Str(Box<[u8]>),
    Num(u64),
}

impl WriteKey {
    pub fn number(n: f64) -> WriteKey {
        // -0 and +0 are the same key in Lua.
        WriteKey::Num(if n == 0.0 { 0 } else { n.to_bits() })
    }
}

/// Where a store happened: the script line (0 when no Lua function made it, e.g. the host
/// building `obj`) and its place in the run's order of stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct WriteSite {
    pub line: u32,
    /// Counts stores from 0 in the order they happened: the last one has the highest.
    pub order: u64,
}

/// The last store to each (table, key) of one run. Tables are told apart by address: a table
/// freed during the run and another made at its address share entries, but every key the new
/// table holds was stored after it was made, which overwrote the old entry.
#[derive(Debug, Default)]
pub struct WriteLog {
    sites: HashMap<(usize, WriteKey), WriteSite>,
    stores: u64,
    key_bytes: usize,
    truncated: bool,
}

impl WriteLog {
    /// The last store to `key` of the table at `table` (`lua_topointer`'s address).
    pub fn site(&self, table: *const c_void, key: WriteKey) -> Option<WriteSite> {
        self.sites.get(&(table as usize, key)).copied()
    }

    /// Whether some (table, key) pairs were not recorded ([`MAX_RECORDED_WRITES`],
    /// [`MAX_RECORDED_KEY_BYTES`]).
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    fn note(&mut self, table: usize, key: WriteKey, line: c_int) {
        let site = WriteSite {
            line: u32::try_from(line).unwrap_or(0),
            order: self.stores,
        };
        self.stores += 1;
        let len = self.sites.len();
        match self.sites.entry((table, key)) {
            std::collections::hash_map::Entry::Occupied(mut e) => {
                e.insert(site);
            }
            std::collections::hash_map::Entry::Vacant(e) => {
                let bytes = match &e.key().1 {
                    WriteKey::Str(bytes) => bytes.len(),
                    WriteKey::Num(_) => 0,
                };
                if len < MAX_RECORDED_WRITES && self.key_bytes + bytes <= MAX_RECORDED_KEY_BYTES {
                    self.key_bytes += bytes;
                    e.insert(site);
                } else {
                    self.truncated = true;
                }
            }
        }
    }
}

type WriteFn = unsafe extern "C-unwind" fn(
    ud: *mut c_void,
    table: *const c_void,
    skey: *const c_char,
    slen: usize,
    nkey: f64,
    line: c_int,
);

unsafe extern "C-unwind" {
    /// lua51-sys/csrc/kruise_host.c: turns the recorder on (`fn_` set) or off.
    fn kruise_record_writes(state: State, fn_: Option<WriteFn>, ud: *mut c_void);
}

/// The recorder's callback: `ud` is the `WriteLog` given to [`Sandbox::record_writes`].
unsafe extern "C-unwind" fn on_write(
    ud: *mut c_void,
    table: *const c_void,
    skey: *const c_char,
    slen: usize,
    nkey: f64,
    line: c_int,
) {
    // Never unwind into C: a panic here (allocation failure) only loses the record.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        // SAFETY: `ud` is the log the sandbox was given, alive while recording is on; a
        // string key's bytes are live for the call.
        let log = unsafe { &mut *ud.cast::<WriteLog>() };
        let key = if skey.is_null() {
            WriteKey::number(nkey)
        } else {
            let bytes = unsafe { std::slice::from_raw_parts(skey.cast::<u8>(), slen) };
            WriteKey::Str(bytes.into())
        };
        log.note(table as usize, key, line);
    }));
}

impl Sandbox {
    /// Records every store into `log` from now on, until [`Self::stop_recording_writes`].
    ///
    /// # Safety
    /// `log` stays alive and is not otherwise used until recording is stopped (or the
    /// sandbox is dropped without running Lua again).
    pub(crate) unsafe fn record_writes(&self, log: *mut WriteLog) {
        // SAFETY: valid state; the caller keeps `log` alive.
        unsafe { kruise_record_writes(self.state(), Some(on_write), log.cast()) };
    }

    /// Turns the recorder off.
    pub(crate) fn stop_recording_writes(&self) {
        // SAFETY: valid state.
        unsafe { stop_recording(self.state()) };
    }
}

/// Turns the recorder of the state `l` off (inside a run's finisher, which has the state but
/// not the sandbox).
///
/// # Safety
/// `l` is a valid state.
pub(crate) unsafe fn stop_recording(l: State) {
    unsafe { kruise_record_writes(l, None, std::ptr::null_mut()) };
}

/// The address by which the recorder knows the table at `idx` (as `lua_topointer` gives it).
///
/// # Safety
/// `l` is a valid state and `idx` a valid index.
pub(crate) unsafe fn table_address(l: State, idx: c_int) -> *const c_void {
    unsafe { ffi::lua_topointer(l, idx) }
}
