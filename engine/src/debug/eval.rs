//! Evaluating an expression in a stopped frame without changing the run: the whole state is
//! checkpointed, the expression runs on a new Lua thread in an environment that holds the
//! frame's locals and upvalues (falling back to the globals), its value is copied out as
//! plain data, and the state is rewound byte for byte to the checkpoint. Whatever the
//! expression did (assignments, `table.insert`, prints, memory) is undone.

use std::ffi::{CStr, c_char, c_int};
use std::time::{Duration, Instant};

use mlua::ffi;

use crate::vm::{self, LimitHit, RunContext, Sandbox, State};

/// The chunk name of scripts (see `vm::compile`); lines of other chunks (the engine's own
/// Lua helpers) are never stopped at.
pub(super) const SCRIPT_SOURCE: &[u8] = b"=<string>";

/// How long one evaluation may run.
const EVAL_TIMEOUT: Duration = Duration::from_secs(1);

/// Instructions between two checks of the evaluation's deadline.
const EVAL_HOOK_INTERVAL: c_int = 1_000;

/// Values copied out of one evaluation, at most (nested tables included).
const MAX_SHOWN: usize = 5_000;

/// Table nesting copied out of one evaluation, at most.
const MAX_DEPTH: usize = 32;

/// Entries listed per table, at most.
pub(super) const MAX_ENTRIES: usize = 2_000;

/// Longest string shown, in bytes.
const MAX_STRING: usize = 4_096;

unsafe extern "C" {
    /// The patched Lua's number formatting (lua51-sys/csrc/kruise_gopher.c), as `tostring`.
    fn kruise_number2str(s: *mut c_char, n: f64) -> c_int;
}

/// A value copied out of the state: how it reads, its type, and for a table its entries.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub value: String,
    pub type_name: String,
    /// A table's entries (key as shown, value), `None` for other values.
    pub children: Option<Vec<(String, Shown)>>,
}

impl Shown {
    /// Lua truthiness: everything but `nil` and `false`.
    pub(super) fn is_truthy(&self) -> bool {
        !(self.type_name == "nil" || (self.type_name == "boolean" && self.value == "false"))
    }

    /// The value as `tostring` would write it for a string (no quotes).
    pub(super) fn plain_text(&self) -> String {
        if self.type_name == "string" {
            unquote(&self.value)
        } else {
            self.value.clone()
        }
    }
}

fn unquote(quoted: &str) -> String {
    serde_json::from_str::<String>(quoted).unwrap_or_else(|_| quoted.to_owned())
}

/// Evaluates `expression` (or, when it is not an expression, runs it as a statement) in
/// the frame at `level` of the sandbox's stopped state (`None`: globals only), and rewinds
/// the state. The value is its first result.
///
/// # Safety
/// The sandbox's state is stopped in a hook or message handler; the sandbox is not a
/// prepared one (it keeps no snapshot of its own).
pub(super) unsafe fn evaluate(
    sandbox: &Sandbox,
    level: Option<c_int>,
    expression: &str,
) -> Result<Shown, String> {
    let context = sandbox.run_context();
    let saved = SavedContext::save(context);
    let mut outcome = Err("the expression could not be evaluated".to_owned());
    // SAFETY: the state is stopped; everything read is copied into `outcome` before the
    // rewind, and nothing made in between is used after it.
    unsafe {
        sandbox.checkpoint();
        context
            .eval_deadline
            .set(Some(Instant::now() + EVAL_TIMEOUT));
        let ran = sandbox.protected(|l| {
            // Inside lua_cpcall the frames are one level deeper.
            outcome = run(l, level.map(|level| level + 1), expression);
        });
        if let Err(message) = ran {
            outcome = Err(message);
        }
        sandbox.restore_checkpoint();
    }
    saved.restore(context);
    outcome
}

/// What a run context holds about the run that an evaluation may change.
struct SavedContext {
    prints: usize,
    print_bytes: usize,
    hit: Option<LimitHit>,
    abandoned: bool,
    traceback: Option<String>,
}

impl SavedContext {
    fn save(context: &RunContext) -> SavedContext {
        SavedContext {
            prints: context.prints.borrow().len(),
            print_bytes: context.print_bytes.get(),
            hit: context.hit.get(),
            abandoned: context.abandoned.get(),
            traceback: context.traceback.borrow().clone(),
        }
    }

    fn restore(self, context: &RunContext) {
        context.prints.borrow_mut().truncate(self.prints);
        context.print_bytes.set(self.print_bytes);
        context.hit.set(self.hit);
        context.abandoned.set(self.abandoned);
        *context.traceback.borrow_mut() = self.traceback;
        context.eval_deadline.set(None);
    }
}

