//! A fresh, sandboxed Lua 5.1 state per run, with the time and memory budget armed,
//! and execution of a chunk with its failure classified into an [`ErrorKind`].
//!
//! Two kinds of state share the budget hook and the per-run [`RunContext`]: [`Sandbox`], a
//! bare state driven through the C API (what the runner uses: creating one costs a few
//! microseconds, where an `mlua::Lua` costs a hundred), and [`new_state`], the same
//! environment as an `mlua::Lua` for callers and tests that want mlua's conversions.
//! Scripts are compiled once ([`compile`]) and their bytecode is loaded into each state. A
//! sandbox can also snapshot its whole memory and rewind to it after a run, which is how
//! the runner gives every run a fresh state without building one each time.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use mlua::chunk::ChunkMode;
use mlua::{Lua, LuaOptions, MultiValue, StdLib, ffi};

use crate::error::{ErrorKind, ScriptError};

mod arena;
use arena::{Arena, arena_alloc};
pub(crate) mod hooks;
use hooks::RunObserver;
mod traceback;
pub(crate) mod writes;
use traceback::traceback_handler;

/// A raw Lua state pointer, as the C API takes it.
pub(crate) type State = *mut ffi::lua_State;

/// VM instructions between two budget checks. One check (a registry read plus a clock read)
/// is well under a microsecond; 10000 instructions take ~100 µs, so a deadline is still seen
/// within a millisecond. Once a limit is hit the hook runs at every instruction.
pub(crate) const HOOK_INTERVAL: c_int = 10_000;

/// Bytes a [`Sandbox`] may allocate before its first garbage collection starts (at most a
/// sixteenth of its memory cap): short runs, the usual case, never pay for collection.
const GC_HEADROOM: usize = 4 << 20;

/// Message of the timeout error, as gopher-lua's (Go's `context.DeadlineExceeded`).
pub const DEADLINE_MESSAGE: &str = "context deadline exceeded";

/// Message of the memory-cap error (PUC Lua's own text for an allocation failure).
pub const MEMORY_MESSAGE: &str = "not enough memory";

/// Name of every script chunk, so that messages read `<string>:LINE:` as in gopher-lua.
const CHUNK_NAME: &std::ffi::CStr = c"=<string>";

unsafe extern "C-unwind" {
    /// Defined by the patched Lua in lua51-sys (lapi.c): non-zero once any allocation of
    /// the state has failed, i.e. the memory cap was reached.
    fn kruise_memerr(state: State) -> c_int;
    /// Defined by the patched Lua (lapi.c): the state never calls `__gc` finalizers.
    fn kruise_nofinalizers(state: State);
    // lua51-sys/csrc/kruise_host.c:
    /// The next collection starts `headroom` bytes from now.
    fn kruise_gc_delay(state: State, headroom: usize);
    /// Grows the string table to `size` slots at once.
    fn kruise_presize_strings(state: State, size: c_int);
    /// lua_load for bytecode dumped by this process, without re-verifying it.
    fn kruise_load_trusted(state: State, bytecode: *const c_char, size: usize) -> c_int;
    /// The lost tail calls above the frame at a call level (what `lua_getstack` counts as
    /// that many levels), for the traceback.
    fn kruise_lost_tail_calls(state: State, level: c_int) -> c_int;
}

/// String-table slots of a fresh sandbox: about what the libraries and a script intern
/// (fewer than 512 for the VirtualService step; Lua doubles the table past that).
const STRING_SLOTS: c_int = 512;

/// Hash slots of a fresh sandbox's globals table: enough for the environment's globals.
const GLOBAL_SLOTS: c_int = 64;

/// Loads bytecode made by [`compile`] (in this process) as `lua_load` would: 0 and the
/// function on the stack, or an error status and its message.
///
/// # Safety
/// `l` is a valid state with a free stack slot; `bytecode` came from [`compile`] or
/// [`compile_named`] (it is not verified again).
pub(crate) unsafe fn load_compiled(l: State, bytecode: &[u8]) -> c_int {
    unsafe { kruise_load_trusted(l, bytecode.as_ptr().cast(), bytecode.len()) }
}

/// Budget of one run. Defaults: 1 s (Kruise's timeout) and 64 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub timeout: Duration,
    pub memory_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(1),
            memory_bytes: 64 * 1024 * 1024,
        }
    }
}

/// Which budget a run has spent, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitHit {
    Timeout,
    Memory,
}

// lua51-sys/patches/gopher.patch (lapi.c): the function `^` and its constant folding use.
unsafe extern "C" {
    fn kruise_set_pow(state: State, pow: extern "C" fn(f64, f64) -> f64);
}

/// `^` as gopher-lua computes it: vm.go numberArith and compile.go constFold call Go's
/// math.Pow (`go::math::pow`), whose results differ from C's pow (`2 ^ -0.5`, `0.99 ^ 12345`).
extern "C" fn go_pow(x: f64, y: f64) -> f64 {
    crate::go::math::pow(x, y)
}

/// Makes `^` in state `l` (the VM and the compiler's constant folding) use Go's math.Pow.
pub(crate) fn use_go_pow(l: State) {
    // SAFETY: only stores the function pointer in the state's global block.
    unsafe { kruise_set_pow(l, go_pow) }
}

