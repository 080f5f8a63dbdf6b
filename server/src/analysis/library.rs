//! The Lua environment Kruise gives a script (gopher-lua's Lua 5.1): globals, library members,
//! their signatures and docs, and the well-known names that are missing from it.
//!
//! Opened libraries: base, `math`, `table`, `string` and a `json` module; `os`, `io`,
//! `coroutine`, `package`, `debug` and friends are nil (conformance README 2.1; vectors
//! `env_globals` and `tbl_library_members`).

/// A function or value provided by Kruise's Lua.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LibItem {
    pub name: &'static str,
    /// `name(params) -> results`, or the value's type for non-functions.
    pub signature: &'static str,
    pub doc: &'static str,
    pub is_function: bool,
}

const fn f(name: &'static str, signature: &'static str, doc: &'static str) -> LibItem {
    LibItem {
        name,
        signature,
        doc,
        is_function: true,
    }
}

const fn v(name: &'static str, signature: &'static str, doc: &'static str) -> LibItem {
    LibItem {
        name,
        signature,
        doc,
        is_function: false,
    }
}

/// A library table (`string`, `table`, `math`, `json`) and its members.
#[derive(Debug, Clone, Copy)]
pub struct Library {
    pub name: &'static str,
    pub doc: &'static str,
    pub members: &'static [LibItem],
}

impl Library {
    pub fn member(&self, name: &str) -> Option<&'static LibItem> {
        self.members.iter().find(|m| m.name == name)
    }
}

/// Base-library globals (functions and values), as gopher-lua defines them.
pub const GLOBALS: &[LibItem] = &[
    f(
        "assert",
        "assert(v [, message]) -> v, ...",
        "Raises an error (with a position prefix) when `v` is false or nil; otherwise returns all its arguments.",
    ),
    f(
        "collectgarbage",
        "collectgarbage([opt [, arg]])",
        "Garbage-collector control; has no use in a traffic-routing script.",
    ),
    f(
        "dofile",
        "dofile([filename])",
        "Runs a Lua file. The controller has no script files to load: avoid.",
    ),
    f(
        "error",
        "error(message [, level])",
        "Raises an error; the script fails with a runtime error (the step is not applied). With no argument gopher-lua raises a \"bad argument\" error.",
    ),
    f(
        "getfenv",
        "getfenv([f]) -> table",
        "Returns the environment of a function (Lua 5.1).",
    ),
    f(
        "getmetatable",
        "getmetatable(object) -> table|nil",
        "Returns the metatable of `object` (or its `__metatable` field).",
    ),
    f(
        "ipairs",
        "ipairs(t) -> iterator",
        "Iterates `t[1], t[2], ...` in order until the first nil. Use it for arrays (`obj.matches`, `spec.http`): the order is deterministic.",
    ),
    f(
        "load",
        "load(func [, chunkname]) -> function|nil, err",
        "Loads a chunk from a function that returns pieces of source.",
    ),
    f(
        "loadfile",
        "loadfile([filename]) -> function|nil, err",
        "Loads a Lua file. The controller has no script files to load: avoid.",
    ),
    f(
        "loadstring",
        "loadstring(source [, chunkname]) -> function|nil, err",
        "Compiles `source` to a function (Lua 5.1).",
    ),
    f(
        "module",
        "module(name, ...)",
        "Lua 5.1 module definition; without the package library it is of no use here.",
    ),
    f(
        "newproxy",
        "newproxy([bool|proxy]) -> userdata",
        "Creates an empty userdata (undocumented Lua 5.1 function).",
    ),
    f(
        "next",
        "next(t [, key]) -> key, value",
        "Returns the next key/value of `t`. For tables built from input (`obj`, `json.decode`) the order is random on every run in Kruise.",
    ),
    f(
        "pairs",
        "pairs(t) -> next, t, nil",
        "Iterates all keys of `t`. Kruise builds `obj`'s maps in Go's random map order, so the visiting order of their keys changes from run to run: sort the keys when the order reaches the result.",
    ),
    f(
        "pcall",
        "pcall(f, ...) -> ok, result...",
        "Calls `f` in protected mode: returns false and the error instead of failing. It cannot catch the 1-second timeout.",
    ),
    f(
        "print",
        "print(...)",
        "Writes to the controller's stdout; it has no effect on the result.",
    ),
    f(
        "rawequal",
        "rawequal(a, b) -> boolean",
        "Equality without metamethods.",
    ),
    f(
        "rawget",
        "rawget(t, k) -> value",
        "Reads `t[k]` without metamethods.",
    ),
    f(
        "rawset",
        "rawset(t, k, v) -> t",
        "Writes `t[k] = v` without metamethods.",
    ),
    f(
        "require",
        "require(name) -> module",
        "Returns an already-loaded library: only `json`, `string`, `table`, `math` and `_G` work (e.g. `local json = require(\"json\")`). Any other name fails: there is no package library.",
    ),
    f(
        "select",
        "select(n, ...) -> ...",
        "Returns the arguments after the `n`-th; `select('#', ...)` counts them.",
    ),
    f(
        "setfenv",
        "setfenv(f, table) -> f",
        "Sets the environment of a function (Lua 5.1).",
    ),
    f(
        "setmetatable",
        "setmetatable(t, mt) -> t",
        "Sets the metatable of `t`. The JSON encoder ignores metatables: `__index` defaults are not written to the result.",
    ),
    f(
        "tonumber",
        "tonumber(v [, base]) -> number|nil",
        "Converts to a number. gopher-lua trims spaces (not `\\r`), parses strings with `.` as floats and others as base-10 integers (or hex after `0x`): `tonumber(\"1e2\")` is nil and `tonumber(\"010\")` is 10.",
    ),
    f(
        "tostring",
        "tostring(v) -> string",
        "Converts to a string. Integral numbers print without a fraction (`1e15` -> `1000000000000000`); others use Go's shortest form.",
    ),
    f(
        "type",
        "type(v) -> string",
        "Returns the type name: \"nil\", \"boolean\", \"number\", \"string\", \"table\", \"function\", \"userdata\" or \"thread\".",
    ),
    f(
        "unpack",
        "unpack(t [, i [, j]]) -> ...",
        "Returns `t[i], ..., t[j]` (Lua 5.1's global; there is no `table.unpack`).",
    ),
    f(
        "xpcall",
        "xpcall(f, handler) -> ok, result...",
        "Calls `f` in protected mode with an error handler.",
    ),
    f(
        "_printregs",
        "_printregs()",
        "gopher-lua debugging helper: prints the VM registers to stdout.",
    ),
    v("_G", "table", "The global environment table."),
    v("_VERSION", "string", "\"Lua 5.1\"."),
    v("_GOPHER_LUA_VERSION", "string", "\"GopherLua 0.1\"."),
];

