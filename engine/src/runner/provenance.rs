//! Which script line wrote each field of a run's result: the script is run once more with
//! the VM's write recorder on (`vm::writes`), and the last store into each table of the
//! returned value becomes the line of that field's path (`spec.http[1].route[0].weight` →
//! 42). Only for explaining a result (the intent check asks it of a misrouted step): the
//! runs `check` makes record nothing.

use std::collections::{BTreeMap, HashSet};
use std::ffi::c_int;

use mlua::ffi;

use super::{Obj, RunOptions, Script, cannot_prepare, prepared, set_obj};
use crate::luadata::{IngressData, LuaData};
use crate::value::JsonValue;
use crate::vm::State;
use crate::vm::writes::{WriteKey, WriteLog, WriteSite, stop_recording, table_address};
use crate::yaml::PathSeg;

/// Levels of nested tables followed at most (a result deeper than this is not a resource
/// Kruise applies; the JSON encoder refuses it).
const MAX_DEPTH: usize = 100;

/// The fields of a run's result with the store that last wrote them: paths as in the result
/// (array indices from 0, as the resource's JSON has them), script lines from 1.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WrittenAt {
    sites: BTreeMap<Vec<PathSeg>, WriteSite>,
}

impl WrittenAt {
    /// The script line that last stored the value at `path`, when the script did.
    pub fn line_of(&self, path: &[PathSeg]) -> Option<u32> {
        self.sites
            .get(path)
            .map(|site| site.line)
            .filter(|line| *line > 0)
    }

    /// The script line of the last store, in run order, to `path` or anything below it: the
    /// last change the script made to that part of the result. `None` when the script wrote
    /// nothing there (the part came from `obj` untouched).
    pub fn last_write_within(&self, path: &[PathSeg]) -> Option<u32> {
        self.last_site(path, true)
    }

    /// Where the script last changed the entry at `path` (a route): the last field it set in
    /// it, or, when it set none (it put a table from `obj` in place as it was), the line that
    /// put it there. `None` when the script did neither.
    pub fn entry_line(&self, path: &[PathSeg]) -> Option<u32> {
        // The last store to something below `path` (not `path` itself).
        self.last_site(path, false).or_else(|| self.line_of(path))
    }

    fn last_site(&self, path: &[PathSeg], with_itself: bool) -> Option<u32> {
        self.sites
            .range(path.to_vec()..)
            .take_while(|(p, _)| p.starts_with(path))
            .filter(|(p, site)| site.line > 0 && (with_itself || p.len() > path.len()))
            .max_by_key(|(_, site)| site.order)
            .map(|(_, site)| site.line)
    }
}

/// Runs a custom-provider script against `obj` with the recorder on; `None` when the run
/// fails or returns no table, or when the recorder could not keep every store (a script
/// storing more keys than [`crate::vm::writes::MAX_RECORDED_WRITES`]): a store it missed
/// could leave an older table's line at the same address, so no line is better than a wrong
/// one.
pub fn record_custom(script: &Script, obj: &LuaData, options: &RunOptions) -> Option<WrittenAt> {
    record(script, Obj::Data(obj), options)
}

/// Runs an ingress-class script against `obj` with the recorder on: the paths are the
/// annotation names of its result.
pub fn record_ingress(
    script: &Script,
    obj: &IngressData,
    options: &RunOptions,
) -> Option<WrittenAt> {
    record(script, Obj::Json(&obj.to_json()), options)
}

/// Like [`record_custom`] with `obj` as JSON (an ingress-class script's, whose result is
/// the annotations map).
pub fn record_json(script: &Script, obj: &JsonValue, options: &RunOptions) -> Option<WrittenAt> {
    record(script, Obj::Json(obj), options)
}

fn record(script: &Script, obj: Obj<'_>, options: &RunOptions) -> Option<WrittenAt> {
    let bytecode = script.compiled.as_ref().ok()?;
    // A sandbox of its own: a pooled one is rewound to a snapshot taken with the recorder off.
    let sandbox = prepared::loaded_sandbox(bytecode, options).ok()?;
    sandbox.begin_run(options.limits.timeout);
    set_obj(&sandbox, obj, options.key_order)
        .map_err(cannot_prepare)
        .ok()?;
    sandbox.start_collector();
    let mut log = Box::new(WriteLog::default());
    let log_ptr: *mut WriteLog = &mut *log;
    // SAFETY: `log` lives until the end of this function; recording stops in the finisher
    // (before the result is walked) and again below, before it is read.
    unsafe { sandbox.record_writes(log_ptr) };
    let written = sandbox.run(|returned| {
        let (l, idx) = returned.ok()?;
        // SAFETY: `l` is the running state; `idx` its returned value, in a protected call.
        unsafe {
            stop_recording(l);
            if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
                return None;
            }
            let mut written = WrittenAt::default();
            let mut walk = Walk {
                log: &*log_ptr,
                out: &mut written.sites,
                seen: HashSet::new(),
            };
            if (*log_ptr).truncated() {
                return None;
            }
            walk.table(l, ffi::lua_absindex(l, idx), &mut Vec::new());
            Some(written)
        }
    });
    sandbox.stop_recording_writes();
    drop(log);
    written
}

/// A walk over the result's tables, copying each field's recorded store.
struct Walk<'a> {
    log: &'a WriteLog,
    out: &'a mut BTreeMap<Vec<PathSeg>, WriteSite>,
    /// Tables already walked (a result may hold one table twice, or a cycle).
    seen: HashSet<usize>,
}

impl Walk<'_> {
    /// # Safety
    /// `l` is a valid state inside a protected call; `idx` (absolute) holds a table.
    unsafe fn table(&mut self, l: State, idx: c_int, path: &mut Vec<PathSeg>) {
        unsafe {
            let address = table_address(l, idx);
            if path.len() >= MAX_DEPTH
                || !self.seen.insert(address as usize)
                || ffi::lua_checkstack(l, 3) == 0
            {
                return;
            }
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, idx) != 0 {
                if let Some((key, seg)) = key_at(l, -2) {
                    path.push(seg);
                    if let Some(site) = self.log.site(address, key) {
                        self.out.insert(path.clone(), site);
                    }
                    if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
                        let top = ffi::lua_gettop(l);
                        self.table(l, top, path);
                    }
                    path.pop();
                }
                ffi::lua_pop(l, 1);
            }
        }
    }
}

/// The key at `idx` as the recorder and the result's path know it: a string, or an integer
/// from 1 (array index from 0). Other keys have no place in a JSON result.
///
/// # Safety
/// `l` is a valid state and `idx` a valid index.
unsafe fn key_at(l: State, idx: c_int) -> Option<(WriteKey, PathSeg)> {
    unsafe {
        match ffi::lua_type(l, idx) {
            ffi::LUA_TSTRING => {
                let mut len = 0;
                let bytes = ffi::lua_tolstring(l, idx, &mut len);
                let bytes = std::slice::from_raw_parts(bytes.cast::<u8>(), len);
                Some((
                    WriteKey::Str(bytes.into()),
                    PathSeg::Key(String::from_utf8_lossy(bytes).into_owned()),
                ))
            }
            ffi::LUA_TNUMBER => {
                let n = ffi::lua_tonumber(l, idx);
                (n >= 1.0 && n.fract() == 0.0 && n < 1e15)
                    .then(|| (WriteKey::number(n), PathSeg::Index(n as usize - 1)))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
#[path = "provenance_tests.rs"]
mod tests;