/// The evaluation proper, inside a protected call on the main thread.
///
/// # Safety
/// `l` is in a protected call; `level` counts from it.
unsafe fn run(l: State, level: Option<c_int>, expression: &str) -> Result<Shown, String> {
    unsafe {
        ffi::luaL_checkstack(l, 8, c"evaluation".as_ptr());
        let thread = ffi::lua_newthread(l);
        ffi::lua_sethook(
            thread,
            Some(eval_hook),
            ffi::LUA_MASKCOUNT,
            EVAL_HOOK_INTERVAL,
        );
        // The environment: upvalues, then locals (later ones shadow earlier ones).
        ffi::lua_createtable(l, 0, 8);
        if let Some(level) = level {
            let mut ar: ffi::lua_Debug = std::mem::zeroed();
            if ffi::lua_getstack(l, level, &mut ar) == 0 {
                return Err("no such frame".to_owned());
            }
            ffi::lua_getinfo(l, c"f".as_ptr(), &mut ar);
            let mut n = 1;
            loop {
                let name = ffi::lua_getupvalue(l, -1, n);
                if name.is_null() {
                    break;
                }
                set_named(l, -3, name);
                n += 1;
            }
            ffi::lua_pop(l, 1);
            let mut n = 1;
            loop {
                let name = ffi::lua_getlocal(l, &ar, n);
                if name.is_null() {
                    break;
                }
                set_named(l, -2, name);
                n += 1;
            }
        }
        ffi::lua_createtable(l, 0, 1);
        ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
        ffi::lua_setfield(l, -2, c"__index".as_ptr());
        ffi::lua_setmetatable(l, -2);
        let returned = format!("return {expression}");
        let mut status = ffi::luaL_loadbuffer(
            l,
            returned.as_ptr().cast(),
            returned.len(),
            c"=(evaluate)".as_ptr(),
        );
        if status != 0 {
            ffi::lua_pop(l, 1);
            status = ffi::luaL_loadbuffer(
                l,
                expression.as_ptr().cast(),
                expression.len(),
                c"=(evaluate)".as_ptr(),
            );
        }
        if status != 0 {
            return Err(vm::error_text(l, -1));
        }
        ffi::lua_pushvalue(l, -2);
        ffi::lua_setfenv(l, -2);
        ffi::lua_xmove(l, thread, 1);
        if ffi::lua_pcall(thread, 0, 1, 0) != 0 {
            return Err(vm::error_text(thread, -1));
        }
        let mut budget = MAX_SHOWN;
        Ok(show(thread, -1, &mut budget, 0))
    }
}

/// `env[name] = value` for the value on top (popped); temporaries (`(for index)`…) and
/// nameless C upvalues are skipped.
///
/// # Safety
/// In a protected call; `env` is a table's index below the value.
unsafe fn set_named(l: State, env: c_int, name: *const c_char) {
    unsafe {
        let bytes = CStr::from_ptr(name).to_bytes();
        if bytes.is_empty() || bytes[0] == b'(' {
            ffi::lua_pop(l, 1);
        } else {
            ffi::lua_setfield(l, env, name);
        }
    }
}

/// Ends an evaluation that runs past its deadline; marking the budget as spent keeps the
/// expression's own `pcall` from catching that (the mark is undone with the evaluation).
unsafe extern "C-unwind" fn eval_hook(l: State, _ar: *mut ffi::lua_Debug) {
    // SAFETY: called by Lua with a valid state; nothing owned is alive when it raises.
    unsafe {
        let Some(context) = vm::context(l) else {
            return;
        };
        if context
            .eval_deadline
            .get()
            .is_some_and(|d| Instant::now() >= d)
        {
            context.hit.set(Some(LimitHit::Timeout));
            ffi::lua_sethook(l, Some(eval_hook), ffi::LUA_MASKCOUNT, 1);
            ffi::lua_pushstring(l, c"the evaluation ran longer than 1 s".as_ptr());
            ffi::lua_error(l);
        }
    }
}

/// Copies the value at `idx` out, tables with their entries (within `budget` values and
/// [`MAX_DEPTH`] levels).
///
/// # Safety
/// `l` is a valid state with a few free slots; allocates nothing in it.
pub(super) unsafe fn show(l: State, idx: c_int, budget: &mut usize, depth: usize) -> Shown {
    unsafe {
        let idx = absolute(l, idx);
        let (value, type_name) = describe(l, idx);
        *budget = budget.saturating_sub(1);
        let children = (ffi::lua_type(l, idx) == ffi::LUA_TTABLE).then(|| {
            let mut children = Vec::new();
            if depth >= MAX_DEPTH || ffi::lua_checkstack(l, 4) == 0 {
                return children;
            }
            ffi::lua_pushnil(l);
            while ffi::lua_next(l, idx) != 0 {
                if *budget == 0 || children.len() == MAX_ENTRIES {
                    ffi::lua_pop(l, 2);
                    children.push(("…".to_owned(), not_shown()));
                    break;
                }
                let key = key_text(l, -2);
                let child = show(l, -1, budget, depth + 1);
                children.push((key, child));
                ffi::lua_pop(l, 1);
            }
            children
        });
        Shown {
            value,
            type_name,
            children,
        }
    }
}