pub const STRING: Library = Library {
    name: "string",
    doc: "The string library (gopher-lua's Lua 5.1). Strings also have these as methods: `s:upper()`.",
    members: &[
        f(
            "byte",
            "string.byte(s [, i [, j]]) -> number...",
            "Byte values of `s[i..j]`.",
        ),
        f(
            "char",
            "string.char(...) -> string",
            "A string from byte values.",
        ),
        f(
            "dump",
            "string.dump(f) -> string",
            "Binary representation of a function.",
        ),
        f(
            "find",
            "string.find(s, pattern [, init [, plain]]) -> start, end, captures...",
            "Finds a pattern. gopher-lua quirks: an empty pattern always gives `1, 0`; `plain` is honoured only with exactly 4 arguments; `init` past the end with `plain` raises an error.",
        ),
        f(
            "format",
            "string.format(fmt, ...) -> string",
            "Formats like Go's fmt: `%s` takes any value, a missing argument prints `%!s(MISSING)`, `%d` truncates toward zero, `%q` uses Go escapes.",
        ),
        f(
            "gfind",
            "string.gfind(s, pattern) -> iterator",
            "Lua 5.0 name of `string.gmatch`.",
        ),
        f(
            "gmatch",
            "string.gmatch(s, pattern) -> iterator",
            "Iterates over the matches of a pattern.",
        ),
        f(
            "gsub",
            "string.gsub(s, pattern, repl [, n]) -> string, count",
            "Replaces matches of a pattern (repl: string, table or function).",
        ),
        f(
            "len",
            "string.len(s) -> number",
            "Length in bytes (same as `#s`).",
        ),
        f(
            "lower",
            "string.lower(s) -> string",
            "Lower case; gopher-lua is Unicode-aware (`É` -> `é`).",
        ),
        f(
            "match",
            "string.match(s, pattern [, init]) -> captures...",
            "The captures of the first match. Without a match gopher-lua returns no value at all (not nil): `tostring(s:match(p))` then raises.",
        ),
        f(
            "rep",
            "string.rep(s, n) -> string",
            "`s` repeated `n` times (empty for n <= 0).",
        ),
        f(
            "reverse",
            "string.reverse(s) -> string",
            "The bytes of `s` in reverse order.",
        ),
        f(
            "sub",
            "string.sub(s, i [, j]) -> string",
            "The substring `s[i..j]`; negative indices count from the end.",
        ),
        f(
            "upper",
            "string.upper(s) -> string",
            "Upper case; gopher-lua is Unicode-aware (`é` -> `É`).",
        ),
    ],
};

