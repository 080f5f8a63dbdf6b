//! Lua patterns as gopher-lua matches them: its parser's quirks (`%f` is the letter `f`,
//! a quantifier with nothing to repeat is a literal, `]`/`-` first in a set are literals,
//! `$` anchors only as the last byte, `^` anchors gmatch/gsub too) and a backtracking
//! matcher with an explicit stack and a step budget.
//!
//! The rules follow gopher-lua's `pm/pm.go` at Kruise's pin (658193537a64, 2022):
//! `parseClass`, `parseClassSet`, `parsePattern`, `compilePattern` and `recursiveVM`.

/// A failure while parsing or matching a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatError {
    /// An error gopher-lua raises with a position prefix (`L.RaiseError`).
    Lua(String),
    /// A Go runtime panic inside gopher-lua (no position prefix).
    Panic(String),
    /// The step budget ran out; the caller decides whether that is a timeout.
    Budget,
}

/// End-of-pattern marker, as a class byte that no subject byte equals.
const EOS: i32 = -1;

#[derive(Debug, Clone)]
enum Class {
    Any,
    Char(i32),
    /// `%x`: a class letter, or any other byte standing for itself.
    Single(i32),
    Set {
        negated: bool,
        items: Vec<Class>,
    },
    Range(Box<Class>, Box<Class>),
}

impl Class {
    fn matches(&self, ch: u8) -> bool {
        let c = ch as i32;
        match self {
            Class::Any => true,
            Class::Char(x) => *x == c,
            Class::Single(k) => single_matches(*k, ch),
            Class::Set { negated, items } => {
                if items.iter().any(|it| it.matches(ch)) {
                    !negated
                } else {
                    *negated
                }
            }
            Class::Range(lo, hi) => match (&**lo, &**hi) {
                (Class::Char(a), Class::Char(b)) => *a <= c && c <= *b,
                _ => false,
            },
        }
    }
}

fn single_matches(k: i32, ch: u8) -> bool {
    if !(0..=255).contains(&k) {
        return false;
    }
    let k = k as u8;
    let r = match k.to_ascii_lowercase() {
        b'a' => ch.is_ascii_alphabetic(),
        b'c' => ch <= 0x1f || ch == 0x7f,
        b'd' => ch.is_ascii_digit(),
        b'l' => ch.is_ascii_lowercase(),
        // pm.go singleClass.Matches at the 2022 pin: digits are not punctuation.
        b'p' => matches!(ch, 0x21..=0x2f | 0x3a..=0x40 | 0x5b..=0x60 | 0x7b..=0x7e),
        b's' => matches!(ch, b' ' | 0x0c | b'\n' | b'\r' | b'\t' | 0x0b),
        b'u' => ch.is_ascii_uppercase(),
        b'w' => ch.is_ascii_alphanumeric(),
        b'x' => ch.is_ascii_hexdigit(),
        b'z' => ch == 0,
        _ => return ch == k,
    };
    if k.is_ascii_uppercase() { !r } else { r }
}

#[derive(Debug, Clone)]
enum Node {
    One(Class),
    Repeat(u8, Class),
    PosCapture,
    Capture(Vec<Node>),
    Balance(i32, i32),
    BackRef(usize),
}

struct Parser<'a> {
    p: &'a [u8],
    pos: usize,
}

