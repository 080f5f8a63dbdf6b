//! What a debugger can ask while the run is stopped: stack frames, scopes, variables with
//! lazily expanded tables (variable references, valid until the run resumes), evaluation
//! and setting a variable.
//!
//! A table is referred to by where it is reached from (a local, an upvalue, the globals or
//! `obj`) and the positions of the entries leading to it in `next` order, which stays the
//! same while the run is stopped: looking it up again allocates nothing in the state.

use std::ffi::{CStr, c_int};

use mlua::ffi;

use super::eval::{self, MAX_ENTRIES, SCRIPT_SOURCE, Shown};
use crate::vm::{Sandbox, State};

/// Stack frames listed, at most.
const MAX_FRAMES: c_int = 200;

/// One stack frame, innermost first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The function's name as its caller calls it, `main chunk`, or `function <line N>`.
    pub name: String,
    /// The script line it is at; `None` for a library function.
    pub line: Option<u32>,
}

/// A scope of a frame: `Locals`, `Upvalues`, `obj`, `Globals`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    pub name: String,
    /// The variable reference that lists its variables.
    pub reference: u32,
}

/// A variable (or an evaluated value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    pub name: String,
    /// How it reads: strings quoted, tables as `{…} (N entries)`.
    pub value: String,
    pub type_name: String,
    /// Lists its entries when it is a table; 0 otherwise.
    pub reference: u32,
}

/// Where a table variable is reached from.
#[derive(Debug, Clone, Copy)]
enum Root {
    Local { level: c_int, n: c_int },
    Upvalue { level: c_int, n: c_int },
    Globals,
    Obj,
}

/// What a variable reference lists.
#[derive(Debug, Clone)]
enum Container {
    Locals(c_int),
    Upvalues(c_int),
    /// The table at `root`, then at each position of `path` in turn.
    Table {
        root: Root,
        path: Vec<usize>,
    },
    /// The entries of an evaluated table (copied out: the evaluation was undone).
    Copied(Vec<(String, Shown)>),
}

/// The run, stopped: valid during [`super::Debugger::stopped`].
pub struct Paused<'a> {
    l: State,
    sandbox: &'a Sandbox,
    /// The level of the innermost frame shown (1 in the message handler).
    base: c_int,
    containers: Vec<Container>,
}