pub const TABLE: Library = Library {
    name: "table",
    doc: "The table library (Lua 5.1 as gopher-lua has it: no `unpack`, `pack`, `move`, `foreach`, `foreachi` or `setn`).",
    members: &[
        f(
            "concat",
            "table.concat(t [, sep [, i [, j]]]) -> string",
            "Joins the strings/numbers `t[i..j]` with `sep`.",
        ),
        f(
            "getn",
            "table.getn(t) -> number",
            "Length of the array part (same as `#t`).",
        ),
        f(
            "insert",
            "table.insert(t, [pos,] value)",
            "Appends `value`, or inserts it at `pos` shifting later items. gopher-lua: `table.insert(t, 10, x)` on a short array leaves a hole, so `#t` becomes 10.",
        ),
        f(
            "maxn",
            "table.maxn(t) -> number",
            "The largest positive numeric key.",
        ),
        f(
            "remove",
            "table.remove(t [, pos]) -> value",
            "Removes and returns `t[pos]` (default: the last item). gopher-lua: `pos` 0 removes the last item; past the end removes nothing.",
        ),
        f(
            "sort",
            "table.sort(t [, comp])",
            "Sorts the array part in place (`comp(a, b)` returns true when a < b). Mixed types raise an error.",
        ),
    ],
};

pub const MATH: Library = Library {
    name: "math",
    doc: "The math library (Lua 5.1). Numbers are doubles.",
    members: &[
        f("abs", "math.abs(x) -> number", "Absolute value."),
        f("acos", "math.acos(x) -> number", "Arc cosine (radians)."),
        f("asin", "math.asin(x) -> number", "Arc sine (radians)."),
        f("atan", "math.atan(x) -> number", "Arc tangent (radians)."),
        f(
            "atan2",
            "math.atan2(y, x) -> number",
            "Arc tangent of y/x using the signs of both.",
        ),
        f("ceil", "math.ceil(x) -> number", "Smallest integer >= x."),
        f("cos", "math.cos(x) -> number", "Cosine (radians)."),
        f("cosh", "math.cosh(x) -> number", "Hyperbolic cosine."),
        f("deg", "math.deg(x) -> number", "Radians to degrees."),
        f("exp", "math.exp(x) -> number", "e^x."),
        f("floor", "math.floor(x) -> number", "Largest integer <= x."),
        f(
            "fmod",
            "math.fmod(x, y) -> number",
            "Remainder of x/y rounded toward zero.",
        ),
        f("frexp", "math.frexp(x) -> m, e", "x = m * 2^e."),
        f("ldexp", "math.ldexp(m, e) -> number", "m * 2^e."),
        f(
            "log",
            "math.log(x) -> number",
            "Natural logarithm (no base argument in Lua 5.1).",
        ),
        f("log10", "math.log10(x) -> number", "Base-10 logarithm."),
        f("max", "math.max(x, ...) -> number", "The largest argument."),
        f(
            "min",
            "math.min(x, ...) -> number",
            "The smallest argument.",
        ),
        f(
            "mod",
            "math.mod(x, y) -> number",
            "Lua 5.0 name of `math.fmod`.",
        ),
        f(
            "modf",
            "math.modf(x) -> integral, fractional",
            "Integral and fractional parts.",
        ),
        f("pow", "math.pow(x, y) -> number", "x^y."),
        f("rad", "math.rad(x) -> number", "Degrees to radians."),
        f(
            "random",
            "math.random([m [, n]]) -> number",
            "A pseudo-random number. A routing result should not depend on it.",
        ),
        f("randomseed", "math.randomseed(x)", "Seeds `math.random`."),
        f("sin", "math.sin(x) -> number", "Sine (radians)."),
        f("sinh", "math.sinh(x) -> number", "Hyperbolic sine."),
        f("sqrt", "math.sqrt(x) -> number", "Square root."),
        f("tan", "math.tan(x) -> number", "Tangent (radians)."),
        f("tanh", "math.tanh(x) -> number", "Hyperbolic tangent."),
        v(
            "huge",
            "number",
            "In gopher-lua the largest finite double (1.7976931348623157e+308), not infinity: `math.huge == 1/0` is false.",
        ),
        v("pi", "number", "3.141592653589793."),
    ],
};