impl Parser<'_> {
    fn peek(&self) -> i32 {
        self.p.get(self.pos).map_or(EOS, |&b| b as i32)
    }
    fn next(&mut self) -> i32 {
        let c = self.peek();
        if c != EOS {
            self.pos += 1;
        }
        c
    }
    /// An error found by peeking: gopher's scanner then stands on the last byte it consumed
    /// (pm.go `scanner.Peek`), and the message names that 0-based position.
    fn err(&self, msg: &str) -> PatError {
        PatError::Lua(format!("{msg} at {}", self.pos.saturating_sub(1)))
    }

    /// An error found after consuming past the end (the scanner's position is EOS).
    fn err_eos(&self, msg: &str) -> PatError {
        PatError::Lua(format!("{msg} at EOS"))
    }

    fn class(&mut self, allow_set: bool) -> Result<Class, PatError> {
        match self.next() {
            c if c == b'%' as i32 => Ok(Class::Single(self.next())),
            c if c == b'.' as i32 => Ok(if allow_set {
                Class::Any
            } else {
                Class::Char(c)
            }),
            // pm.go parseClass: a `[` inside a set is a literal.
            c if c == b'[' as i32 => {
                if allow_set {
                    self.set()
                } else {
                    Ok(Class::Char(c))
                }
            }
            EOS => Err(self.err_eos("unexpected EOS")),
            c => Ok(Class::Char(c)),
        }
    }

    /// pm.go parseClassSet: `]` and `-` are literals while the set is still empty; a `-`
    /// after an item starts a range with the next item (`--` keeps waiting for it), and a
    /// `-` left pending at the closing `]` is a literal.
    fn set(&mut self) -> Result<Class, PatError> {
        let mut negated = false;
        if self.peek() == b'^' as i32 {
            negated = true;
            self.next();
        }
        let mut items = Vec::new();
        let mut in_range = false;
        loop {
            let c = self.peek();
            if c == EOS {
                return Err(self.err("unexpected EOS"));
            }
            if c == b']' as i32 && !items.is_empty() {
                self.next();
                break;
            }
            if c == b'-' as i32 && !items.is_empty() {
                self.next();
                in_range = true;
                continue;
            }
            items.push(self.class(false)?);
            if in_range {
                let hi = items.pop().expect("range end");
                let lo = items.pop().expect("a `-` follows an item");
                items.push(Class::Range(Box::new(lo), Box::new(hi)));
                in_range = false;
            }
        }
        if in_range {
            items.push(Class::Char(b'-' as i32));
        }
        Ok(Class::Set { negated, items })
    }

    fn seq(&mut self, top: bool, head: &mut bool, tail: &mut bool) -> Result<Vec<Node>, PatError> {
        let mut nodes: Vec<Node> = Vec::new();
        if top && self.peek() == b'^' as i32 {
            self.next();
            *head = true;
        }
        loop {
            let c = self.peek();
            if c == EOS {
                return Ok(nodes);
            }
            let cb = c as u8;
            match cb {
                b'%' => {
                    let save = self.pos;
                    self.next();
                    match self.peek() {
                        d if d == b'0' as i32 => return Err(self.err("invalid capture index")),
                        d if (b'1' as i32..=b'9' as i32).contains(&d) => {
                            self.next();
                            nodes.push(Node::BackRef((d - b'0' as i32) as usize));
                        }
                        d if d == b'b' as i32 => {
                            self.next();
                            let open = self.next();
                            let close = self.next();
                            nodes.push(Node::Balance(open, close));
                        }
                        _ => {
                            self.pos = save;
                            nodes.push(Node::One(self.class(true)?));
                        }
                    }
                }
                // A `]` outside a set is a literal (pm.go parsePattern).
                b'.' | b'[' | b']' => nodes.push(Node::One(self.class(true)?)),
                b')' => {
                    if top {
                        return Err(self.err("invalid ')'"));
                    }
                    return Ok(nodes);
                }
                b'(' => {
                    self.next();
                    if self.peek() == b')' as i32 {
                        self.next();
                        nodes.push(Node::PosCapture);
                    } else {
                        let inner = self.seq(false, head, tail)?;
                        if self.peek() != b')' as i32 {
                            return Err(self.err_eos("unfinished capture"));
                        }
                        self.next();
                        nodes.push(Node::Capture(inner));
                    }
                }
                // A quantifier repeats the single class before it; with none (pattern or
                // capture start, after a capture, `%b`, `%1`, another quantifier) it is a
                // literal character (pm.go parsePattern).
                b'*' | b'+' | b'-' | b'?' => {
                    self.next();
                    match nodes.pop() {
                        Some(Node::One(class)) => nodes.push(Node::Repeat(cb, class)),
                        other => {
                            nodes.extend(other);
                            nodes.push(Node::One(Class::Char(c)));
                        }
                    }
                }
                b'$' => {
                    if top && self.pos + 1 == self.p.len() {
                        *tail = true;
                    } else {
                        nodes.push(Node::One(Class::Char(c)));
                    }
                    self.next();
                }
                _ => {
                    self.next();
                    nodes.push(Node::One(Class::Char(c)));
                }
            }
        }
    }
}