// ---------------------------------------------------------------------------------------
// The run context

/// What the budget hook and the library functions share about one run. It lives outside
/// the Lua state (its owner keeps it boxed, and drops it only after the state is gone);
/// the state's registry holds its address (see [`context`]).
#[derive(Debug, Default)]
pub(crate) struct RunContext {
    /// Whether the state runs under a budget (made by this module). Library code only
    /// marks and re-raises spent budgets in such states.
    pub(crate) budgeted: Cell<bool>,
    /// The budget the run has spent, once it has.
    pub(crate) hit: Cell<Option<LimitHit>>,
    /// The wall-clock deadline; `None` for states not made here (library calls that loop
    /// then use their own fallback budget).
    pub(crate) deadline: Cell<Option<Instant>>,
    /// The state (main thread), for reading the allocation-failure flag.
    main: Cell<Option<NonNull<ffi::lua_State>>>,
    /// Set when an xpcall handler raised: gopher-lua cannot recover from that (state.go,
    /// PCall: the error unwinds out of its deferred recovery, skipping the reset of its
    /// call stack), and the chunk ends at once with no value. Library functions that catch
    /// errors raise again while it is set; the run then ends as if the chunk returned
    /// nothing.
    pub(crate) abandoned: Cell<bool>,
    /// gopher-lua's traceback of the error that is ending the run (see [`traceback_handler`]).
    pub(crate) traceback: RefCell<Option<String>>,
    /// Output of `print`, one entry per call, and its total size in bytes.
    pub(crate) prints: RefCell<Vec<String>>,
    pub(crate) print_bytes: Cell<usize>,
    /// The observer of this run (see [`hooks`]): set only while an observed run executes.
    pub(crate) observer: Cell<Option<NonNull<dyn RunObserver>>>,
    /// When an observer's evaluation of an expression must end (the debugger's).
    pub(crate) eval_deadline: Cell<Option<Instant>>,
}

impl RunContext {
    fn new(budgeted: bool, deadline: Option<Instant>) -> Self {
        RunContext {
            budgeted: Cell::new(budgeted),
            deadline: Cell::new(deadline),
            ..RunContext::default()
        }
    }

    /// The spent budget; an allocation failure counts at once, even before the hook ran.
    pub(crate) fn limit_hit(&self) -> Option<LimitHit> {
        if self.hit.get().is_none()
            && let Some(main) = self.main.get()
            // SAFETY: `main` is the live state this context is registered in (the owner
            // is done with the state before dropping the context).
            && unsafe { kruise_memerr(main.as_ptr()) } != 0
        {
            self.hit.set(Some(LimitHit::Memory));
        }
        self.hit.get()
    }

    /// Takes what the script printed so far.
    pub(crate) fn take_prints(&self) -> Vec<String> {
        self.print_bytes.set(0);
        std::mem::take(&mut *self.prints.borrow_mut())
    }
}

/// The registry key of the context: the address of this static, as a light userdata.
static CONTEXT_KEY: u8 = 0;

fn context_key() -> *mut c_void {
    (&raw const CONTEXT_KEY).cast_mut().cast()
}

/// The registry key of a [`Sandbox`]'s [`finish_driver`] function.
static DRIVER_KEY: u8 = 0;

fn driver_key() -> *mut c_void {
    (&raw const DRIVER_KEY).cast_mut().cast()
}

/// The registry key of a [`Sandbox`]'s loaded script chunk (see [`Sandbox::load`]).
static CHUNK_KEY: u8 = 0;

fn chunk_key() -> *mut c_void {
    (&raw const CHUNK_KEY).cast_mut().cast()
}

/// The callback [`finish_driver`] runs: the state and the index of the returned value.
type Finisher<'a> = &'a mut dyn FnMut(State, c_int);

/// Runs the [`Finisher`] passed as light userdata (argument 2) on the value at argument 1,
/// inside the protected call `Sandbox::run` makes.
unsafe extern "C-unwind" fn finish_driver(l: State) -> c_int {
    // SAFETY: Sandbox::run passes a pointer to a live Finisher as argument 2.
    unsafe {
        let finisher = &mut *ffi::lua_touserdata(l, 2).cast::<Finisher<'_>>();
        finisher(l, 1);
    }
    0
}

/// Makes `context` the run context of `l`'s state.
///
/// # Safety
/// `l` is a valid state with 2 free stack slots, in a protected call (the registry store
/// may raise a memory error); `context` outlives the state.
unsafe fn register_context(l: State, context: &RunContext) {
    context.main.set(NonNull::new(l));
    unsafe {
        ffi::lua_pushlightuserdata(l, context_key());
        ffi::lua_pushlightuserdata(l, std::ptr::from_ref(context).cast_mut().cast());
        ffi::lua_rawset(l, ffi::LUA_REGISTRYINDEX);
    }
}

/// The run context of `l`'s state, when one is registered.
///
/// # Safety
/// `l` is a valid state with a free stack slot. The reference must not be kept past the
/// state's life (the context outlives the state, not longer).
pub(crate) unsafe fn context<'a>(l: State) -> Option<&'a RunContext> {
    unsafe {
        ffi::lua_pushlightuserdata(l, context_key());
        ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
        let found = ffi::lua_touserdata(l, -1).cast::<RunContext>().cast_const();
        ffi::lua_pop(l, 1);
        // SAFETY: only register_context stores under this key, with a live context.
        found.as_ref()
    }
}