pub const JSON: Library = Library {
    name: "json",
    doc: "Kruise's JSON module (also `require(\"json\")`).",
    members: &[
        f(
            "encode",
            "json.encode(value) -> string",
            "Encodes a value as JSON with Kruise's encoder: an empty table becomes `null`, object keys are sorted, a table reached twice (even without a cycle) is an error, functions/NaN/Inf are errors.",
        ),
        f(
            "decode",
            "json.decode(text) -> value",
            "Decodes JSON text: objects and arrays become tables (null members are absent, null array items are skipped), numbers become doubles.",
        ),
    ],
};

/// The library tables Kruise opens.
pub const LIBRARIES: [&Library; 4] = [&STRING, &TABLE, &MATH, &JSON];

/// Names `require` accepts (already-loaded libraries).
pub const REQUIRABLE: [&str; 5] = ["json", "string", "table", "math", "_G"];

/// Looks up a library table by global name.
pub fn library(name: &str) -> Option<&'static Library> {
    LIBRARIES.into_iter().find(|l| l.name == name)
}

/// Looks up a base-library global.
pub fn global(name: &str) -> Option<&'static LibItem> {
    GLOBALS.iter().find(|g| g.name == name)
}

/// Whether `name` is a global that exists in Kruise's Lua (`obj` included).
pub fn is_provided_global(name: &str) -> bool {
    name == "obj" || global(name).is_some() || library(name).is_some()
}

/// Well-known globals of other Lua versions or environments that Kruise does not provide,
/// with what to use instead.
pub const MISSING_GLOBALS: &[(&str, &str)] = &[
    (
        "os",
        "there is no `os` library: the script cannot read the time, the environment or files",
    ),
    (
        "io",
        "there is no `io` library: the script cannot read or write files; `print` writes to the controller log",
    ),
    ("coroutine", "there is no `coroutine` library"),
    (
        "package",
        "there is no package library; `require` only returns json, string, table, math and _G",
    ),
    ("debug", "there is no `debug` library"),
    ("gcinfo", "`gcinfo` is not defined in gopher-lua"),
    (
        "bit32",
        "`bit32` is Lua 5.2; there are no bit operations in Kruise's Lua",
    ),
    (
        "bit",
        "`bit` is LuaJIT's library; there are no bit operations in Kruise's Lua",
    ),
    ("utf8", "`utf8` is Lua 5.3; Kruise runs Lua 5.1"),
    ("rawlen", "`rawlen` is Lua 5.2; use `#t`"),
    ("warn", "`warn` is Lua 5.4"),
    ("jit", "`jit` is LuaJIT's"),
    ("_ENV", "`_ENV` is Lua 5.2; use `getfenv`/`setfenv`"),
];