#[derive(Debug, Clone)]
enum Inst {
    Char(Class),
    Match,
    TailMatch,
    Jmp(usize),
    /// Try the first target, then the second.
    Split(usize, usize),
    Save(usize),
    PosSave(usize),
    Balance(i32, i32),
    BackRef(usize),
}

/// A parsed and compiled pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    code: Vec<Inst>,
    /// `^`: only one attempt, at the start offset.
    pub anchored: bool,
}

fn compile(nodes: &[Node], code: &mut Vec<Inst>, next_slot: &mut usize) {
    for node in nodes {
        let at = code.len();
        match node {
            Node::One(c) => code.push(Inst::Char(c.clone())),
            Node::Repeat(kind, c) => match kind {
                b'*' => {
                    code.push(Inst::Split(at + 1, at + 3));
                    code.push(Inst::Char(c.clone()));
                    code.push(Inst::Jmp(at));
                }
                b'+' => {
                    code.push(Inst::Char(c.clone()));
                    code.push(Inst::Split(at, at + 2));
                }
                b'-' => {
                    code.push(Inst::Split(at + 3, at + 1));
                    code.push(Inst::Char(c.clone()));
                    code.push(Inst::Jmp(at));
                }
                _ => {
                    code.push(Inst::Split(at + 1, at + 2));
                    code.push(Inst::Char(c.clone()));
                }
            },
            Node::PosCapture => {
                code.push(Inst::PosSave(*next_slot));
                *next_slot += 2;
            }
            Node::Capture(inner) => {
                let slot = *next_slot;
                *next_slot += 2;
                code.push(Inst::Save(slot));
                compile(inner, code, next_slot);
                code.push(Inst::Save(slot + 1));
            }
            Node::Balance(o, c) => code.push(Inst::Balance(*o, *c)),
            Node::BackRef(n) => code.push(Inst::BackRef(*n)),
        }
    }
}

impl Pattern {
    pub fn parse(p: &[u8]) -> Result<Pattern, PatError> {
        let mut parser = Parser { p, pos: 0 };
        let (mut head, mut tail) = (false, false);
        let nodes = parser.seq(true, &mut head, &mut tail)?;
        let mut code = vec![Inst::Save(0)];
        let mut slot = 2;
        compile(&nodes, &mut code, &mut slot);
        code.push(Inst::Save(1));
        code.push(if tail { Inst::TailMatch } else { Inst::Match });
        Ok(Pattern {
            code,
            anchored: head,
        })
    }
}

/// One capture of a match: a byte range, or a position capture (1-based position).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cap {
    Range(usize, usize),
    Pos(usize),
}

/// A successful match: the whole range and the captures in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    pub start: usize,
    pub end: usize,
    pub caps: Vec<Cap>,
}