impl<'a> Paused<'a> {
    pub(super) fn new(l: State, sandbox: &'a Sandbox, base: c_int) -> Paused<'a> {
        Paused {
            l,
            sandbox,
            base,
            containers: Vec::new(),
        }
    }

    fn register(&mut self, container: Container) -> u32 {
        self.containers.push(container);
        self.containers.len() as u32
    }

    /// The frame `frame` (0: innermost) as a call level, when it exists.
    fn level(&self, frame: usize) -> Result<(c_int, ffi::lua_Debug), String> {
        let level = self.base + c_int::try_from(frame).map_err(|_| "no such frame")?;
        // SAFETY: lua_getstack only reads call records into plain data.
        let mut ar: ffi::lua_Debug = unsafe { std::mem::zeroed() };
        if level >= self.base + MAX_FRAMES
            || unsafe { ffi::lua_getstack(self.l, level, &mut ar) } == 0
        {
            return Err(format!("no frame {frame}"));
        }
        Ok((level, ar))
    }

    /// The call stack, innermost first.
    pub fn frames(&self) -> Vec<Frame> {
        let mut frames = Vec::new();
        let mut frame = 0;
        while let Ok((_, mut ar)) = self.level(frame) {
            // SAFETY: `ar` comes from lua_getstack; getinfo sets NUL-terminated strings.
            let (what, source, name) = unsafe {
                ffi::lua_getinfo(self.l, c"Snl".as_ptr(), &mut ar);
                let text = |p: *const std::ffi::c_char| {
                    (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
                };
                (text(ar.what), text(ar.source), text(ar.name))
            };
            let script = source.as_deref().map(str::as_bytes) == Some(SCRIPT_SOURCE);
            let name = match (what.as_deref(), name) {
                (Some("main"), _) => "main chunk".to_owned(),
                (_, Some(name)) if !name.is_empty() => name,
                (Some("C"), _) => "?".to_owned(),
                _ => format!("function <line {}>", ar.linedefined),
            };
            frames.push(Frame {
                name,
                line: (script && ar.currentline > 0).then_some(ar.currentline as u32),
            });
            frame += 1;
        }
        frames
    }

    /// The scopes of frame `frame`.
    pub fn scopes(&mut self, frame: usize) -> Result<Vec<Scope>, String> {
        let (level, mut ar) = self.level(frame)?;
        // SAFETY: as in `frames`.
        let upvalues = unsafe {
            ffi::lua_getinfo(self.l, c"u".as_ptr(), &mut ar);
            ar.nups
        };
        let mut scopes = vec![Scope {
            name: "Locals".to_owned(),
            reference: self.register(Container::Locals(level)),
        }];
        if upvalues > 0 {
            scopes.push(Scope {
                name: "Upvalues".to_owned(),
                reference: self.register(Container::Upvalues(level)),
            });
        }
        for (name, root) in [("obj", Root::Obj), ("Globals", Root::Globals)] {
            let reference = self.register(Container::Table {
                root,
                path: Vec::new(),
            });
            scopes.push(Scope {
                name: name.to_owned(),
                reference,
            });
        }
        Ok(scopes)
    }

    fn container(&self, reference: u32) -> Result<Container, String> {
        (reference as usize)
            .checked_sub(1)
            .and_then(|index| self.containers.get(index))
            .cloned()
            .ok_or_else(|| {
                format!("no variable reference {reference} (they last until the run resumes)")
            })
    }

    /// The variables `reference` lists.
    pub fn variables(&mut self, reference: u32) -> Result<Vec<Variable>, String> {
        let l = self.l;
        let mut found: Vec<(Variable, Option<Container>)> = Vec::new();
        // SAFETY: the state is stopped; every read below leaves the stack as it found it
        // and allocates nothing in the state.
        unsafe {
            if ffi::lua_checkstack(l, 8) == 0 {
                return Err("no stack space left".to_owned());
            }
            match self.container(reference)? {
                Container::Locals(level) => {
                    let ar = stack_record(l, level)?;
                    let mut n = 1;
                    while let Some(name) = name_of(ffi::lua_getlocal(l, &ar, n)) {
                        if !name.starts_with('(') {
                            let root = Root::Local { level, n };
                            found.push(variable(l, name, Some(root), Vec::new()));
                        }
                        ffi::lua_pop(l, 1);
                        n += 1;
                    }
                }
                Container::Upvalues(level) => {
                    let mut ar = stack_record(l, level)?;
                    ffi::lua_getinfo(l, c"f".as_ptr(), &mut ar);
                    let mut n = 1;
                    while let Some(name) = name_of(ffi::lua_getupvalue(l, -1, n)) {
                        let root = Root::Upvalue { level, n };
                        found.push(variable(l, name, Some(root), Vec::new()));
                        ffi::lua_pop(l, 1);
                        n += 1;
                    }
                    ffi::lua_pop(l, 1);
                }
                Container::Table { root, path } => {
                    push_table(l, root, &path)?;
                    let mut position = 0;
                    ffi::lua_pushnil(l);
                    while ffi::lua_next(l, -2) != 0 {
                        if position == MAX_ENTRIES {
                            ffi::lua_pop(l, 2);
                            break;
                        }
                        let name = eval::key_text(l, -2);
                        let mut child = path.clone();
                        child.push(position);
                        found.push(variable(l, name, Some(root), child));
                        ffi::lua_pop(l, 1);
                        position += 1;
                    }
                    ffi::lua_pop(l, 1);
                }
                Container::Copied(entries) => {
                    for (name, shown) in entries {
                        let container = shown.children.clone().map(Container::Copied);
                        found.push((copied_variable(name, shown), container));
                    }
                }
            }
        }
        Ok(found
            .into_iter()
            .map(|(mut variable, container)| {
                if let Some(container) = container {
                    variable.reference = self.register(container);
                }
                variable
            })
            .collect())
    }

    /// Evaluates `expression` in frame `frame` (`None`: globals only). Nothing it does
    /// stays: the state is rewound afterwards (see `eval`).
    pub fn evaluate(&mut self, frame: Option<usize>, expression: &str) -> Result<Variable, String> {
        let level = frame
            .map(|frame| self.level(frame).map(|(level, _)| level))
            .transpose()?;
        // SAFETY: the state is stopped and the sandbox is the debugged run's own.
        let shown = unsafe { eval::evaluate(self.sandbox, level, expression) }?;
        let container = shown.children.clone().map(Container::Copied);
        let mut variable = copied_variable(expression.to_owned(), shown);
        if let Some(container) = container {
            variable.reference = self.register(container);
        }
        Ok(variable)
    }

    /// Sets variable `name` of `reference` to `value`: `nil`, `true`, `false`, a number or
    /// a quoted string. This changes the run (unlike [`Self::evaluate`]).
    pub fn set_variable(
        &mut self,
        reference: u32,
        name: &str,
        value: &str,
    ) -> Result<Variable, String> {
        let literal = Literal::parse(value)?;
        let container = self.container(reference)?;
        let mut outcome: Result<(), String> = Err(format!("no variable `{name}` here"));
        let ran = self.sandbox.protected(|l| {
            // SAFETY: a protected call on the stopped state; levels count one more inside it.
            unsafe {
                outcome = assign(l, &container, name, &literal);
            }
        });
        ran?;
        outcome?;
        self.variables(reference)?
            .into_iter()
            .rev()
            .find(|variable| variable.name == name)
            .ok_or_else(|| format!("no variable `{name}` here"))
    }
}

/// The record of call level `level`.
///
/// # Safety
/// A valid state.
unsafe fn stack_record(l: State, level: c_int) -> Result<ffi::lua_Debug, String> {
    let mut ar: ffi::lua_Debug = unsafe { std::mem::zeroed() };
    if unsafe { ffi::lua_getstack(l, level, &mut ar) } == 0 {
        return Err("the frame is gone".to_owned());
    }
    Ok(ar)
}

fn name_of(name: *const std::ffi::c_char) -> Option<String> {
    // SAFETY: lua_getlocal / lua_getupvalue return NULL or a NUL-terminated name.
    (!name.is_null()).then(|| {
        unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned()
    })
}

/// The variable for the value on top, and the container of its entries when it is a table.
///
/// # Safety
/// A value is on top; the state has a free slot.
unsafe fn variable(
    l: State,
    name: String,
    root: Option<Root>,
    path: Vec<usize>,
) -> (Variable, Option<Container>) {
    let (value, type_name) = unsafe { eval::describe(l, -1) };
    let table = unsafe { ffi::lua_type(l, -1) } == ffi::LUA_TTABLE;
    let container = match root {
        Some(root) if table => Some(Container::Table { root, path }),
        _ => None,
    };
    (
        Variable {
            name,
            value,
            type_name,
            reference: 0,
        },
        container,
    )
}

fn copied_variable(name: String, shown: Shown) -> Variable {
    Variable {
        name,
        value: shown.value,
        type_name: shown.type_name,
        reference: 0,
    }
}

/// Pushes the table reached from `root` through `path`.
///
/// # Safety
/// The state has a few free slots; nothing is allocated in it.
unsafe fn push_table(l: State, root: Root, path: &[usize]) -> Result<(), String> {
    unsafe {
        push_root(l, root)?;
        for &position in path {
            if ffi::lua_type(l, -1) != ffi::LUA_TTABLE || !descend(l, position) {
                ffi::lua_pop(l, 1);
                return Err("the table changed".to_owned());
            }
        }
        if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
            ffi::lua_pop(l, 1);
            return Err("not a table any more".to_owned());
        }
        Ok(())
    }
}

/// Pushes the value of `root`.
///
/// # Safety
/// As [`push_table`].
unsafe fn push_root(l: State, root: Root) -> Result<(), String> {
    unsafe {
        match root {
            Root::Local { level, n } => {
                let ar = stack_record(l, level)?;
                if ffi::lua_getlocal(l, &ar, n).is_null() {
                    return Err("the local is gone".to_owned());
                }
            }
            Root::Upvalue { level, n } => {
                let mut ar = stack_record(l, level)?;
                ffi::lua_getinfo(l, c"f".as_ptr(), &mut ar);
                if ffi::lua_getupvalue(l, -1, n).is_null() {
                    ffi::lua_pop(l, 1);
                    return Err("the upvalue is gone".to_owned());
                }
                ffi::lua_remove(l, -2);
            }
            Root::Globals => ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX),
            Root::Obj => {
                // Found by walking the globals: pushing the name could allocate, and a memory
                // error here would reach the script.
                ffi::lua_pushnil(l);
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, ffi::LUA_GLOBALSINDEX) != 0 {
                    if ffi::lua_type(l, -2) == ffi::LUA_TSTRING && eval::key_text(l, -2) == "obj" {
                        // nil key value → value
                        ffi::lua_replace(l, -3);
                        ffi::lua_pop(l, 1);
                        return Ok(());
                    }
                    ffi::lua_pop(l, 1);
                }
                // Only the placeholder nil is left: obj is nil.
            }
        }
        Ok(())
    }
}

