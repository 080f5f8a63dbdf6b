//! The random script generator: seeded, reproducible programs of independent observation
//! statements over the whole library Kruise opens (base, string, table, math) with odd arguments.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::pools::{BINARY, CALLS, CHUNKS, NUMBERS, STRINGS, SUBJECT_CHARS};

/// The Lua run before the statements (helpers `__o`, `__t`, `__pk`, `__it`).
pub const PRELUDE: &str = include_str!("prelude.lua");
/// Returns the observations as the result's `spec`.
pub const EPILOGUE: &str = "return {spec = __concat(__lines, \"\\n\")}\n";

/// A generated script: statements `__o(label, function() … end)`, one a line, each labelled
/// with its index in the original program (labels survive shrinking).
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub seed: u64,
    pub statements: Vec<(u32, String)>,
}

impl Program {
    pub fn source(&self) -> String {
        let mut source = String::from(PRELUDE);
        for (_, statement) in &self.statements {
            source.push_str(statement);
            source.push('\n');
        }
        source.push_str(EPILOGUE);
        source
    }

    pub fn statement(&self, label: u32) -> Option<&str> {
        self.statements
            .iter()
            .find(|(l, _)| *l == label)
            .map(|(_, s)| s.as_str())
    }

    /// The same program keeping only the statements `keep` selects.
    pub fn retain(&self, keep: impl Fn(u32) -> bool) -> Program {
        Program {
            seed: self.seed,
            statements: self
                .statements
                .iter()
                .filter(|(l, _)| keep(*l))
                .cloned()
                .collect(),
        }
    }
}

/// The program for `seed`, with `size` statements.
pub fn program(seed: u64, size: usize) -> Program {
    let mut generator = Generator {
        rng: StdRng::seed_from_u64(seed),
    };
    let mut statements: Vec<(u32, String)> = (0..size as u32)
        .map(|label| {
            (
                label,
                format!("__o({label}, function() {} end)", generator.body()),
            )
        })
        .collect();
    // Now and then the chunk itself ends early: a value that is not a table (the controller's
    // "expect table output" error names its type) or an uncaught error.
    if generator.chance(5) {
        let value = match generator.rng.random_range(0..3) {
            0 => generator.scalar(),
            1 => generator.function(),
            _ => format!("error({})", generator.any()),
        };
        statements.push((size as u32, format!("do return {value} end")));
    }
    Program { seed, statements }
}

struct Generator {
    rng: StdRng,
}