impl Match {
    /// The value `%n`/table/function replacement and `match` use for capture `i` (0 = whole).
    pub fn capture(&self, i: usize) -> Cap {
        if i == 0 {
            Cap::Range(self.start, self.end)
        } else {
            self.caps[i - 1]
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Slot {
    pos: usize,
    is_pos: bool,
}

enum Back {
    Branch(usize, usize),
    Restore(usize, Slot),
}

/// Runs one attempt at `start`, with a shared step counter. `poll` is called every 65536
/// steps and returns false to abort (deadline reached).
struct Vm<'a> {
    code: &'a [Inst],
    src: &'a [u8],
    /// The capacity of Go's byte slice holding `src`: a back reference to a position capture
    /// slices up to one past the match, which panics only past the capacity.
    capacity: usize,
    slots: Vec<Slot>,
    /// gopher's capture slice only grows; backreference checks read its length.
    slot_len: usize,
    stack: Vec<Back>,
}

impl Vm<'_> {
    fn set(&mut self, i: usize, v: Slot) -> Slot {
        if i >= self.slots.len() {
            self.slots.resize(i + 1, Slot::default());
        }
        self.slot_len = self.slot_len.max(i + 1);
        std::mem::replace(&mut self.slots[i], v)
    }

    fn run(
        &mut self,
        start: usize,
        steps: &mut u64,
        poll: &mut dyn FnMut() -> bool,
    ) -> Result<Option<usize>, PatError> {
        self.slots.clear();
        self.slot_len = 0;
        self.stack.clear();
        let (mut pc, mut sp) = (0usize, start);
        loop {
            *steps += 1;
            if *steps & 0xffff == 0 && !poll() {
                return Err(PatError::Budget);
            }
            let ok = match &self.code[pc] {
                Inst::Char(c) => {
                    if sp < self.src.len() && c.matches(self.src[sp]) {
                        pc += 1;
                        sp += 1;
                        true
                    } else {
                        false
                    }
                }
                Inst::Match => return Ok(Some(sp)),
                Inst::TailMatch => {
                    if sp >= self.src.len() {
                        return Ok(Some(sp));
                    }
                    false
                }
                Inst::Jmp(t) => {
                    pc = *t;
                    true
                }
                Inst::Split(a, b) => {
                    self.stack.push(Back::Branch(*b, sp));
                    pc = *a;
                    true
                }
                Inst::Save(i) => {
                    let old = self.set(
                        *i,
                        Slot {
                            pos: sp,
                            is_pos: false,
                        },
                    );
                    self.stack.push(Back::Restore(*i, old));
                    pc += 1;
                    true
                }
                Inst::PosSave(i) => {
                    let v = Slot {
                        pos: sp + 1,
                        is_pos: true,
                    };
                    self.set(*i, v);
                    self.set(*i + 1, v);
                    pc += 1;
                    true
                }
                Inst::Balance(open, close) => {
                    if sp >= self.src.len() || self.src[sp] as i32 != *open {
                        false
                    } else {
                        let mut depth = 1;
                        let mut i = sp + 1;
                        let mut found = false;
                        while i < self.src.len() {
                            let b = self.src[i] as i32;
                            if b == *close {
                                depth -= 1;
                            }
                            if depth == 0 {
                                found = true;
                                break;
                            }
                            if b == *open {
                                depth += 1;
                            }
                            i += 1;
                        }
                        if found {
                            pc += 1;
                            sp = i + 1;
                        }
                        found
                    }
                }
                Inst::BackRef(n) => {
                    let idx = n * 2;
                    if idx + 1 >= self.slot_len {
                        return Err(PatError::Lua("invalid capture index".into()));
                    }
                    let (a, b) = (self.slots[idx].pos, self.slots[idx + 1].pos);
                    // Go checks the high bound first (against the capacity, which is the
                    // length for find/match/gsub's unsafe string bytes), then the order.
                    if b > self.capacity {
                        return Err(PatError::Panic(format!(
                            "runtime error: slice bounds out of range [:{b}] with capacity {}",
                            self.capacity
                        )));
                    }
                    if a > b {
                        return Err(PatError::Panic(format!(
                            "runtime error: slice bounds out of range [{a}:{b}]"
                        )));
                    }
                    // Within the capacity but past the length only an empty position capture
                    // can end (its slots hold position + 1): it matches the empty string.
                    let len = b - a;
                    if len == 0
                        || sp + len <= self.src.len() && self.src[a..b] == self.src[sp..sp + len]
                    {
                        pc += 1;
                        sp += len;
                        true
                    } else {
                        false
                    }
                }
            };
            if !ok {
                // Backtrack: undo saves until the most recent untried branch.
                loop {
                    match self.stack.pop() {
                        None => return Ok(None),
                        Some(Back::Restore(i, old)) => self.slots[i] = old,
                        Some(Back::Branch(t, s)) => {
                            pc = t;
                            sp = s;
                            break;
                        }
                    }
                }
            }
        }
    }

    fn result(&self, start_end: usize) -> Match {
        let start = self.slots[0].pos;
        let mut caps = Vec::new();
        let mut i = 2;
        while i + 1 < self.slot_len {
            let s = self.slots[i];
            caps.push(if s.is_pos {
                Cap::Pos(s.pos)
            } else {
                Cap::Range(s.pos, self.slots[i + 1].pos)
            });
            i += 2;
        }
        Match {
            start,
            end: start_end,
            caps,
        }
    }
}

/// Iterates matches the way gopher-lua's finder does: attempts start at `offset`, the next
/// attempt starts at max(previous start + 1, previous end), and an anchored pattern makes
/// one attempt only.
pub struct Finder<'a> {
    pat: &'a Pattern,
    vm: Vm<'a>,
    pos: usize,
    done: bool,
    steps: u64,
}