/// Replaces the table on top with the value of its entry at `position` in `next` order.
///
/// # Safety
/// A table is on top, with two free slots above it.
unsafe fn descend(l: State, position: usize) -> bool {
    unsafe {
        let mut at = 0;
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, -2) != 0 {
            if at == position {
                // table key value → value
                ffi::lua_replace(l, -3);
                ffi::lua_pop(l, 1);
                return true;
            }
            ffi::lua_pop(l, 1);
            at += 1;
        }
        false
    }
}

/// A value `setVariable` accepts.
#[derive(Debug, Clone, PartialEq)]
enum Literal {
    Nil,
    Boolean(bool),
    Number(f64),
    String(String),
}

impl Literal {
    fn parse(text: &str) -> Result<Literal, String> {
        let text = text.trim();
        match text {
            "nil" => return Ok(Literal::Nil),
            "true" => return Ok(Literal::Boolean(true)),
            "false" => return Ok(Literal::Boolean(false)),
            _ => {}
        }
        if let Some(number) = crate::go::fmt::parse_go_number(text.as_bytes()) {
            return Ok(Literal::Number(number));
        }
        if text.len() >= 2 && text.starts_with('\'') && text.ends_with('\'') {
            return Ok(Literal::String(text[1..text.len() - 1].to_owned()));
        }
        if text.starts_with('"')
            && let Ok(string) = serde_json::from_str::<String>(text)
        {
            return Ok(Literal::String(string));
        }
        Err(format!(
            "`{text}` is not a value to set: use nil, true, false, a number or a quoted string"
        ))
    }