impl Generator {
    fn pick<'a>(&mut self, items: &'a [&'a str]) -> &'a str {
        items[self.rng.random_range(0..items.len())]
    }

    fn chance(&mut self, percent: u32) -> bool {
        self.rng.random_range(0..100) < percent
    }

    fn number(&mut self) -> String {
        match self.rng.random_range(0..12) {
            0 => format!("{}", self.rng.random_range(-20..40)),
            1 => format!("{}", self.rng.random_range(-1000.0..1000.0_f64)),
            // Any magnitude, written as the shortest text that reads back exactly.
            2 => {
                let x = self.rng.random_range(1.0..10.0_f64)
                    * 10f64.powi(self.rng.random_range(-320..308));
                format!("{x:e}")
            }
            _ => self.pick(NUMBERS).to_string(),
        }
    }

    fn small_int(&mut self) -> String {
        match self.rng.random_range(0..8) {
            0 => self.pick(NUMBERS).to_string(),
            1 => "nil".into(),
            _ => {
                let n = self.rng.random_range(-6..8);
                if n < 0 {
                    format!("({n})")
                } else {
                    n.to_string()
                }
            }
        }
    }

    fn string(&mut self) -> String {
        if self.chance(30) {
            let len = self.rng.random_range(0..8);
            let bytes: Vec<u8> = (0..len)
                .map(|_| SUBJECT_CHARS[self.rng.random_range(0..SUBJECT_CHARS.len())])
                .collect();
            lua_string(&bytes)
        } else {
            lua_string(self.pick(STRINGS).as_bytes())
        }
    }

    fn table(&mut self) -> String {
        match self.rng.random_range(0..14) {
            0 => "{}".into(),
            1 => "{1, 2, 3}".into(),
            2 => "{\"a\", \"b\", \"c\"}".into(),
            3 => "{1, nil, 3}".into(),
            4 => "{nil}".into(),
            5 => "{1, 2, 3, nil}".into(),
            6 => "{[0] = 0, 1}".into(),
            7 => "{n = 1, 10, 20}".into(),
            8 => "{[2^53] = 1}".into(),
            9 => "{[1.5] = 1, 2}".into(),
            10 => "{true, false}".into(),
            11 => "{[-1] = 1, [3] = 3}".into(),
            _ => {
                let n = self.rng.random_range(0..5);
                let items: Vec<String> = (0..n).map(|_| self.scalar()).collect();
                format!("{{{}}}", items.join(", "))
            }
        }
    }

    fn function(&mut self) -> String {
        let choices = [
            "function(...) return ... end",
            "function() error(\"boom\") end",
            "function() error({}) end",
            "function() error() end",
            "function(a, b) return a < b end",
            "type",
            "tostring",
            "function() return nil end",
            "string.len",
            "function(...) return select('#', ...) end",
        ];
        self.pick(&choices).to_string()
    }

    fn scalar(&mut self) -> String {
        match self.rng.random_range(0..9) {
            0..=3 => self.number(),
            4..=6 => self.string(),
            7 => "nil".into(),
            _ => if self.chance(50) { "true" } else { "false" }.into(),
        }
    }

    fn any(&mut self) -> String {
        match self.rng.random_range(0..12) {
            0..=8 => self.scalar(),
            9 | 10 => self.table(),
            _ => self.function(),
        }
    }

    fn argument(&mut self, kind: char) -> String {
        if self.chance(12) {
            return self.any();
        }
        match kind {
            's' => self.string(),
            'n' => self.number(),
            'i' => self.small_int(),
            't' => self.table(),
            'f' => self.function(),
            'p' => lua_string(self.pattern().as_bytes()),
            'c' => match self.rng.random_range(0..6) {
                0 => self.number(),
                _ => self.rng.random_range(32..127).to_string(),
            },
            _ => self.any(),
        }
    }

    fn arguments(&mut self, kinds: &str) -> String {
        let mut count = kinds.len();
        if self.chance(25) {
            count = self.rng.random_range(0..=kinds.len());
        }
        let mut args: Vec<String> = kinds
            .chars()
            .take(count)
            .map(|k| self.argument(k))
            .collect();
        if self.chance(8) {
            args.push(self.any());
        }
        args.join(", ")
    }

    /// A random Lua pattern: literals, classes, sets, anchors, captures, %b, %f, back
    /// references, and quantifiers anywhere (also first, or after `(`).
    fn pattern(&mut self) -> String {
        let mut p = String::new();
        if self.chance(20) {
            p.push('^');
        }
        let items = self.rng.random_range(0..5);
        let mut open = 0;
        for _ in 0..items {
            match self.rng.random_range(0..16) {
                0..=3 => {
                    p.push(SUBJECT_CHARS[self.rng.random_range(0..SUBJECT_CHARS.len())] as char)
                }
                4 => p.push('.'),
                5 => p.push_str(self.pick(&[
                    "%a", "%d", "%s", "%w", "%p", "%c", "%u", "%l", "%x", "%S", "%D", "%P", "%W",
                    "%A", "%%", "%.", "%-", "%]", "%z", "%g", "%",
                ])),
                6 => p.push_str(self.pick(&[
                    "[a-c]", "[^a]", "[%d-]", "[-a]", "[a-]", "[]", "[]]", "[^]]", "[-%]]",
                    "[%a_]", "[a-%d]", "[%]", "[^%s]", "[", "]", "[z-a]", "[.]", "[%w%p]",
                ])),
                7 => {
                    p.push('(');
                    open += 1;
                }
                8 if open > 0 => {
                    p.push(')');
                    open -= 1;
                }
                8 => p.push_str("()"),
                9 => p.push_str(self.pick(&["%b()", "%b[]", "%b", "%bx"])),
                10 => p.push_str(self.pick(&["%f[%a]", "%f[%w]", "%f[^a]", "%f", "%f[a-c]"])),
                11 => p.push_str(self.pick(&["%1", "%2", "%0"])),
                12 => p.push('$'),
                _ => p.push(
                    self.pick(&["*", "+", "-", "?"])
                        .chars()
                        .next()
                        .unwrap_or('*'),
                ),
            }
        }
        if !self.chance(15) {
            p.extend(std::iter::repeat_n(')', open));
        }
        if self.chance(15) {
            p.push('$');
        }
        p
    }

    fn subject(&mut self) -> String {
        if self.chance(60) {
            let len = self.rng.random_range(0..12);
            let bytes: Vec<u8> = (0..len)
                .map(|_| SUBJECT_CHARS[self.rng.random_range(0..SUBJECT_CHARS.len())])
                .collect();
            lua_string(&bytes)
        } else {
            self.string()
        }
    }

    /// A `string.format` directive: flags, width, precision and a verb, C's or Go's or neither.
    fn directive(&mut self) -> String {
        let mut d = String::from("%");
        for flag in ["-", "+", " ", "#", "0"] {
            if self.chance(12) {
                d.push_str(flag);
            }
        }
        if self.chance(35) {
            d.push_str(&self.rng.random_range(0..25).to_string());
        }
        if self.chance(3) {
            d.push_str("1000001");
        }
        if self.chance(30) {
            d.push('.');
            if self.chance(80) {
                d.push_str(&self.rng.random_range(0..20).to_string());
            }
        }
        d.push_str(self.pick(&[
            "d", "i", "o", "u", "x", "X", "e", "E", "f", "F", "g", "G", "q", "s", "c", "%", "a",
            "A", "T", "p", "U", "v", "b", "t", "w", "y", "",
        ]));
        d
    }

    fn format_call(&mut self) -> String {
        let mut format = String::new();
        let directives = self.rng.random_range(1..4);
        for _ in 0..directives {
            if self.chance(30) {
                format.push_str(self.pick(&["x", " ", "<", "="]));
            }
            format.push_str(&self.directive());
        }
        let args: Vec<String> = (0..self.rng.random_range(0..4))
            .map(|_| {
                if self.chance(60) {
                    self.number()
                } else {
                    self.scalar()
                }
            })
            .collect();
        let mut call = format!("string.format({}", lua_string(format.as_bytes()));
        for arg in args {
            call.push_str(", ");
            call.push_str(&arg);
        }
        call.push(')');
        format!("return {call}")
    }

    fn pattern_call(&mut self) -> String {
        let s = self.subject();
        let p = lua_string(self.pattern().as_bytes());
        match self.rng.random_range(0..5) {
            0 => {
                let init = self.small_int();
                if self.chance(20) {
                    format!("return string.find({s}, {p}, {init}, true)")
                } else if self.chance(30) {
                    format!("return string.find({s}, {p}, {init})")
                } else {
                    format!("return string.find({s}, {p})")
                }
            }
            1 => {
                if self.chance(30) {
                    let init = self.small_int();
                    format!("return string.match({s}, {p}, {init})")
                } else {
                    format!("return string.match({s}, {p})")
                }
            }
            2 => format!("return __it(string.gmatch({s}, {p}))"),
            _ => {
                let repl = match self.rng.random_range(0..6) {
                    0 => "{a = \"A\", [\"1\"] = 1, b = false}".to_string(),
                    1 => "function(...) return select('#', ...) end".to_string(),
                    2 => "function(x) return nil end".to_string(),
                    3 => self.any(),
                    _ => lua_string(
                        self.pick(&["%1", "%0", "%%", "%2", "<%1>", "x", "", "%", "%a"])
                            .as_bytes(),
                    ),
                };
                if self.chance(30) {
                    let n = self.small_int();
                    format!("return string.gsub({s}, {p}, {repl}, {n})")
                } else {
                    format!("return string.gsub({s}, {p}, {repl})")
                }
            }
        }
    }

    fn library_call(&mut self) -> String {
        let (name, kinds) = CALLS[self.rng.random_range(0..CALLS.len())];
        let args = self.arguments(kinds);
        // Format arguments stay scalars: `%x` of a table would print its address in hex.
        if name == "string.format" {
            return self.format_call();
        }
        // string.rep's count stays small unless odd: memory, not fidelity, would be tested.
        if name == "string.rep" {
            let count = match self.rng.random_range(0..6) {
                0 => self
                    .pick(&["(-1)", "0", "(0/0)", "(1/0)", "(-1/0)", "2.5", "\"3\""])
                    .to_string(),
                _ => self.rng.random_range(0..5).to_string(),
            };
            let s = self.string();
            return match self.rng.random_range(0..3) {
                0 => format!("return string.rep({s}, {count}, {})", self.string()),
                _ => format!("return string.rep({s}, {count})"),
            };
        }
        if self.chance(10) && name.starts_with("string.") && !kinds.is_empty() {
            // The method-call form goes through the string metatable.
            let (first, rest) = args.split_once(", ").unwrap_or((args.as_str(), ""));
            let method = name.trim_start_matches("string.");
            if !first.is_empty() {
                return format!("return ({first}):{method}({rest})");
            }
        }
        format!("return {name}({args})")
    }

    fn operator(&mut self) -> String {
        match self.rng.random_range(0..6) {
            0 => {
                let op = self.pick(&["-", "not ", "#"]);
                let v = self.any();
                format!("return {op}{v}")
            }
            1 => {
                let (a, b) = (self.number(), self.number());
                let op = self.pick(BINARY);
                format!("return tostring({a} {op} {b})")
            }
            _ => {
                let a = if self.chance(50) {
                    self.number()
                } else {
                    self.any()
                };
                let b = if self.chance(50) {
                    self.number()
                } else {
                    self.any()
                };
                let op = self.pick(BINARY);
                format!("return {a} {op} {b}")
            }
        }
    }

    fn errors(&mut self) -> String {
        let v = self.any();
        match self.rng.random_range(0..14) {
            0 => format!("return pcall(error, {v})"),
            1 => {
                let level = self.small_int();
                format!("return pcall(error, {v}, {level})")
            }
            2 => "return pcall(error)".into(),
            3 => format!("return select('#', pcall(error, {v}))"),
            4 => {
                let level = self.small_int();
                format!(
                    "local function inner() error({v}, {level}) end return pcall(function() inner() end)"
                )
            }
            5 => {
                let h = self.pick(&["e", "type(e)", "nil", "1, 2", "e .. '!'"]);
                format!("return xpcall(function() error({v}) end, function(e) return {h} end)")
            }
            6 => {
                let r = self.pick(&[
                    "local x = nil return x.y",
                    "local t = {} return t.a.b",
                    "return ({}) + 1",
                    "return {} .. \"\"",
                    "return 1 < \"2\"",
                    "return {} < {}",
                    "return #nil",
                    "return #5",
                    "local f = 5 return f()",
                    "return nil .. 1",
                    "return (\"x\")()",
                    "return -{}",
                    "return undefinedglobal.x",
                    "return math.floor()",
                    "return (\"abc\"):bad()",
                    "local t = setmetatable({}, {__index = function(t, k) return t[k] end}) return t.x",
                ]);
                format!("return pcall(function() {r} end)")
            }
            7 => {
                let m = self.any();
                format!("return pcall(assert, {v}, {m})")
            }
            8 => "return pcall(assert, false)".into(),
            9 => "return pcall(pcall)".into(),
            10 => {
                let n = self.pick(&["100", "200", "240", "250", "252", "253", "254", "256", "300"]);
                format!(
                    "local function f(n) if n == 0 then return 0 end return 1 + f(n - 1) end return pcall(f, {n})"
                )
            }
            11 => format!("return pcall(setmetatable({{}}, {{__call = function(self, ...) return select('#', ...) end}}), {v})"),
            12 if self.chance(15) => {
                "local a, b = xpcall(function() error(\"x\") end, function(e) error(\"again\") end) return a, b".into()
            }
            _ => {
                let c = lua_string(self.pick(CHUNKS).as_bytes());
                format!("local f, e = loadstring({c}) if not f then return f, e end return pcall(f, 1, nil)")
            }
        }
    }

    fn metatables(&mut self) -> String {
        let events: &[(&str, &str)] = &[
            ("__add", "a + 1"),
            ("__add", "1 + a"),
            ("__sub", "a - b"),
            ("__mul", "a * 2"),
            ("__div", "\"2\" / a"),
            ("__mod", "a % b"),
            ("__pow", "a ^ 2"),
            ("__unm", "-a"),
            ("__concat", "a .. \"x\""),
            ("__concat", "1 .. a"),
            ("__eq", "a == b"),
            ("__eq", "a ~= b"),
            ("__lt", "a < b"),
            ("__lt", "a > 1"),
            ("__le", "a <= b"),
            ("__le", "a >= b"),
            // Lua 5.1 falls back from __le to `not (b < a)` with __lt.
            ("__lt", "a <= b"),
            ("__len", "#a"),
            ("__call", "a(1, 2)"),
            ("__index", "a.x"),
            ("__index", "a[1]"),
            (
                "__newindex",
                "(function() a.y = 5 return rawget(a, \"y\") end)()",
            ),
            ("__tostring", "tostring(a)"),
            ("__metatable", "getmetatable(a)"),
            ("__metatable", "pcall(setmetatable, a, {})"),
        ];
        let (event, expr) = events[self.rng.random_range(0..events.len())];
        let handler = match self.rng.random_range(0..5) {
            0 => "function(...) return select('#', ...) end".to_string(),
            1 => "function(x, y) return nil end".to_string(),
            2 => "function(x, y) return 7, 8 end".to_string(),
            3 => self.scalar(),
            _ => "{x = 1}".to_string(),
        };
        let b = match self.rng.random_range(0..3) {
            0 => "setmetatable({}, mt)".to_string(),
            1 => "setmetatable({}, {})".to_string(),
            _ => self.scalar(),
        };
        format!(
            "local mt = {{{event} = {handler}}} local a = setmetatable({{}}, mt) local b = {b} return {expr}"
        )
    }

    fn tables(&mut self) -> String {
        match self.rng.random_range(0..9) {
            0 => {
                // Constructor evaluation order and the resulting table.
                let n = self.rng.random_range(1..6);
                let mut next = 1;
                let mut items = Vec::new();
                for _ in 0..n {
                    let item = match self.rng.random_range(0..5) {
                        0 => format!("[f({})] = f({})", next, next + 1),
                        1 => format!("k{} = f({})", next, next + 1),
                        2 => "nil".to_string(),
                        3 => format!("f({}, {})", next, next + 1),
                        _ => format!("f({})", next),
                    };
                    next += 2;
                    items.push(item);
                }
                format!(
                    "local log = {{}} local function f(...) log[#log + 1] = select(1, ...) return ... end local t = {{{}}} local order = \"\" for i = 1, #log do order = order .. tostring(log[i]) .. \" \" end return order, __t(t), #t",
                    items.join(", ")
                )
            }
            1 => {
                // Sort order with ties: ids show where equal keys end up.
                let n = self.rng.random_range(2..33);
                let k = self.rng.random_range(1..5);
                let keys: Vec<String> = (0..n)
                    .map(|_| self.rng.random_range(0..k).to_string())
                    .collect();
                let cmp = self.pick(&["a.k < b.k", "a.k > b.k", "true", "false", "a.k <= b.k"]);
                format!(
                    "local t = {{}} for i, k in ipairs({{{}}}) do t[i] = {{k = k, id = i}} end local ok, e = pcall(table.sort, t, function(a, b) return {cmp} end) local ids = {{}} for i = 1, #t do ids[i] = t[i].id end return ok, e, table.concat(ids, \" \")",
                    keys.join(", ")
                )
            }
            2 => {
                let t = self.table();
                let cmp = self.pick(&[
                    "",
                    ", function(a, b) return a > b end",
                    ", function(a, b) return true end",
                    ", 1",
                ]);
                format!("local t = {t} local r = __pk(table.sort(t{cmp})) return r, __t(t)")
            }
            3 => {
                let t = self.table();
                let args = match self.rng.random_range(0..3) {
                    0 => self.any(),
                    1 => format!("{}, {}", self.small_int(), self.any()),
                    _ => format!("{}, {}, {}", self.small_int(), self.any(), self.any()),
                };
                format!(
                    "local t = {t} local r = __pk(table.insert(t, {args})) return r, __t(t), #t"
                )
            }
            4 => {
                let t = self.table();
                let pos = if self.chance(30) {
                    String::new()
                } else {
                    self.small_int()
                };
                format!("local t = {t} local r = __pk(table.remove(t, {pos})) return r, __t(t), #t")
            }
            5 => {
                let t = self.table();
                let (i, j) = (self.small_int(), self.small_int());
                if self.chance(50) {
                    format!("return unpack({t}, {i}, {j})")
                } else {
                    format!("return select('#', unpack({t}, {i}, {j}))")
                }
            }
            6 => {
                let n = self.small_int();
                let args: Vec<String> = (0..self.rng.random_range(0..4))
                    .map(|_| self.scalar())
                    .collect();
                let args = args.join(", ");
                if self.chance(50) {
                    format!("return select({n}, {args})")
                } else {
                    format!(
                        "local function g(...) return select('#', ...), #{{...}}, ... end return g({args})"
                    )
                }
            }
            7 => {
                let t = self.table();
                let k = self.scalar();
                format!("local t = {t} return __pk(next(t, {k})), __it(pairs(t)), __it(ipairs(t))")
            }
            _ => {
                let t = self.table();
                let k = self.number();
                format!("local t = {t} t[{k}] = 1 return #t, table.maxn(t), __t(t)")
            }
        }
    }

    /// The corners of issue 25 (docs/FIDELITY.md): tie-prone doubles through `%v` and
    /// `json.encode`, `next` after the array part was used, `%#U`/`%q` over unassigned and
    /// non-printable code points, signed-zero keys after table.remove/insert, and
    /// `json.encode`'s error texts.
    fn corners(&mut self) -> String {
        match self.rng.random_range(0..5) {
            0 => {
                // A double in 1e14..2^53 with a fraction: two shortest decimals are often
                // equally near (Go rounds half to even).
                let whole = self
                    .rng
                    .random_range(100_000_000_000_000u64..9_007_199_254_740_992);
                let sixteenths = self.rng.random_range(1..16);
                let x = format!("({whole} + {sixteenths} / 16)");
                let x = if self.chance(20) {
                    format!("(-{x})")
                } else {
                    x
                };
                format!(
                    "local x = {x} return string.format(\"%v|%g|%.17g\", x, x, x), json.encode(x), json.encode({{v = x}}), tostring(x)"
                )
            }
            1 => {
                // next with an integer key (present, absent, past the slice) after the array
                // part was grown, shrunk or emptied.
                let t = self.table();
                let mut ops = Vec::new();
                for _ in 0..self.rng.random_range(1..4) {
                    ops.push(match self.rng.random_range(0..6) {
                        0 => "t[1.5] = \"x\"".to_string(),
                        1 => format!("table.insert(t, {})", self.scalar()),
                        2 => format!(
                            "pcall(table.insert, t, {}, {})",
                            self.small_int(),
                            self.scalar()
                        ),
                        3 => "table.remove(t)".to_string(),
                        4 => format!("pcall(table.remove, t, {})", self.small_int()),
                        _ => format!("t[{}] = nil", self.rng.random_range(1..5)),
                    });
                }
                let k = match self.rng.random_range(0..3) {
                    0 => self.rng.random_range(0..8).to_string(),
                    1 => self.small_int(),
                    _ => self.scalar(),
                };
                format!(
                    "local t = {t} {} return __pk(pcall(next, t, {k})), __t(t)",
                    ops.join(" ")
                )
            }
            2 => {
                // %#U and %q over code points Go 1.20 (Unicode 13.0.0) may not print.
                let cp = match self.rng.random_range(0..4) {
                    0 => self.rng.random_range(0..0x110000u32),
                    1 => self.rng.random_range(0..0x3000u32),
                    2 => self.rng.random_range(0x1_0000..0x2_0000u32),
                    _ => *[
                        0x378u32, 0x1E240, 0x1E4D0, 0x1E290, 0x11F00, 0x1FAD6, 0x1F6DD, 0xAD, 0xA0,
                        0x200B, 0x2028, 0x3000, 0xFEFF, 0xD800, 0xE000, 0xFFFD, 0x10FFFF, 0x0870,
                        0x31EF, 0x1F7F0,
                    ]
                    .get(self.rng.random_range(0..20))
                    .unwrap_or(&0x378),
                };
                let mut bytes = [0u8; 4];
                let text = char::from_u32(cp).map_or(String::new(), |c| {
                    lua_string(c.encode_utf8(&mut bytes).as_bytes())
                });
                let verb = self.pick(&["%#U", "%U", "%#8U", "%-#10U|"]);
                if text.is_empty() {
                    format!("return string.format(\"{verb}\", {cp})")
                } else {
                    format!("return string.format(\"{verb} %q %+q\", {cp}, {text}, {text})")
                }
            }
            3 => {
                // A zero key (the shared constant is -0 when -0.0 comes first) after table
                // library calls that may leave, or not leave, an entry for key 0.
                let t = self.table();
                let (a, b) = (self.small_int(), self.small_int());
                let first = self.pick(&["(-0.0)", "0", "-0"]);
                let second = self.pick(&["0", "(-0.0)", "-0"]);
                format!(
                    "local t = {t} pcall(table.remove, t, {a}) pcall(table.insert, t, {b}, nil) t[11] = {first} t[0] = {second} local r = {{}} for k, v in pairs(t) do r[#r + 1] = __v(k) .. \"/\" .. (type(k) == \"number\" and tostring(1 / k) or \"\") end return table.concat(r, \" \")"
                )
            }
            _ => {
                // json.encode of odd values, and its error texts.
                let v = match self.rng.random_range(0..4) {
                    0 => self.any(),
                    1 => self.table(),
                    2 => format!("{{spec = {{a = {}, b = {}}}}}", self.table(), self.any()),
                    _ => format!("{{{}, {}}}", self.table(), self.table()),
                };
                format!("return json.encode({v})")
            }
        }
    }

    fn numbers(&mut self) -> String {
        let v = self.number();
        match self.rng.random_range(0..5) {
            0 => format!("return {v}, {v} .. \"\", string.format(\"%s\", {v})"),
            1 => {
                let s = self.string();
                if self.chance(50) {
                    format!("return tonumber({s})")
                } else {
                    let base = self.pick(&[
                        "2", "8", "10", "16", "36", "1", "37", "10.5", "nil", "\"16\"",
                    ]);
                    format!("return tonumber({s}, {base})")
                }
            }
            2 => {
                let s = self.string();
                let op = self.pick(&["+ 0", "* 1", "- 0", "/ 1", "% 7"]);
                format!("return {s} {op}, -{s}")
            }
            3 => format!("return math.floor({v}), math.ceil({v}), math.modf({v})"),
            _ => format!("local x = {v} return x, -x, x * 0, 1 / x"),
        }
    }

    fn strings_misc(&mut self) -> String {
        let choices = [
            "return getmetatable(\"\") == string",
            "return type(getmetatable(\"\"))",
            "return type(getmetatable(\"\").__index)",
            "return (\"abc\"):len(), (\"x\"):rep(3), #\"abc\"",
            "return next({}, \"\")",
            "return pcall(setmetatable, \"\", {})",
            "return type(string.gfind), type(string.dump), type(math.mod), type(table.getn)",
            "return type(table.foreach), type(table.setn), type(os), type(io), type(coroutine)",
            "return _VERSION",
            "return type(newproxy), type(_GOPHER_LUA_VERSION)",
            "return type(require), type(module), type(loadstring), type(setfenv), type(gcinfo)",
            "local ok, m = pcall(require, \"string\") return ok, m == string",
            "return select('#', string.match(\"a\", \"b\"))",
            "return string.find(\"abc\", \"\", 10)",
            "return string.find(\"abc\", \"b\", 10, true)",
            "return tostring(obj.canaryWeight), obj.canaryService, obj.missing",
            "return string.upper(\"\\195\\169\"), string.lower(\"\\195\\137\")",
        ];
        self.pick(&choices).to_string()
    }

    /// Numeric and generic `for` loops with odd bounds and steps (stopped after 20 rounds).
    fn loops(&mut self) -> String {
        let bound = |g: &mut Generator| match g.rng.random_range(0..4) {
            0 => g.scalar(),
            _ => g.small_int(),
        };
        let (a, b) = (bound(self), bound(self));
        if self.chance(60) {
            let step = match self.rng.random_range(0..4) {
                0 => String::new(),
                1 => format!(
                    ", {}",
                    self.pick(&["0", "0.5", "(-1)", "(-0.25)", "\"2\"", "(0/0)", "(1/0)"])
                ),
                _ => format!(", {}", bound(self)),
            };
            format!(
                "local r = {{}} for i = {a}, {b}{step} do r[#r + 1] = i if #r >= 20 then break end end return __t(r)"
            )
        } else {
            let t = self.table();
            let iter = self.pick(&["pairs", "ipairs"]);
            format!(
                "local r = {{}} for k, v in {iter}({t}) do r[#r + 1] = tostring(k) .. \"=\" .. tostring(v) if #r >= 20 then break end end return table.concat(r, \" \")"
            )
        }
    }

    /// Multiple assignment: evaluation order of targets and values, adjustment to the count.
    fn assignments(&mut self) -> String {
        let choices = [
            "local t = {} local i = 1 i, t[i] = i + 1, 20 return i, __t(t)",
            "local t = {1, 2, 3} local i = 1 t[i], i = 10, 2 return i, __t(t)",
            "local a, b, c = (function() return 1, 2, 3 end)() return a, b, c",
            "local a, b, c = (function() return 1, 2, 3 end)(), 9 return a, b, c",
            "local a, b = ((function() return 1, 2 end)()) return a, b",
            "local t = {} t.x, t.y, t.z = 1 return __t(t)",
            "local a, a = 1, 2 return a",
            "local function f(...) local a, b = ... return a, b, select('#', ...) end return f(nil, nil, nil)",
            "local log = {} local function f(x) log[#log + 1] = x return x end local t = {} t[f(1)], t[f(2)] = f(3), f(4) return table.concat(log, \" \"), __t(t)",
            "local x = 1 local function g() x = x + 1 return x end return x + g(), x",
            "local s = \"a\" local function g() s = s .. \"b\" return s end return s .. g(), s",
            "local t = {n = 0} function t:add(v) self.n = self.n + v return self end return t:add(1):add(2).n",
        ];
        self.pick(&choices).to_string()
    }

    fn body(&mut self) -> String {
        if self.chance(8) {
            return if self.chance(50) {
                self.loops()
            } else {
                self.assignments()
            };
        }
        match self.rng.random_range(0..100) {
            0..=29 => self.library_call(),
            30..=39 => self.operator(),
            40..=49 => self.format_call(),
            50..=64 => self.pattern_call(),
            65..=72 => self.errors(),
            73..=78 => self.metatables(),
            79..=86 => self.tables(),
            87..=89 => self.corners(),
            90..=96 => self.numbers(),
            _ => self.strings_misc(),
        }
    }
}

/// `bytes` as a Lua string literal: printable ASCII as is, everything else as a three-digit
/// decimal escape (never `\x`, which the 2017 snapshot rejects).
pub fn lua_string(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in bytes {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03}")),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_program_every_time() {
        assert_eq!(program(7, 30), program(7, 30));
        assert_ne!(program(7, 30), program(8, 30));
    }

    #[test]
    fn string_literals_escape_quotes_and_bytes() {
        assert_eq!(lua_string(b"a\"\\\n\xff"), "\"a\\\"\\\\\\010\\255\"");
    }
}