impl<'a> Finder<'a> {
    pub fn new(pat: &'a Pattern, src: &'a [u8], offset: usize) -> Self {
        Finder {
            pat,
            vm: Vm {
                code: &pat.code,
                src,
                capacity: src.len(),
                slots: Vec::new(),
                slot_len: 0,
                stack: Vec::new(),
            },
            pos: offset,
            done: false,
            steps: 0,
        }
    }

    /// Matches as if `src` were a Go slice of `capacity` bytes (see `go_bytes_capacity`).
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.vm.capacity = capacity.max(self.vm.src.len());
        self
    }

    /// The next match, `None` when there are no more.
    pub fn next_match(
        &mut self,
        poll: &mut dyn FnMut() -> bool,
    ) -> Result<Option<Match>, PatError> {
        while let Some(attempt) = self.attempt(poll)? {
            if attempt.is_some() {
                return Ok(attempt);
            }
        }
        Ok(None)
    }

    /// One attempt of pm.go's `Find` loop: `None` when the attempts are over, else the
    /// match found at the current start, if any. (`Find` checks its limit after every
    /// attempt, matched or not: gsub with limit 0 stops after the first attempt.)
    pub fn attempt(
        &mut self,
        poll: &mut dyn FnMut() -> bool,
    ) -> Result<Option<Option<Match>>, PatError> {
        if self.done || self.pos > self.vm.src.len() {
            self.done = true;
            return Ok(None);
        }
        let start = self.pos;
        let res = self.vm.run(start, &mut self.steps, poll)?;
        self.pos = start + 1;
        if self.pat.anchored {
            self.done = true;
        }
        Ok(Some(res.map(|end| {
            self.pos = self.pos.max(end);
            self.vm.result(end)
        })))
    }
}