    /// # Safety
    /// In a protected call (pushing a string may raise a memory error).
    unsafe fn push(&self, l: State) {
        unsafe {
            match self {
                Literal::Nil => ffi::lua_pushnil(l),
                Literal::Boolean(b) => ffi::lua_pushboolean(l, c_int::from(*b)),
                Literal::Number(n) => ffi::lua_pushnumber(l, *n),
                Literal::String(s) => {
                    ffi::lua_pushlstring(l, s.as_ptr().cast(), s.len());
                }
            }
        }
    }
}

/// Sets `name` in `container` to `literal`, inside a protected call (levels one deeper).
///
/// # Safety
/// In a protected call on the stopped state, with a few free slots.
unsafe fn assign(
    l: State,
    container: &Container,
    name: &str,
    literal: &Literal,
) -> Result<(), String> {
    unsafe {
        match container {
            Container::Locals(level) => {
                let ar = stack_record(l, level + 1)?;
                let mut target = None;
                let mut n = 1;
                while let Some(local) = name_of(ffi::lua_getlocal(l, &ar, n)) {
                    ffi::lua_pop(l, 1);
                    if local == name {
                        target = Some(n);
                    }
                    n += 1;
                }
                let n = target.ok_or_else(|| format!("no local `{name}`"))?;
                literal.push(l);
                ffi::lua_setlocal(l, &ar, n);
                Ok(())
            }
            Container::Upvalues(level) => {
                let mut ar = stack_record(l, level + 1)?;
                ffi::lua_getinfo(l, c"f".as_ptr(), &mut ar);
                let mut n = 1;
                while let Some(upvalue) = name_of(ffi::lua_getupvalue(l, -1, n)) {
                    ffi::lua_pop(l, 1);
                    if upvalue == name {
                        literal.push(l);
                        ffi::lua_setupvalue(l, -2, n);
                        ffi::lua_pop(l, 1);
                        return Ok(());
                    }
                    n += 1;
                }
                ffi::lua_pop(l, 1);
                Err(format!("no upvalue `{name}`"))
            }
            Container::Table { root, path } => {
                let root = match *root {
                    Root::Local { level, n } => Root::Local {
                        level: level + 1,
                        n,
                    },
                    Root::Upvalue { level, n } => Root::Upvalue {
                        level: level + 1,
                        n,
                    },
                    other => other,
                };
                push_table(l, root, path)?;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_pop(l, 1);
                    if eval::key_text(l, -1) == name {
                        literal.push(l);
                        ffi::lua_rawset(l, -3);
                        return Ok(());
                    }
                }
                Err(format!("no entry `{name}`"))
            }
            Container::Copied(_) => {
                Err("an evaluated value is a copy: set the variable it came from".to_owned())
            }
        }
    }
}