/// The budget hook: once the deadline has passed or an allocation has failed, mark the
/// budget and raise, and keep raising on every later instruction so that pcall cannot keep
/// the script alive (like gopher-lua's context check after a caught error).
unsafe extern "C-unwind" fn budget_hook(l: State, ar: *mut ffi::lua_Debug) {
    // SAFETY: as check_budget requires.
    unsafe { check_budget(l, ar) }
}

/// What [`budget_hook`] does, for hooks that do more (see [`hooks`]).
///
/// # Safety
/// Called from a hook, with its valid state and activation record; a hook has
/// LUA_MINSTACK free slots.
pub(crate) unsafe fn check_budget(l: State, ar: *mut ffi::lua_Debug) {
    // SAFETY: see above.
    unsafe {
        let Some(context) = context(l) else { return };
        if context.hit.get().is_none() {
            if kruise_memerr(l) != 0 {
                context.hit.set(Some(LimitHit::Memory));
            } else if context.deadline.get().is_some_and(|d| Instant::now() >= d) {
                context.hit.set(Some(LimitHit::Timeout));
            }
        }
        let message = match context.hit.get() {
            None => return,
            Some(LimitHit::Timeout) => DEADLINE_MESSAGE,
            Some(LimitHit::Memory) => MEMORY_MESSAGE,
        };
        ffi::lua_sethook(l, Some(budget_hook), ffi::LUA_MASKCOUNT, 1);
        ffi::lua_getinfo(l, c"l".as_ptr(), ar);
        let line = (*ar).currentline;
        let text = if line >= 0 {
            format!("<string>:{line}: {message}")
        } else {
            message.to_owned()
        };
        ffi::lua_pushlstring(l, text.as_ptr().cast(), text.len());
        // lua_error does not return: free the text first.
        drop(text);
        ffi::lua_error(l);
    }
}

/// Arms the budget hook on `l` (the main thread: the sandbox opens no coroutine library).
///
/// # Safety
/// `l` is a valid state.
unsafe fn arm_hook(l: State) {
    unsafe { ffi::lua_sethook(l, Some(budget_hook), ffi::LUA_MASKCOUNT, HOOK_INTERVAL) };
}