/// The capacity of `[]byte(s)` for a `len`-byte string when the slice does not escape, as in
/// stringlib.go `strGmatch` (`pm.Find(pattern, []byte(str), 0, -1)`): Go 1.19's
/// runtime/string.go `stringtoslicebyte` uses a 32-byte stack buffer (`tmpStringBufSize`) up
/// to 32 bytes, else `rawbyteslice`, whose capacity is runtime/msize.go `roundupsize`: the
/// next size class (runtime/sizeclasses.go `class_to_size`) below 32 KiB, else a multiple of
/// the 8 KiB page. (find/match/gsub pass the string's own bytes: capacity = length.)
pub fn go_bytes_capacity(len: usize) -> usize {
    const SIZE_CLASSES: [usize; 67] = [
        8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256, 288, 320,
        352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792,
        2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472,
        9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264,
        28672, 32768,
    ];
    const PAGE: usize = 8192;
    if len <= 32 {
        return 32;
    }
    if len < 32768 {
        return SIZE_CLASSES
            .iter()
            .copied()
            .find(|&class| class >= len)
            .unwrap_or(32768);
    }
    len.div_ceil(PAGE).saturating_mul(PAGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(p: &str, s: &str) -> Vec<(usize, usize, Vec<Cap>)> {
        let pat = Pattern::parse(p.as_bytes()).unwrap();
        let mut f = Finder::new(&pat, s.as_bytes(), 0);
        let mut out = Vec::new();
        while let Some(m) = f.next_match(&mut || true).unwrap() {
            out.push((m.start, m.end, m.caps));
        }
        out
    }

    fn first(p: &str, s: &str) -> Option<String> {
        let pat = Pattern::parse(p.as_bytes()).unwrap();
        let mut f = Finder::new(&pat, s.as_bytes(), 0);
        f.next_match(&mut || true)
            .unwrap()
            .map(|m| s[m.start..m.end].to_string())
    }

    #[test]
    fn frontier_is_a_literal_f() {
        assert_eq!(
            first("%f[%a]%a+", "THE (quick) fox").as_deref(),
            Some("fox")
        );
        assert_eq!(first("%f[%a]", "x"), None);
    }

    #[test]
    fn greedy_lazy_and_anchors() {
        assert_eq!(first("^(.-)%.", "foo.bar.baz").as_deref(), Some("foo."));
        assert_eq!(first("^(.*)%.", "foo.bar.baz").as_deref(), Some("foo.bar."));
        assert_eq!(
            first("^%s*(.-)%s*$", "  trim  ").as_deref(),
            Some("  trim  ")
        );
        assert_eq!(first("a$", "aab").as_deref(), None);
        assert_eq!(first("a$b", "xa$b").as_deref(), Some("a$b"));
        assert_eq!(first("[%w_%-]+$", "a-b_c").as_deref(), Some("a-b_c"));
    }

    #[test]
    fn captures_positions_and_backrefs() {
        assert_eq!(
            all("()b()", "abc"),
            vec![(1, 2, vec![Cap::Pos(2), Cap::Pos(3)])]
        );
        assert_eq!(first("(a)%1", "xaa").as_deref(), Some("aa"));
        assert_eq!(first("%b()", "x(a(b)c)d").as_deref(), Some("(a(b)c)"));
        assert!(matches!(Pattern::parse(b"%0"), Err(PatError::Lua(_))));
        let pat = Pattern::parse(b"%1(a)").unwrap();
        let err = Finder::new(&pat, b"aa", 0).next_match(&mut || true);
        assert!(matches!(err, Err(PatError::Lua(_))));
    }

    #[test]
    fn gopher_parse_quirks() {
        // %p is punctuation only at the 2022 pin.
        assert_eq!(first("%p+", "ab12;:c").as_deref(), Some(";:"));
        // A quantifier with nothing to repeat is a literal.
        assert_eq!(first("*a", "x*a").as_deref(), Some("*a"));
        assert_eq!(first("(a)*", "xa*").as_deref(), Some("a*"));
        assert_eq!(first("-canary$", "web-canary").as_deref(), Some("-canary"));
        // `]` and `-` first in a set are literals; `]` outside a set too.
        assert_eq!(first("[]]+", "a]]").as_deref(), Some("]]"));
        assert_eq!(first("[-a]+", "x-a").as_deref(), Some("-a"));
        assert_eq!(first("[-%]]+", "x-]").as_deref(), Some("-]"));
        assert_eq!(first("a]", "a]").as_deref(), Some("a]"));
        assert_eq!(first("[[]", "x[").as_deref(), Some("["));
        assert!(matches!(Pattern::parse(b"[]"), Err(PatError::Lua(_))));
        assert!(matches!(Pattern::parse(b"(a"), Err(PatError::Lua(_))));
        // Trailing '-' in a set is literal.
        assert_eq!(first("[a-]+", "x-a-"), Some("-a-".into()));
    }

    #[test]
    fn empty_matches_advance() {
        let spans: Vec<_> = all("%w*", "abc d")
            .into_iter()
            .map(|(s, e, _)| (s, e))
            .collect();
        assert_eq!(spans, vec![(0, 3), (3, 3), (4, 5), (5, 5)]);
    }

    #[test]
    fn long_subject_does_not_overflow_the_stack() {
        let s = "a".repeat(200_000);
        assert_eq!(first("^(.-)$", &s).map(|m| m.len()), Some(200_000));
        assert_eq!(first("^a*$", &s).map(|m| m.len()), Some(200_000));
    }

    #[test]
    fn budget_poll_aborts() {
        let s = "a".repeat(3000);
        let pat = Pattern::parse(b"a*a*a*a*b").unwrap();
        let mut f = Finder::new(&pat, s.as_bytes(), 0);
        let mut polls = 0;
        let res = f.next_match(&mut || {
            polls += 1;
            polls < 3
        });
        assert_eq!(res, Err(PatError::Budget));
    }
}
