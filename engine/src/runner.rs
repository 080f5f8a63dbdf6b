//! Running a script once against an obj: a custom provider's result under both of Kruise's
//! rules from one execution, or an ingress class's annotations. A case's steps are `steps`.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ffi::c_int;
use std::sync::Arc;

use mlua::ffi;

use crate::error::{ErrorKind, ScriptError};
use crate::json::{self, EmptyTable, KeyOrder, decode_custom_result, decode_ingress_result};
use crate::luadata::{Data, IngressData, LuaData};
use crate::stdlib;
use crate::value::JsonValue;
use crate::vm::hooks::RunObserver;
use crate::vm::{self, Limits, Sandbox, State};

mod prepared;
pub mod provenance;
use prepared::PreparedSandboxes;

/// Which rules decide a step's verdict (conformance 2.5 and 2.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Upstream's unit test (`go test ./pkg/trafficrouting/network/customNetworkProvider/`):
    /// empty table → `[]`, a non-table result → `{}`.
    #[default]
    Harness,
    /// The controller: empty table → `null`, a non-table result is an error.
    Production,
}

/// Options of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunOptions {
    pub limits: Limits,
    /// Key order of `obj`'s maps (Go's map order is random; sorted by default).
    pub key_order: KeyOrder,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            limits: Limits::default(),
            key_order: KeyOrder::Sorted,
        }
    }
}

/// One execution of a custom-provider script, with the result under both rules.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptRun {
    /// What the script printed, one entry per `print` call.
    pub prints: Vec<String>,
    pub harness: Result<Data, ScriptError>,
    pub production: Result<Data, ScriptError>,
}

impl ScriptRun {
    /// The result under `mode`'s rules.
    pub fn result(&self, mode: Mode) -> &Result<Data, ScriptError> {
        match mode {
            Mode::Harness => &self.harness,
            Mode::Production => &self.production,
        }
    }
}

/// One execution of an ingress-class script: its annotations (`None` for an empty result).
#[derive(Debug, Clone, PartialEq)]
pub struct IngressRun {
    pub prints: Vec<String>,
    pub result: Result<Option<BTreeMap<String, String>>, ScriptError>,
}

/// A script compiled once, to run any number of times (each run in a fresh state). A
/// syntax error is kept and reported by every run, as Kruise reports it per run.
///
/// Clones share the sandboxes kept ready for the script (see `prepared`), so a script may
/// be run from several threads at once; each run has a sandbox of its own.
#[derive(Debug, Clone)]
pub struct Script {
    source: String,
    /// The bytecode of the chunk (`=<string>`), or its syntax error.
    compiled: Result<Vec<u8>, ScriptError>,
    prepared: Arc<PreparedSandboxes>,
}

impl PartialEq for Script {
    fn eq(&self, other: &Script) -> bool {
        self.source == other.source
    }
}

impl Script {
    pub fn new(source: impl Into<String>) -> Script {
        let source = source.into();
        let compiled = vm::compile(source.as_bytes());
        Script {
            source,
            compiled,
            prepared: Arc::default(),
        }
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// The error every run of this script fails with, when it does not compile.
    pub fn syntax_error(&self) -> Option<&ScriptError> {
        self.compiled.as_ref().err()
    }
}

/// Runs a custom-provider script once against `obj`.
pub fn run_custom(script: &Script, obj: &LuaData, options: &RunOptions) -> ScriptRun {
    let (prints, results) = execute_custom(script, Obj::Data(obj), options, None);
    script_run(prints, results)
}

/// Runs a custom-provider script with an `obj` given as JSON (as the conformance vectors and
/// debugging tools have it) rather than as a [`LuaData`].
pub fn run_custom_json(script: &Script, obj: &JsonValue, options: &RunOptions) -> ScriptRun {
    let (prints, results) = execute_custom(script, Obj::Json(obj), options, None);
    script_run(prints, results)
}

fn script_run(prints: Vec<String>, results: Results) -> ScriptRun {
    let (harness, production) = match results {
        Results::Same(result) => (result.clone(), result),
        Results::Encoded { raw, .. } => {
            let result = decode_raw(&raw, decode_custom_result);
            (result.clone(), result)
        }
        Results::Split {
            harness,
            production,
        } => (harness, production),
    };
    ScriptRun {
        prints,
        harness,
        production,
    }
}

/// The result of one run under both rules: `Same` when they agree (the usual case: the
/// result holds no empty table), so that it is decoded and kept once.
pub(crate) enum Results {
    Same(Result<Data, ScriptError>),
    /// Like `Same`, for a result not decoded yet: its encoding (which decodes without
    /// error) and canonical JSON. Most steps need only the canonical JSON.
    Encoded {
        raw: Vec<u8>,
        canonical: String,
    },
    Split {
        harness: Result<Data, ScriptError>,
        production: Result<Data, ScriptError>,
    },
}

impl Results {
    /// The result under `mode`; decodes an `Encoded` one (then it is `Cow::Owned`).
    pub(crate) fn get(&self, mode: Mode) -> Cow<'_, Result<Data, ScriptError>> {
        Cow::Borrowed(match (self, mode) {
            (Results::Encoded { raw, .. }, _) => {
                return Cow::Owned(decode_raw(raw, decode_custom_result));
            }
            (Results::Same(result), _) => result,
            (Results::Split { harness, .. }, Mode::Harness) => harness,
            (Results::Split { production, .. }, Mode::Production) => production,
        })
    }
}