/// Opens base, math, table and string as mlua's `Lua::new_with` + `load_std_libs` do
/// (base first, then in gopher's order), so that both kinds of state have the same globals
/// in the same insertion order (which `pairs(_G)` shows).
///
/// # Safety
/// `l` is a valid state, in a protected call.
unsafe fn open_libs(l: State) {
    let libs: [(&std::ffi::CStr, ffi::lua_CFunction); 4] = [
        (c"_G", ffi::luaopen_base),
        (c"math", ffi::luaopen_math),
        (c"table", ffi::luaopen_table),
        (c"string", ffi::luaopen_string),
    ];
    for (name, open) in libs {
        unsafe {
            ffi::luaL_requiref(l, name.as_ptr(), open, 1);
            ffi::lua_pop(l, 1);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Compiling once

/// Compiles `source` as a text chunk named `=<string>` and returns its bytecode (with
/// debug information, so that messages and line numbers are those of the source), or
/// the syntax error. Binary chunks are refused, as scripts may only be text.
pub fn compile(source: &[u8]) -> Result<Vec<u8>, ScriptError> {
    compile_named(source, CHUNK_NAME)
}

/// [`compile`] with another chunk name (the engine's own Lua helpers have theirs).
pub(crate) fn compile_named(source: &[u8], name: &std::ffi::CStr) -> Result<Vec<u8>, ScriptError> {
    kruise_lua51_sys::link();
    if source.first() == Some(&0x1b) {
        return Err(ScriptError::new(
            ErrorKind::Syntax,
            "attempt to load a binary chunk (mode is 't')",
        ));
    }
    /// Appends a piece of the dump to the Vec<u8> behind `ud`.
    unsafe extern "C-unwind" fn write(
        _l: State,
        piece: *const c_void,
        size: usize,
        ud: *mut c_void,
    ) -> c_int {
        // SAFETY: `ud` is the Vec passed to lua_dump below; `piece` holds `size` bytes.
        unsafe {
            let out = &mut *ud.cast::<Vec<u8>>();
            out.extend_from_slice(std::slice::from_raw_parts(piece.cast::<u8>(), size));
        }
        0
    }
    // SAFETY: a private state, closed before returning; loadbuffer is a protected call
    // and lua_dump allocates nothing in the state.
    unsafe {
        let l = ffi::luaL_newstate();
        if l.is_null() {
            return Err(ScriptError::new(ErrorKind::Memory, MEMORY_MESSAGE));
        }
        // Constant folding of `^` computes as Go does.
        use_go_pow(l);
        let status = ffi::luaL_loadbuffer(l, source.as_ptr().cast(), source.len(), name.as_ptr());
        let result = if status == 0 {
            let mut bytecode = Vec::with_capacity(source.len());
            ffi::lua_dump_(l, write, (&raw mut bytecode).cast());
            Ok(trusted_format(&bytecode))
        } else {
            let message = error_text(l, -1);
            let kind = if status == ffi::LUA_ERRMEM {
                ErrorKind::Memory
            } else {
                ErrorKind::Syntax
            };
            let line = script_line(&message);
            Err(ScriptError::new(kind, message).at_line(line))
        };
        ffi::lua_close(l);
        result
    }
}

/// Rewrites `lua_dump` output into the layout `kruise_load_trusted` reads (see
/// `lua51-sys/csrc/kruise_host.c`): the same, except that the chunk's distinct strings come
/// first (`int` count, then each as `size_t` length and bytes) and every string in the
/// functions is an `int` index into them (-1: none), so that a state interns each name once.
fn trusted_format(dump: &[u8]) -> Vec<u8> {
    /// Size of lua_dump's header (LUAC_HEADERSIZE).
    const HEADER: usize = 12;
    const INT: usize = std::mem::size_of::<c_int>();
    const SIZE_T: usize = std::mem::size_of::<usize>();

    struct Rewrite<'a> {
        dump: &'a [u8],
        at: usize,
        body: Vec<u8>,
        strings: Vec<&'a [u8]>,
        index: std::collections::HashMap<&'a [u8], c_int>,
    }

    impl<'a> Rewrite<'a> {
        fn copy(&mut self, n: usize) -> &'a [u8] {
            let piece = &self.dump[self.at..self.at + n];
            self.at += n;
            self.body.extend_from_slice(piece);
            piece
        }
        fn int(&mut self) -> usize {
            let piece = self.copy(INT);
            c_int::from_ne_bytes(piece.try_into().expect("an int")) as usize
        }
        fn string(&mut self) {
            let size = usize::from_ne_bytes(
                self.dump[self.at..self.at + SIZE_T]
                    .try_into()
                    .expect("a size_t"),
            );
            self.at += SIZE_T;
            let index = if size == 0 {
                -1
            } else {
                // Without the trailing NUL that lua_dump writes.
                let bytes = &self.dump[self.at..self.at + size - 1];
                self.at += size;
                let next = self.strings.len() as c_int;
                *self.index.entry(bytes).or_insert_with(|| {
                    self.strings.push(bytes);
                    next
                })
            };
            self.body.extend_from_slice(&index.to_ne_bytes());
        }
        fn function(&mut self) {
            self.string(); // source
            self.copy(2 * INT + 4); // line range, nups, numparams, is_vararg, maxstacksize
            let code = self.int();
            self.copy(code * 4);
            for _ in 0..self.int() {
                match self.copy(1)[0] as c_int {
                    ffi::LUA_TNIL => {}
                    ffi::LUA_TBOOLEAN => {
                        self.copy(1);
                    }
                    ffi::LUA_TNUMBER => {
                        self.copy(std::mem::size_of::<f64>());
                    }
                    ffi::LUA_TSTRING => self.string(),
                    other => unreachable!("lua_dump wrote constant type {other}"),
                }
            }
            for _ in 0..self.int() {
                self.function();
            }
            let lines = self.int();
            self.copy(lines * INT);
            for _ in 0..self.int() {
                self.string();
                self.copy(2 * INT);
            }
            for _ in 0..self.int() {
                self.string();
            }
        }
    }

    let mut rewrite = Rewrite {
        dump,
        at: HEADER,
        body: Vec::with_capacity(dump.len()),
        strings: Vec::new(),
        index: std::collections::HashMap::new(),
    };
    rewrite.function();
    assert_eq!(
        rewrite.at,
        dump.len(),
        "lua_dump's output is read to its end"
    );
    let mut out = Vec::with_capacity(dump.len());
    out.extend_from_slice(&dump[..HEADER]);
    out.extend_from_slice(&(rewrite.strings.len() as c_int).to_ne_bytes());
    for bytes in &rewrite.strings {
        out.extend_from_slice(&bytes.len().to_ne_bytes());
        out.extend_from_slice(bytes);
    }
    out.extend_from_slice(&rewrite.body);
    out
}

/// The text of the error value at `idx`: strings and numbers as they are, other values
/// as `tostring` shows them (`nil`, `table: 0x…`).
///
/// # Safety
/// `l` is a valid state and `idx` an acceptable index.
pub(crate) unsafe fn error_text(l: State, idx: c_int) -> String {
    unsafe {
        match ffi::lua_type(l, idx) {
            ffi::LUA_TSTRING | ffi::LUA_TNUMBER => {
                let mut len = 0;
                let p = ffi::lua_tolstring(l, idx, &mut len);
                String::from_utf8_lossy(std::slice::from_raw_parts(p.cast(), len)).into_owned()
            }
            ffi::LUA_TNIL => "nil".to_owned(),
            ffi::LUA_TBOOLEAN if ffi::lua_toboolean(l, idx) != 0 => "true".to_owned(),
            ffi::LUA_TBOOLEAN => "false".to_owned(),
            t => {
                let name = std::ffi::CStr::from_ptr(ffi::lua_typename(l, t)).to_string_lossy();
                format!("{name}: {:p}", ffi::lua_topointer(l, idx))
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The bare state

/// A fresh Lua state opened as Kruise opens it (math, base, table, string; `stdlib` and
/// `json` install the rest), with the deadline and memory cap of its [`Limits`] armed from
/// creation on. It is driven through the C API: see [`Sandbox::protected`] and
/// [`Sandbox::run`]. Dropping it releases the state's memory at once (see `arena`).
pub struct Sandbox {
    state: NonNull<ffi::lua_State>,
    context: Box<RunContext>,
    /// Every block of the state (from `Box::into_raw`; freed on drop, with the state).
    arena: *mut Arena,
}

impl Sandbox {
    pub fn new(limits: &Limits) -> Result<Sandbox, String> {
        // Keeps the patched Lua (lua51-sys) in the link: mlua-sys's `external` build expects it.
        kruise_lua51_sys::link();
        let arena = Box::into_raw(Box::new(Arena::new(limits.memory_bytes)));
        // SAFETY: the allocator's user data lives until Drop.
        let state = unsafe { ffi::lua_newstate(arena_alloc, arena.cast()) };
        let Some(state) = NonNull::new(state) else {
            // SAFETY: no state holds the pointer.
            drop(unsafe { Box::from_raw(arena) });
            return Err(MEMORY_MESSAGE.to_owned());
        };
        // SAFETY: the arena is alive (owned by the sandbox from here on).
        unsafe { (*arena).serve(state.as_ptr()) };
        let sandbox = Sandbox {
            state,
            context: Box::new(RunContext::new(true, Some(Instant::now() + limits.timeout))),
            arena,
        };
        // No collection while the environment is built (everything built stays referenced);
        // `start_collector` sets the first collection's threshold.
        // SAFETY: valid state; GCSTOP cannot fail.
        unsafe { ffi::lua_gc(sandbox.state(), ffi::LUA_GCSTOP, 0) };
        // A script's own finalizer (newproxy + __gc) runs with hooks off, out of the
        // deadline's reach; gopher-lua calls none, and nothing in a sandbox needs one.
        // SAFETY: valid state; only sets a flag.
        unsafe { kruise_nofinalizers(sandbox.state()) };
        use_go_pow(sandbox.state());
        let context: &RunContext = &sandbox.context;
        let context: *const RunContext = context;
        sandbox.protected(|l| {
            // SAFETY: inside a protected call with LUA_MINSTACK slots; the context is boxed
            // in the sandbox and outlives its state.
            unsafe {
                // Sized up front: growing them step by step rehashes every entry each time
                // (the globals' iteration order does not depend on the table's size).
                kruise_presize_strings(l, STRING_SLOTS);
                ffi::lua_createtable(l, 0, GLOBAL_SLOTS);
                ffi::lua_pushvalue(l, -1);
                ffi::lua_replace(l, ffi::LUA_GLOBALSINDEX);
                // Also the environment of this call, which the C functions created below
                // inherit (as they inherit the globals in an mlua state).
                ffi::lua_replace(l, ffi::LUA_ENVIRONINDEX);
                open_libs(l);
                register_context(l, &*context);
                ffi::lua_pushlightuserdata(l, driver_key());
                ffi::lua_pushcfunction(l, finish_driver);
                ffi::lua_rawset(l, ffi::LUA_REGISTRYINDEX);
                arm_hook(l);
            }
        })?;
        Ok(sandbox)
    }

    /// The state, for the C API. Valid as long as the sandbox.
    pub(crate) fn state(&self) -> State {
        self.state.as_ptr()
    }

    /// Runs `f` on the state in a protected call (`lua_cpcall`). A Lua error raised inside
    /// (e.g. a memory error) ends the call and is returned as its message.
    ///
    /// A Lua error unwinds with `longjmp` past `f`'s frames without running destructors:
    /// `f` may only own values whose leak is harmless when it calls a raising API function.
    pub(crate) fn protected<F: FnOnce(State)>(&self, f: F) -> Result<(), String> {
        unsafe extern "C-unwind" fn trampoline<F: FnOnce(State)>(l: State) -> c_int {
            // SAFETY: lua_cpcall passes the light userdata given below as argument 1.
            unsafe {
                let slot = ffi::lua_touserdata(l, 1).cast::<Option<F>>();
                ffi::lua_settop(l, 0);
                if let Some(f) = (*slot).take() {
                    f(l);
                }
            }
            0
        }
        let mut slot = Some(f);
        let l = self.state();
        // SAFETY: `slot` outlives the call; the trampoline takes the closure out of it.
        unsafe {
            if ffi::lua_cpcall(l, trampoline::<F>, (&raw mut slot).cast()) == 0 {
                return Ok(());
            }
            let message = error_text(l, -1);
            ffi::lua_pop(l, 1);
            Err(message)
        }
    }

    /// Lets the collector run, from `GC_HEADROOM` bytes on (less under a small memory cap).
    pub(crate) fn start_collector(&self) {
        // SAFETY: the arena lives as long as the sandbox; the state is valid.
        unsafe {
            let limit = (*self.arena).limit();
            let headroom = if limit == 0 {
                GC_HEADROOM
            } else {
                GC_HEADROOM.min(limit / 16)
            };
            kruise_gc_delay(self.state(), headroom);
        }
    }

    /// Loads bytecode made by [`compile`] in this process as the chunk [`Self::run`] runs
    /// (kept in the registry). Fails only when the memory cap is reached.
    pub(crate) fn load(&self, bytecode: &[u8]) -> Result<(), ScriptError> {
        self.protected(|l| {
            // SAFETY: a protected call with LUA_MINSTACK slots; only the engine loads
            // bytecode (scripts cannot: see `compile` and stdlib).
            unsafe {
                ffi::lua_pushlightuserdata(l, chunk_key());
                if load_compiled(l, bytecode) != 0 {
                    ffi::lua_error(l);
                }
                ffi::lua_rawset(l, ffi::LUA_REGISTRYINDEX);
            }
        })
        .map_err(|message| self.classify(ErrorKind::Syntax, message))
    }

    /// Records the whole state as it is now, for [`Self::rewind`] (once per sandbox). Taken
    /// with an empty stack and the collector stopped (before `start_collector`).
    pub(crate) fn snapshot(&mut self) {
        // SAFETY: the state is idle; its every block is in the arena.
        unsafe {
            ffi::lua_settop(self.state(), 0);
            (*self.arena).take_snapshot();
        }
    }

    /// Brings the state back, byte for byte, to the last [`Self::snapshot`]: whatever a run
    /// did since (globals, library tables, metatables, interned strings, memory use, a
    /// spent budget's flags in the VM) is gone, as in a state made afresh.
    pub(crate) fn rewind(&mut self) {
        // SAFETY: between runs, so nothing refers to blocks made since the snapshot (the
        // state itself and the context's pointer to it are in the image).
        unsafe { (*self.arena).rewind() };
    }

    /// Starts a run's budget: the deadline is `timeout` from now; no limit is spent and
    /// nothing printed yet.
    pub(crate) fn begin_run(&self, timeout: Duration) {
        self.context.deadline.set(Some(Instant::now() + timeout));
        self.context.hit.set(None);
        self.context.abandoned.set(false);
        self.context.traceback.take();
        self.context.take_prints();
        // SAFETY: the arena lives as long as the sandbox; no allocation runs meanwhile.
        unsafe { (*self.arena).clear_failure() };
    }

    /// Runs the chunk [`Self::load`] loaded, and hands the last value it returned
    /// (`nil` when none: Kruise takes the top of the stack) to `finish` as the state and
    /// that value's stack index, inside a protected call; or hands it the error classified
    /// as syntax / runtime (with line) / timeout / memory.
    ///
    /// `finish` may run twice: when the protected call fails (a memory error while it reads
    /// the value, or a Rust panic), it is called again with that error. Rust panics in
    /// library code become runtime errors.
    pub(crate) fn run<T>(
        &self,
        mut finish: impl FnMut(Result<(State, c_int), ScriptError>) -> T,
    ) -> T {
        let l = self.state();
        let mut output = None;
        let ran = catch_unwind(AssertUnwindSafe(|| {
            self.exec()?;
            // SAFETY: exec left [driver, results...] on the stack (LUA_MINSTACK slots free
            // after settop); the finisher lives across the protected call.
            unsafe {
                if ffi::lua_gettop(l) > 2 {
                    ffi::lua_replace(l, 2);
                }
                ffi::lua_settop(l, 2);
                let mut callback = |l: State, idx: c_int| output = Some(finish(Ok((l, idx))));
                let mut finisher: Finisher<'_> = &mut callback;
                ffi::lua_pushlightuserdata(l, (&raw mut finisher).cast());
                if ffi::lua_pcall(l, 2, 0, 0) != 0 {
                    return Err(self.failure(ErrorKind::Runtime));
                }
            }
            Ok(())
        }));
        let error = match ran {
            Ok(Ok(())) => None,
            Ok(Err(error)) => Some(error),
            Err(panic) => Some(self.classify(
                ErrorKind::Runtime,
                format!("internal error: {}", panic_text(&*panic)),
            )),
        };
        // SAFETY: valid state.
        unsafe { ffi::lua_settop(l, 0) };
        match (output, error) {
            (Some(output), None) => output,
            (_, Some(error)) => finish(Err(error)),
            (None, None) => unreachable!("the finisher ran when the call succeeded"),
        }
    }

    /// Runs the loaded chunk as mlua's `Function::call` would: slot 1 holds the finish
    /// driver where mlua keeps its message handler, the chunk sits in slot 2 (this matters:
    /// the patched VM's value-stack limit counts slots from the bottom). On success the
    /// results follow the driver.
    fn exec(&self) -> Result<(), ScriptError> {
        let l = self.state();
        // SAFETY: valid state with LUA_MINSTACK free slots at the base level; the driver is
        // in the registry since `new`, the chunk since `load` (reading them allocates
        // nothing); pcall is a protected call.
        unsafe {
            ffi::lua_settop(l, 0);
            // The message handler holds slot 1 during the run, the driver afterwards.
            ffi::lua_pushcfunction(l, traceback_handler);
            ffi::lua_pushlightuserdata(l, chunk_key());
            ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
            let status = ffi::lua_pcall(l, 0, ffi::LUA_MULTRET, 1);
            if status != 0 {
                if !self.abandoned() {
                    let traceback = self.context.traceback.take();
                    let mut error = self.failure(ErrorKind::Runtime);
                    // A message without position (`error({})`, `error(m, 0)`): the line of
                    // the first Lua frame of the traceback is still where it was raised.
                    if error.line.is_none() {
                        error.line = traceback.as_deref().and_then(script_line);
                    }
                    return Err(error.with_traceback(traceback));
                }
                // The chunk ended with no value: only the handler stays.
                ffi::lua_settop(l, 1);
            }
            ffi::lua_pushlightuserdata(l, driver_key());
            ffi::lua_rawget(l, ffi::LUA_REGISTRYINDEX);
            ffi::lua_replace(l, 1);
        }
        // A script that caught the memory error and finished anyway may have computed
        // its result from that error: the run still ends on the memory cap.
        if self.limit_hit() == Some(LimitHit::Memory) {
            return Err(self.classify(ErrorKind::Memory, MEMORY_MESSAGE.to_owned()));
        }
        Ok(())
    }

    /// Pops the error value and classifies it.
    ///
    /// # Safety
    /// The error value is on top of the stack.
    unsafe fn failure(&self, default: ErrorKind) -> ScriptError {
        let l = self.state();
        // SAFETY: see above.
        let message = unsafe {
            let message = error_text(l, -1);
            ffi::lua_pop(l, 1);
            message
        };
        self.classify(default, message)
    }

    /// Whether an xpcall handler's error ended the chunk (see [`RunContext::abandoned`]); a
    /// spent budget takes precedence.
    fn abandoned(&self) -> bool {
        self.context.abandoned.get() && self.limit_hit().is_none()
    }

    /// The error of a failed run: the spent budget decides the kind when there is one. A
    /// memory error without a position gets the script line where the cap refused an
    /// allocation, as a timeout gets the line the hook stopped at (`<string>:LINE: …`).
    fn classify(&self, default: ErrorKind, message: String) -> ScriptError {
        let limit = self.limit_hit();
        // SAFETY: the arena lives as long as the sandbox.
        let failed_line = unsafe { (*self.arena).failed_line() };
        let message = match (limit, failed_line) {
            (Some(LimitHit::Memory), Some(line)) if script_line(&message).is_none() => {
                format!("<string>:{line}: {message}")
            }
            _ => message,
        };
        classified(limit, default, message)
    }

    /// `Some` once the run has spent its time or memory budget.
    pub fn limit_hit(&self) -> Option<LimitHit> {
        self.context.limit_hit()
    }

    /// Takes what the script printed so far, one entry per `print` call.
    pub fn take_prints(&self) -> Vec<String> {
        self.context.take_prints()
    }

    /// The run context, for an observer (see [`hooks`]).
    pub(crate) fn run_context(&self) -> &RunContext {
        &self.context
    }

    /// Records the whole state, for [`Self::restore_checkpoint`]: the debugger evaluates
    /// expressions in between, and the rewind undoes whatever they did. Only for a sandbox
    /// that keeps no snapshot of its own (not a prepared one: see `runner::prepared`).
    ///
    /// # Safety
    /// No block of the state is being written (the state is stopped in a hook or message
    /// handler, and the caller touches it only through the C API).
    pub(crate) unsafe fn checkpoint(&self) {
        // SAFETY: see above; the arena lives as long as the sandbox.
        unsafe { (*self.arena).take_snapshot() }
    }

    /// Brings the state back, byte for byte, to the last [`Self::checkpoint`] and forgets
    /// it. Blocks that existed then kept their addresses, so the C frames of the stopped
    /// run (which point into them) find their state as they left it.
    ///
    /// # Safety
    /// Nothing made since the checkpoint is used afterwards (values read from the state
    /// must have been copied out).
    pub(crate) unsafe fn restore_checkpoint(&self) {
        // SAFETY: see above.
        unsafe {
            (*self.arena).rewind();
            (*self.arena).forget_snapshot();
        }
    }
}

// SAFETY: a Lua state belongs to no thread; a sandbox is used by one thread at a time (its
// methods need it borrowed, and it is not Sync), and no block of it is shared elsewhere.
unsafe impl Send for Sandbox {}

impl Drop for Sandbox {
    fn drop(&mut self) {
        // The state is not closed: everything it holds is in the arena, released at once.
        // (Closing would also run `__gc` finalizers of `newproxy` objects, which gopher-lua
        // does not have, and whose output would be lost anyway.)
        // SAFETY: nothing uses the state after this; the context outlives the arena.
        drop(unsafe { Box::from_raw(self.arena) });
    }
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string())
}

// ---------------------------------------------------------------------------------------
// The same environment as an mlua::Lua

/// App data of an mlua state that owns its run context.
struct ContextOwner(Box<RunContext>);

/// Gives `lua` a run context unless it has one: with a budget and its deadline when
/// `deadline` is given, else without a budget (only the print log).
pub(crate) fn ensure_context(lua: &Lua, deadline: Option<Instant>) -> mlua::Result<()> {
    if lua.app_data_ref::<ContextOwner>().is_some() {
        return Ok(());
    }
    let context = Box::new(RunContext::new(deadline.is_some(), deadline));
    let address: *const RunContext = &*context;
    lua.set_app_data(ContextOwner(context));
    // SAFETY: the box lives in the app data, which mlua drops after closing the state;
    // exec_raw makes a protected call with enough stack.
    unsafe { lua.exec_raw::<()>((), |l| register_context(l, &*address)) }
}

/// Runs `f` with the run context of `lua`, if it has one.
pub(crate) fn with_context<T>(lua: &Lua, f: impl FnOnce(&RunContext) -> T) -> Option<T> {
    lua.app_data_ref::<ContextOwner>().map(|owner| f(&owner.0))
}

/// Creates an `mlua::Lua` opened as a [`Sandbox`] is (math, base, table, string; the `json`
/// module and gopher-lua's library differences are installed by `stdlib`/`json`), with the
/// deadline and memory cap of `limits` armed from now on.
pub fn new_state(limits: &Limits) -> mlua::Result<Lua> {
    kruise_lua51_sys::link();
    // mlua always opens the base library first; math, table and string follow in gopher's
    // order (io, os, package and debug stay closed).
    let lua = Lua::new_with(StdLib::NONE, LuaOptions::new())?;
    for lib in [StdLib::MATH, StdLib::TABLE, StdLib::STRING] {
        lua.load_std_libs(lib)?;
    }
    lua.set_memory_limit(limits.memory_bytes)?;
    ensure_context(&lua, Some(Instant::now() + limits.timeout))?;
    // SAFETY: sets the hook of the main thread; the hook only reads the registered context.
    unsafe { lua.exec_raw::<()>((), |l| arm_hook(l))? };
    Ok(lua)
}

/// `Some` once the run in `lua` has spent its time or memory budget. Library code that
/// catches errors (pcall, xpcall) uses this to re-raise instead of swallowing the limit.
pub fn limit_hit(lua: &Lua) -> Option<LimitHit> {
    with_context(lua, RunContext::limit_hit).flatten()
}

/// Loads `source` as a text chunk named `=<string>` (so messages read `<string>:LINE:` as in
/// gopher-lua) and runs it, returning every value it returned, or the error classified as
/// syntax / runtime (with line) / timeout / memory.
pub fn exec_chunk(lua: &Lua, source: &[u8]) -> Result<MultiValue, ScriptError> {
    match catch_unwind(AssertUnwindSafe(|| run_chunk(lua, source))) {
        Ok(result) => result,
        Err(panic) => Err(classify(
            lua,
            ErrorKind::Runtime,
            format!("internal error: {}", panic_text(&*panic)),
        )),
    }
}

fn run_chunk(lua: &Lua, source: &[u8]) -> Result<MultiValue, ScriptError> {
    let function = lua
        .load(source)
        .set_name("=<string>")
        .set_mode(ChunkMode::Text)
        .into_function()
        .map_err(|e| classify(lua, ErrorKind::Syntax, error_message(&e)))?;
    let values = match function.call::<MultiValue>(()) {
        Ok(values) => values,
        // An xpcall handler's error ended the chunk with no value (RunContext::abandoned).
        Err(_)
            if limit_hit(lua).is_none()
                && with_context(lua, |c| c.abandoned.get()).unwrap_or(false) =>
        {
            MultiValue::new()
        }
        Err(e) => return Err(classify(lua, ErrorKind::Runtime, error_message(&e))),
    };
    // As in Sandbox::exec: a caught memory error still ends the run.
    if limit_hit(lua) == Some(LimitHit::Memory) {
        return Err(ScriptError::new(ErrorKind::Memory, MEMORY_MESSAGE));
    }
    Ok(values)
}

/// The error of a failed run: the spent budget decides the kind when there is one (the
/// allocator flag is read too, in case no hook ran after the failed allocation).
fn classify(lua: &Lua, default: ErrorKind, message: String) -> ScriptError {
    classified(limit_hit(lua), default, message)
}

/// A failed run's error: a spent budget decides the kind, else `default`; the line comes
/// from the message.
fn classified(limit: Option<LimitHit>, default: ErrorKind, message: String) -> ScriptError {
    let kind = match limit {
        Some(LimitHit::Timeout) => ErrorKind::Timeout,
        Some(LimitHit::Memory) => ErrorKind::Memory,
        None => default,
    };
    let line = script_line(&message);
    ScriptError::new(kind, message).at_line(line)
}

/// The message of an mlua error, without mlua's wrapping of errors raised in callbacks.
fn error_message(error: &mlua::Error) -> String {
    match error {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(message) => message.clone(),
        mlua::Error::MemoryError(message) => message.clone(),
        mlua::Error::CallbackError { cause, .. } => error_message(cause),
        mlua::Error::WithContext { cause, .. } => error_message(cause),
        other => other.to_string(),
    }
}

/// The line of the first `<string>:N:` in a message.
pub fn script_line(message: &str) -> Option<u32> {
    const PREFIX: &str = "<string>:";
    let mut rest = message;
    while let Some(at) = rest.find(PREFIX) {
        rest = &rest[at + PREFIX.len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(':') {
            return rest[..digits].parse().ok();
        }
    }
    None
}

#[cfg(test)]
mod tests;