fn not_shown() -> Shown {
    Shown {
        value: "(more entries not shown)".to_owned(),
        type_name: String::new(),
        children: None,
    }
}

/// An acceptable index as an absolute one.
///
/// # Safety
/// `idx` is a valid stack index.
unsafe fn absolute(l: State, idx: c_int) -> c_int {
    if idx < 0 && idx > ffi::LUA_REGISTRYINDEX {
        unsafe { ffi::lua_gettop(l) + idx + 1 }
    } else {
        idx
    }
}

/// How a table key reads as a variable's name: a string as it is, others in brackets.
///
/// # Safety
/// `idx` is a valid index.
pub(super) unsafe fn key_text(l: State, idx: c_int) -> String {
    unsafe {
        if ffi::lua_type(l, idx) == ffi::LUA_TSTRING {
            String::from_utf8_lossy(string_bytes(l, idx)).into_owned()
        } else {
            format!("[{}]", plain(l, idx))
        }
    }
}

/// The bytes of the string at `idx` (never a number: lua_tolstring would convert it).
///
/// # Safety
/// The value at `idx` is a string.
unsafe fn string_bytes<'s>(l: State, idx: c_int) -> &'s [u8] {
    unsafe {
        let mut len = 0;
        let p = ffi::lua_tolstring(l, idx, &mut len);
        std::slice::from_raw_parts(p.cast(), len)
    }
}

/// A value as `tostring` writes it, without calling metamethods or allocating.
///
/// # Safety
/// `idx` is a valid index.
unsafe fn plain(l: State, idx: c_int) -> String {
    unsafe {
        match ffi::lua_type(l, idx) {
            ffi::LUA_TNIL => "nil".to_owned(),
            ffi::LUA_TBOOLEAN if ffi::lua_toboolean(l, idx) != 0 => "true".to_owned(),
            ffi::LUA_TBOOLEAN => "false".to_owned(),
            ffi::LUA_TNUMBER => number_text(ffi::lua_tonumber(l, idx)),
            ffi::LUA_TSTRING => String::from_utf8_lossy(string_bytes(l, idx)).into_owned(),
            t => format!(
                "{}: {:p}",
                CStr::from_ptr(ffi::lua_typename(l, t)).to_string_lossy(),
                ffi::lua_topointer(l, idx)
            ),
        }
    }
}

/// A number as gopher-lua's `tostring` writes it.
pub(super) fn number_text(n: f64) -> String {
    let mut buffer = [0 as c_char; 64];
    // SAFETY: the buffer is larger than LUAI_MAXNUMBER2STR (32), which the function fits in.
    let len = unsafe { kruise_number2str(buffer.as_mut_ptr(), n) };
    let bytes: Vec<u8> = buffer[..len.max(0) as usize]
        .iter()
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// How a value reads in the debugger (strings quoted, tables with their size) and its type.
///
/// # Safety
/// `idx` is a valid index; the state has a free slot.
pub(super) unsafe fn describe(l: State, idx: c_int) -> (String, String) {
    unsafe {
        let t = ffi::lua_type(l, idx);
        let type_name = CStr::from_ptr(ffi::lua_typename(l, t))
            .to_string_lossy()
            .into_owned();
        let value = match t {
            ffi::LUA_TSTRING => {
                let bytes = string_bytes(l, idx);
                let cut = &bytes[..bytes.len().min(MAX_STRING)];
                let mut text =
                    serde_json::to_string(&String::from_utf8_lossy(cut)).unwrap_or_default();
                if cut.len() < bytes.len() {
                    text.push('…');
                }
                text
            }
            ffi::LUA_TTABLE => {
                let idx = absolute(l, idx);
                let mut entries = 0usize;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, idx) != 0 {
                    ffi::lua_pop(l, 1);
                    entries += 1;
                }
                match entries {
                    0 => "{}".to_owned(),
                    1 => "{…} (1 entry)".to_owned(),
                    n => format!("{{…}} ({n} entries)"),
                }
            }
            ffi::LUA_TFUNCTION => {
                let mut ar: ffi::lua_Debug = std::mem::zeroed();
                ffi::lua_pushvalue(l, idx);
                ffi::lua_getinfo(l, c">S".as_ptr(), &mut ar);
                if CStr::from_ptr(ar.what).to_bytes() == b"C" {
                    "builtin function".to_owned()
                } else {
                    format!("function (line {})", ar.linedefined)
                }
            }
            _ => plain(l, idx),
        };
        (value, type_name)
    }
}