pub(crate) fn execute_custom(
    script: &Script,
    obj: Obj<'_>,
    options: &RunOptions,
    observer: Option<&mut dyn RunObserver>,
) -> (Vec<String>, Results) {
    execute(script, obj, options, observer, |returned| {
        let (l, idx) = match returned {
            Err(error) => return Results::Same(Err(error)),
            Ok(value) => value,
        };
        // SAFETY: `idx` is the returned value in the live state, inside a protected call.
        let type_name = unsafe { stdlib::capi::type_name(l, idx) };
        if type_name != "table" {
            return Results::Split {
                harness: Ok(Data::default()),
                production: Err(not_table(&type_name)),
            };
        }
        let mut raw = Vec::new();
        // SAFETY: as above.
        let harness = match unsafe { json::encode_at(l, idx, EmptyTable::EmptyArray, &mut raw) } {
            // No empty table: the controller's encoder writes the same text.
            Ok(false) => {
                return match json::canonical_from_encoded(&raw) {
                    Some(canonical) => {
                        debug_assert_eq!(
                            decode_custom_result(&raw).map(|data| data.to_canonical_json()),
                            Ok(canonical.clone()),
                            "the canonical shortcut agrees with decoding"
                        );
                        Results::Encoded { raw, canonical }
                    }
                    None => Results::Same(decode_raw(&raw, decode_custom_result)),
                };
            }
            Ok(true) => decode_raw(&raw, decode_custom_result),
            Err(message) => Err(ScriptError::new(ErrorKind::Encode, message)),
        };
        raw.clear();
        // SAFETY: as above.
        let production = match unsafe { json::encode_at(l, idx, EmptyTable::Null, &mut raw) } {
            Ok(_) => decode_raw(&raw, decode_custom_result),
            Err(message) => Err(ScriptError::new(ErrorKind::Encode, message)),
        };
        Results::Split {
            harness,
            production,
        }
    })
}

/// Runs an ingress-class script once against `obj`.
pub fn run_ingress(script: &Script, obj: &IngressData, options: &RunOptions) -> IngressRun {
    run_ingress_json(script, &obj.to_json(), options)
}

/// Runs an ingress-class script with an `obj` given as JSON.
pub fn run_ingress_json(script: &Script, obj: &JsonValue, options: &RunOptions) -> IngressRun {
    execute_ingress(script, obj, options, None)
}

pub(crate) fn execute_ingress(
    script: &Script,
    obj: &JsonValue,
    options: &RunOptions,
    observer: Option<&mut dyn RunObserver>,
) -> IngressRun {
    let (prints, result) = execute(script, Obj::Json(obj), options, observer, |returned| {
        let (l, idx) = returned?;
        // SAFETY: `idx` is the returned value in the live state, inside a protected call.
        let type_name = unsafe { stdlib::capi::type_name(l, idx) };
        if type_name != "table" {
            return Err(not_table(&type_name));
        }
        let mut raw = Vec::new();
        // SAFETY: as above.
        match unsafe { json::encode_at(l, idx, EmptyTable::Null, &mut raw) } {
            Ok(_) => decode_raw(&raw, decode_ingress_result),
            Err(message) => Err(ScriptError::new(ErrorKind::Encode, message)),
        }
    });
    IngressRun { prints, result }
}

/// Decodes an encoded result into its type, classifying a failure as `unmarshal`.
fn decode_raw<T>(
    raw: &[u8],
    decode: impl FnOnce(&[u8]) -> Result<T, String>,
) -> Result<T, ScriptError> {
    decode(raw).map_err(|message| ScriptError::new(ErrorKind::Unmarshal, message))
}