/// Well-known library members that Kruise's Lua does not have, with a hint.
pub const MISSING_MEMBERS: &[(&str, &str, &str)] = &[
    ("table", "unpack", "Lua 5.2; use the global `unpack(t)`"),
    (
        "table",
        "pack",
        "Lua 5.2; use `{...}` and `select('#', ...)`",
    ),
    ("table", "move", "Lua 5.3; copy with a loop"),
    (
        "table",
        "foreach",
        "removed in gopher-lua; use `for k, v in pairs(t)`",
    ),
    (
        "table",
        "foreachi",
        "removed in gopher-lua; use `for i, v in ipairs(t)`",
    ),
    ("table", "setn", "not in gopher-lua"),
    ("table", "create", "Luau only; use `{}`"),
    ("table", "find", "Luau only; search with a loop"),
    ("table", "clear", "Luau only"),
    ("table", "clone", "Luau only; copy with a loop"),
    (
        "table",
        "keys",
        "not a Lua function; collect keys with `pairs`",
    ),
    (
        "string",
        "split",
        "not a Lua function; use `for part in s:gmatch(\"[^,]+\") do`",
    ),
    ("string", "pack", "Lua 5.3"),
    ("string", "unpack", "Lua 5.3"),
    ("string", "packsize", "Lua 5.3"),
    (
        "string",
        "trim",
        "not a Lua function; use `s:match(\"^%s*(.-)%s*$\")`",
    ),
    (
        "string",
        "startswith",
        "not a Lua function; use `s:sub(1, #prefix) == prefix`",
    ),
    (
        "string",
        "endswith",
        "not a Lua function; use `s:sub(-#suffix) == suffix`",
    ),
    (
        "math",
        "type",
        "Lua 5.3; use `type(x) == \"number\"` and `math.floor(x) == x`",
    ),
    ("math", "tointeger", "Lua 5.3; use `math.floor`"),
    ("math", "ult", "Lua 5.3"),
    ("math", "maxinteger", "Lua 5.3"),
    ("math", "mininteger", "Lua 5.3"),
    (
        "math",
        "round",
        "not a Lua function; use `math.floor(x + 0.5)`",
    ),
    (
        "math",
        "clamp",
        "Luau only; use `math.max(lo, math.min(hi, x))`",
    ),
    ("math", "sign", "Luau only"),
    (
        "json",
        "null",
        "no `json.null`: a nil value leaves the key out",
    ),
];

/// The hint for a missing library member, if it is a well-known one.
pub fn missing_member_hint(library: &str, member: &str) -> Option<&'static str> {
    MISSING_MEMBERS
        .iter()
        .find(|(l, m, _)| *l == library && *m == member)
        .map(|(_, _, hint)| *hint)
}

/// The hint for a well-known global Kruise does not provide.
pub fn missing_global_hint(name: &str) -> Option<&'static str> {
    MISSING_GLOBALS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, hint)| *hint)
}

/// Lua 5.1 keywords, defined with the rest of what makes a Lua name.
pub use crate::lua_source::KEYWORDS;

#[cfg(test)]
mod tests {
    use super::*;

    /// The output (the script's JSON result) a conformance vector expects.
    fn vector_output(name: &str) -> serde_json::Value {
        let path = crate::analysis::conformance_vectors().join(format!("{name}.expected.json"));
        let expected =
            std::fs::read_to_string(path).expect("shared/conformance beside the worktree");
        let outer: serde_json::Value = serde_json::from_str(&expected).unwrap();
        serde_json::from_str(outer["output"].as_str().unwrap()).unwrap()
    }

    #[test]
    fn matches_the_env_globals_vector() {
        // vectors/env_globals: which of these names are non-nil in Kruise's Lua.
        let output = vector_output("env_globals");
        let spec = output["spec"].as_object().unwrap();
        assert!(spec.len() > 20);
        for (name, ty) in spec {
            let provided = ty != "nil";
            assert_eq!(is_provided_global(name), provided, "{name}");
            if !provided && name != "channel" {
                assert!(missing_global_hint(name).is_some(), "{name} needs a hint");
            }
        }
    }

    #[test]
    fn matches_the_library_members_vector() {
        let output = vector_output("tbl_library_members");
        // The vector's keys name the member; `tunpack` is table.unpack.
        fn which(key: &str) -> (&str, &str) {
            match key {
                "getn" | "maxn" | "foreach" | "foreachi" | "setn" | "pack" => ("table", key),
                "tunpack" => ("table", "unpack"),
                "gfind" | "dump" => ("string", key),
                _ => ("math", key),
            }
        }
        for (key, ty) in output["spec"].as_object().unwrap() {
            let (lib, member) = which(key);
            let exists = library(lib).unwrap().member(member).is_some();
            assert_eq!(exists, ty == "function", "{lib}.{member}");
        }
    }
}