/// Takes a fresh state with the environment and the compiled chunk, sets `obj`, runs the
/// chunk and hands the last returned value (Kruise takes the top of the stack) to `finish`
/// while the state lives. `finish` may be called a second time with an error (see
/// `Sandbox::run`). With an observer (a debugger), the run gets a sandbox of its own (the
/// debugger checkpoints and rewinds it) and the observer is told of its lines.
fn execute<T>(
    script: &Script,
    obj: Obj<'_>,
    options: &RunOptions,
    observer: Option<&mut dyn RunObserver>,
    finish: impl FnMut(Result<(State, c_int), ScriptError>) -> T,
) -> (Vec<String>, T) {
    let mut finish = finish;
    let bytecode = match &script.compiled {
        Ok(bytecode) => bytecode,
        // The state would not change the outcome: skip it.
        Err(error) => return (Vec::new(), finish(Err(error.clone()))),
    };
    let sandbox = match &observer {
        None => script.prepared.take(bytecode, options).map(Lent::Pooled),
        Some(_) => prepared::loaded_sandbox(bytecode, options).map(|sandbox| {
            sandbox.begin_run(options.limits.timeout);
            Lent::Own(sandbox)
        }),
    };
    let sandbox = match sandbox {
        Ok(sandbox) => sandbox,
        Err(error) => return (Vec::new(), finish(Err(error))),
    };
    if let Err(error) = set_obj(&sandbox, obj, options.key_order) {
        return (Vec::new(), finish(Err(cannot_prepare(error))));
    }
    sandbox.start_collector();
    let result = match observer {
        Some(observer) => sandbox.run_observed(observer, finish),
        None => sandbox.run(finish),
    };
    (sandbox.take_prints(), result)
}

/// The sandbox of one run: from the script's pool, or made for a debugged run.
enum Lent<'a> {
    Pooled(prepared::Lease<'a>),
    Own(Sandbox),
}

impl std::ops::Deref for Lent<'_> {
    type Target = Sandbox;

    fn deref(&self) -> &Sandbox {
        match self {
            Lent::Pooled(lease) => lease,
            Lent::Own(sandbox) => sandbox,
        }
    }
}

/// The error of a run whose state could not be made (the memory cap is too small for it).
fn cannot_prepare(error: String) -> ScriptError {
    ScriptError::new(
        ErrorKind::Runtime,
        format!("cannot prepare the Lua state: {error}"),
    )
}

/// The `obj` of a run, as JSON or as the data of a test-case step.
#[derive(Clone, Copy)]
pub(crate) enum Obj<'a> {
    Json(&'a JsonValue),
    Data(&'a LuaData),
}

/// A fresh sandbox with Kruise's environment (libraries, `json`): what every run starts
/// from, before the chunk is loaded and `obj` set (exposed for benchmarks).
pub fn fresh_sandbox(options: &RunOptions) -> Result<Sandbox, String> {
    let sandbox = Sandbox::new(&options.limits)?;
    let order = options.key_order;
    sandbox.protected(|l| {
        // SAFETY: a protected call in a state with the standard libraries open.
        unsafe {
            stdlib::install_raw(l);
            json::install_module_raw(l, order);
        }
    })?;
    Ok(sandbox)
}

/// Sets the global `obj` in a sandbox with Kruise's environment.
fn set_obj(sandbox: &Sandbox, obj: Obj<'_>, order: KeyOrder) -> Result<(), String> {
    // A step's obj is converted without copying its spec into JSON first: everything else
    // goes through `LuaData::to_json`, and `data.spec` is added afterwards, which is where
    // sorted insertion puts it anyway ("spec" sorts after "annotations" and "labels").
    let (shell, late_spec) = match obj {
        Obj::Json(json) => (Cow::Borrowed(json), None),
        Obj::Data(data) if order != KeyOrder::Sorted => (Cow::Owned(data.to_json()), None),
        Obj::Data(data) => {
            let without_spec = Data {
                spec: None,
                labels: data.data.labels.clone(),
                annotations: data.data.annotations.clone(),
            };
            let shell = data.to_json_with_data(without_spec.to_obj_json());
            let spec = data.data.spec.as_ref().filter(|s| **s != JsonValue::Null);
            (Cow::Owned(shell), spec)
        }
    };
    sandbox.protected(|l| {
        // SAFETY: a protected call in a prepared state. A memory error leaks the
        // conversion's work stack (see json::push_json).
        unsafe {
            ffi::lua_pushlstring(l, c"obj".as_ptr(), 3);
            json::push_json(l, &shell, order);
            if let Some(spec) = late_spec {
                ffi::lua_getfield(l, -1, c"data".as_ptr());
                ffi::lua_pushlstring(l, c"spec".as_ptr(), 4);
                json::push_json(l, spec, order);
                ffi::lua_rawset(l, -3);
                ffi::lua_pop(l, 1);
            }
            ffi::lua_rawset(l, ffi::LUA_GLOBALSINDEX);
        }
    })
}

pub(crate) fn not_table(type_name: &str) -> ScriptError {
    ScriptError::new(
        ErrorKind::NotTable,
        format!("expect table output from Lua script, not {type_name}"),
    )
}
