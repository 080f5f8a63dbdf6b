//! Traefik's router rule language (`Host(`a`) && !PathPrefix(`/b`)`): the parser, the v2 and
//! v3 matcher sets, and matching a [`Request`] against a parsed rule.
//!
//! Facts from traefik/traefik (v3): `pkg/rules/parser.go` (`NewParser`: Go expression syntax
//! through vulcand/predicate, operators `&&`, `||`, `!`; each matcher also under its lower-case,
//! upper-case and title-case spelling), `pkg/muxer/http/parser.go` (`SyntaxParser.parse`: the
//! syntax `v2` or `v3`, anything else is v3), `pkg/muxer/http/matcher.go` (`httpFuncs`, v3) and
//! `pkg/muxer/http/matcher_v2.go` (`httpFuncsV2`, v2: gorilla/mux templates).

use regex::Regex;

use super::Request;
use super::fields::compile;
use super::probe::{Cond, Literal, ValueCond};
use super::request::ascii_lowercase;

/// The deepest nesting of parentheses and `!` the model evaluates (bounded recursion).
/// Traefik documents no such limit: a deeper rule is [`RuleError::PastBounds`], not invalid.
const MAX_DEPTH: usize = 64;
/// The most matchers the model evaluates in one rule: evaluation recurses once per operator,
/// so a longer rule is left unevaluated ([`RuleError::PastBounds`]) rather than risking the
/// stack. Traefik documents no such limit.
const MAX_MATCHERS: usize = 256;

/// Why a rule cannot be matched against requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RuleError {
    /// Traefik refuses the rule: the router is dropped.
    Invalid(String),
    /// The rule is past the model's own bounds ([`MAX_DEPTH`], [`MAX_MATCHERS`]); Traefik may
    /// well accept it, and which requests it takes is not known.
    PastBounds(String),
}

/// The rule syntax of a router.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Syntax {
    V2,
    V3,
}

impl Syntax {
    /// `pkg/muxer/http/parser.go` `SyntaxParser.parse`: an unknown or empty syntax falls back to
    /// the v3 parser (the static `core.defaultRuleSyntax`, deprecated in v3.4, is not modelled).
    pub fn of(value: Option<&str>) -> Syntax {
        match value {
            Some("v2") => Syntax::V2,
            _ => Syntax::V3,
        }
    }
}

/// A parsed rule, before matcher names are resolved.
#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Call(String, Vec<String>),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

/// A value test: equality or an RE2 pattern.
#[derive(Debug, Clone)]
enum Text {
    Exact(String),
    Pattern(std::rc::Rc<Regex>),
}

impl Text {
    fn test(&self, value: &str) -> bool {
        match self {
            Text::Exact(v) => v == value,
            Text::Pattern(re) => re.is_match(value),
        }
    }
}

/// One resolved matcher.
#[derive(Debug, Clone)]
enum Leaf {
    /// Any of these hosts (compared lower-cased) or host patterns.
    Host(Vec<Text>),
    /// Any of these path tests.
    Path(Vec<Text>),
    PathPrefix(String),
    Method(Vec<String>),
    /// All of these headers (lower-cased names); `None` = present with any value.
    Headers(Vec<(String, Option<Text>)>),
    /// All of these query parameters; `None` = present with any value.
    Query(Vec<(String, Option<Text>)>),
    /// `ClientIP`: probes carry no client address, so it never matches.
    ClientIp,
}

/// A rule ready to match requests.
#[derive(Debug, Clone)]
pub struct Rule {
    tree: Tree,
}

#[derive(Debug, Clone)]
enum Tree {
    Leaf(Leaf, Expr),
    Not(Box<Tree>),
    And(Box<Tree>, Box<Tree>),
    Or(Box<Tree>, Box<Tree>),
}

impl Rule {
    /// Parses `rule` under `syntax`; an invalid rule's error is what Traefik would report (the
    /// router is then dropped).
    pub fn parse(rule: &str, syntax: Syntax) -> Result<Rule, RuleError> {
        let tokens = tokenize(rule).map_err(RuleError::Invalid)?;
        let mut parser = Parser {
            tokens,
            at: 0,
            calls: 0,
            past_bounds: false,
        };
        let parsed = parser.or(0);
        let expr = parsed.map_err(|e| {
            if parser.past_bounds {
                RuleError::PastBounds(e)
            } else {
                RuleError::Invalid(e)
            }
        })?;
        if parser.at != parser.tokens.len() {
            return Err(RuleError::Invalid(format!(
                "unexpected {} in rule",
                parser.tokens[parser.at].show()
            )));
        }
        Ok(Rule {
            tree: resolve(&expr, syntax).map_err(RuleError::Invalid)?,
        })
    }

    /// Whether the rule tests `ClientIP`, which the model does not evaluate (probes carry no
    /// client address).
    pub fn tests_client_ip(&self) -> bool {
        fn walk(tree: &Tree) -> bool {
            match tree {
                Tree::Leaf(Leaf::ClientIp, _) => true,
                Tree::Leaf(..) => false,
                Tree::Not(inner) => walk(inner),
                Tree::And(a, b) | Tree::Or(a, b) => walk(a) || walk(b),
            }
        }
        walk(&self.tree)
    }

    pub fn matches(&self, request: &Request) -> bool {
        self.tree.matches(request)
    }

    /// The rule in disjunctive form, as probe literals (at most `limit` conjunctions).
    pub fn conjunctions(&self, limit: usize) -> Vec<Vec<Literal>> {
        let mut out = dnf(&self.tree, true, limit);
        out.truncate(limit);
        out
    }
}

impl Tree {
    fn matches(&self, request: &Request) -> bool {
        match self {
            Tree::Leaf(leaf, _) => leaf.matches(request),
            Tree::Not(t) => !t.matches(request),
            Tree::And(a, b) => a.matches(request) && b.matches(request),
            Tree::Or(a, b) => a.matches(request) || b.matches(request),
        }
    }
}

impl Leaf {
    fn matches(&self, request: &Request) -> bool {
        match self {
            // matcher.go `host`: no host → no match; hosts compare lower-cased, a trailing dot
            // on either side is ignored.
            Leaf::Host(hosts) => request.host.as_deref().is_some_and(|host| {
                let host = ascii_lowercase(host);
                let host = host.strip_suffix('.').unwrap_or(&host);
                hosts.iter().any(|t| match t {
                    Text::Exact(h) => h.strip_suffix('.').unwrap_or(h) == host,
                    Text::Pattern(re) => re.is_match(host),
                })
            }),
            Leaf::Path(tests) => tests.iter().any(|t| t.test(&request.path)),
            Leaf::PathPrefix(prefix) => request.path.starts_with(prefix.as_str()),
            Leaf::Method(methods) => methods.iter().any(|m| *m == request.method),
            Leaf::Headers(pairs) => pairs.iter().all(|(name, test)| {
                request
                    .headers
                    .get(name)
                    .is_some_and(|v| test.as_ref().is_none_or(|t| t.test(v)))
            }),
            Leaf::Query(pairs) => pairs.iter().all(|(name, test)| {
                request
                    .query
                    .get(name)
                    .is_some_and(|v| test.as_ref().is_none_or(|t| t.test(v)))
            }),
            Leaf::ClientIp => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    Str(String),
    Open,
    Close,
    Comma,
    And,
    Or,
    Not,
}

impl Token {
    fn show(&self) -> String {
        match self {
            Token::Ident(s) => format!("`{s}`"),
            Token::Str(s) => format!("string {s:?}"),
            Token::Open => "`(`".into(),
            Token::Close => "`)`".into(),
            Token::Comma => "`,`".into(),
            Token::And => "`&&`".into(),
            Token::Or => "`||`".into(),
            Token::Not => "`!`".into(),
        }
    }
}

/// Go's lexical rules for what predicate accepts: identifiers, raw (backtick) and interpreted
/// (double-quoted) string literals, and the operators.
fn tokenize(rule: &str) -> Result<Vec<Token>, String> {
    let mut tokens = Vec::new();
    let mut chars = rule.char_indices().peekable();
    while let Some((_, c)) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' => {}
            '(' => tokens.push(Token::Open),
            ')' => tokens.push(Token::Close),
            ',' => tokens.push(Token::Comma),
            '!' => tokens.push(Token::Not),
            '&' | '|' => {
                if chars.next_if(|(_, n)| *n == c).is_none() {
                    return Err(format!("unsupported operator `{c}`"));
                }
                tokens.push(if c == '&' { Token::And } else { Token::Or });
            }
            '`' => {
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some((_, '`')) => break,
                        // Go drops carriage returns from raw strings.
                        Some((_, '\r')) => {}
                        Some((_, ch)) => s.push(ch),
                        None => return Err("raw string literal not terminated".into()),
                    }
                }
                tokens.push(Token::Str(s));
            }
            '"' => {
                let mut s = String::new();
                loop {
                    match chars.next() {
                        Some((_, '"')) => break,
                        Some((_, '\\')) => s.push(unescape(&mut chars)?),
                        Some((_, '\n')) | None => {
                            return Err("string literal not terminated".into());
                        }
                        Some((_, ch)) => s.push(ch),
                    }
                }
                tokens.push(Token::Str(s));
            }
            c if c.is_alphabetic() || c == '_' => {
                let mut s = String::from(c);
                while let Some((_, n)) = chars.next_if(|(_, n)| n.is_alphanumeric() || *n == '_') {
                    s.push(n);
                }
                tokens.push(Token::Ident(s));
            }
            other => return Err(format!("unexpected character {other:?} in rule")),
        }
    }
    Ok(tokens)
}

/// One Go escape sequence after `\` (the language spec, "Rune literals").
fn unescape(chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>) -> Result<char, String> {
    let hex = |chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>, n: usize| {
        let digits: String = (0..n)
            .filter_map(|_| chars.next().map(|(_, c)| c))
            .collect();
        u32::from_str_radix(&digits, 16)
            .ok()
            .filter(|_| digits.len() == n)
            .and_then(char::from_u32)
            .ok_or_else(|| format!("invalid escape \\{digits}"))
    };
    match chars.next().map(|(_, c)| c) {
        Some('a') => Ok('\x07'),
        Some('b') => Ok('\x08'),
        Some('f') => Ok('\x0c'),
        Some('n') => Ok('\n'),
        Some('r') => Ok('\r'),
        Some('t') => Ok('\t'),
        Some('v') => Ok('\x0b'),
        Some('\\') => Ok('\\'),
        Some('"') => Ok('"'),
        Some('x') => hex(chars, 2),
        Some('u') => hex(chars, 4),
        Some('U') => hex(chars, 8),
        Some(d @ '0'..='7') => {
            let mut value = d.to_digit(8).unwrap_or(0);
            for _ in 0..2 {
                match chars.next().and_then(|(_, c)| c.to_digit(8)) {
                    Some(v) => value = value * 8 + v,
                    None => return Err("invalid octal escape".into()),
                }
            }
            char::from_u32(value)
                .filter(|_| value < 256)
                .ok_or_else(|| "invalid octal escape".into())
        }
        other => Err(format!("unknown escape sequence {other:?}")),
    }
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    calls: usize,
    /// Set when parsing stopped at one of the model's bounds.
    past_bounds: bool,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, token: &Token) -> bool {
        if self.peek() == Some(token) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, token: Token) -> Result<(), String> {
        if self.eat(&token) {
            Ok(())
        } else {
            Err(match self.peek() {
                Some(t) => format!("expected {}, found {}", token.show(), t.show()),
                None => format!("expected {} at the end of the rule", token.show()),
            })
        }
    }

    /// Go precedence: `||` below `&&` below unary `!`.
    fn or(&mut self, depth: usize) -> Result<Expr, String> {
        let mut left = self.and(depth)?;
        while self.eat(&Token::Or) {
            let right = self.and(depth)?;
            left = Expr::Or(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn and(&mut self, depth: usize) -> Result<Expr, String> {
        let mut left = self.unary(depth)?;
        while self.eat(&Token::And) {
            let right = self.unary(depth)?;
            left = Expr::And(Box::new(left), Box::new(right));
        }
        Ok(left)
    }

    fn unary(&mut self, depth: usize) -> Result<Expr, String> {
        if depth > MAX_DEPTH {
            self.past_bounds = true;
            return Err(format!(
                "the rule nests parentheses or `!` more than {MAX_DEPTH} deep, deeper than the model evaluates"
            ));
        }
        if self.eat(&Token::Not) {
            return Ok(Expr::Not(Box::new(self.unary(depth + 1)?)));
        }
        if self.eat(&Token::Open) {
            let inner = self.or(depth + 1)?;
            self.expect(Token::Close)?;
            return Ok(inner);
        }
        match self.tokens.get(self.at).cloned() {
            Some(Token::Ident(name)) => {
                self.at += 1;
                self.expect(Token::Open)?;
                let mut args = Vec::new();
                while !self.eat(&Token::Close) {
                    match self.tokens.get(self.at).cloned() {
                        Some(Token::Str(s)) => {
                            self.at += 1;
                            args.push(s);
                        }
                        Some(t) => return Err(format!("unsupported argument {}", t.show())),
                        None => return Err("unterminated matcher call".into()),
                    }
                    if !self.eat(&Token::Comma) {
                        self.expect(Token::Close)?;
                        break;
                    }
                }
                self.calls += 1;
                if self.calls > MAX_MATCHERS {
                    self.past_bounds = true;
                    return Err(format!(
                        "the rule has more than {MAX_MATCHERS} matchers, more than the model evaluates"
                    ));
                }
                Ok(Expr::Call(name, args))
            }
            Some(t) => Err(format!("unexpected {}", t.show())),
            None => Err("the rule ends too early".into()),
        }
    }
}

const V3_MATCHERS: [&str; 11] = [
    "ClientIP",
    "Method",
    "Host",
    "HostRegexp",
    "Path",
    "PathRegexp",
    "PathPrefix",
    "Header",
    "HeaderRegexp",
    "Query",
    "QueryRegexp",
];

const V2_MATCHERS: [&str; 10] = [
    "Host",
    "HostHeader",
    "HostRegexp",
    "ClientIP",
    "Path",
    "PathPrefix",
    "Method",
    "Headers",
    "HeadersRegexp",
    "Query",
];

/// `rules.NewParser`: a matcher is known under its own spelling, lower case, upper case and
/// title case (`Pathprefix`).
fn canonical(name: &str, syntax: Syntax) -> Option<&'static str> {
    let names: &[&'static str] = match syntax {
        Syntax::V2 => &V2_MATCHERS,
        Syntax::V3 => &V3_MATCHERS,
    };
    // Compared byte by byte (the names are ASCII): this runs for every matcher of every rule.
    let spelled = |name: &str, m: &str, case: fn(usize, u8) -> u8| {
        name.len() == m.len()
            && name
                .bytes()
                .zip(m.bytes())
                .enumerate()
                .all(|(i, (a, b))| a == case(i, b))
    };
    names.iter().copied().find(|m| {
        name == *m
            || spelled(name, m, |_, b| b.to_ascii_lowercase())
            || spelled(name, m, |_, b| b.to_ascii_uppercase())
            || spelled(name, m, |i, b| {
                if i == 0 {
                    b.to_ascii_uppercase()
                } else {
                    b.to_ascii_lowercase()
                }
            })
    })
}

fn resolve(expr: &Expr, syntax: Syntax) -> Result<Tree, String> {
    Ok(match expr {
        Expr::Not(e) => Tree::Not(Box::new(resolve(e, syntax)?)),
        Expr::And(a, b) => Tree::And(Box::new(resolve(a, syntax)?), Box::new(resolve(b, syntax)?)),
        Expr::Or(a, b) => Tree::Or(Box::new(resolve(a, syntax)?), Box::new(resolve(b, syntax)?)),
        Expr::Call(name, args) => {
            let Some(matcher) = canonical(name, syntax) else {
                let other = match syntax {
                    Syntax::V2 => canonical(name, Syntax::V3)
                        .map(|_| " (a v3 matcher; the router has `syntax: v2`)"),
                    Syntax::V3 => canonical(name, Syntax::V2)
                        .map(|_| " (a v2 matcher; v3 is the default syntax)"),
                };
                return Err(format!(
                    "unsupported function: {name}{}",
                    other.unwrap_or("")
                ));
            };
            let leaf = match syntax {
                Syntax::V3 => leaf_v3(matcher, args),
                Syntax::V2 => leaf_v2(matcher, args),
            }
            .map_err(|e| format!("{matcher}: {e}"))?;
            Tree::Leaf(leaf, expr.clone())
        }
    })
}

/// `matcher.go` `httpFuncs` with `expectNParameters`.
fn leaf_v3(matcher: &str, args: &[String]) -> Result<Leaf, String> {
    let arity: &[usize] = match matcher {
        "Header" | "HeaderRegexp" => &[2],
        "Query" | "QueryRegexp" => &[1, 2],
        _ => &[1],
    };
    if !arity.contains(&args.len()) {
        return Err(format!(
            "unexpected number of parameters; got {}, expected one of {arity:?}",
            args.len()
        ));
    }
    let first = args[0].clone();
    let pattern = |p: &str| compile(p).map(Text::Pattern);
    Ok(match matcher {
        "ClientIP" => Leaf::ClientIp,
        "Method" => Leaf::Method(vec![first.to_ascii_uppercase()]),
        "Host" => {
            // `host`: non-ASCII hosts are refused; the host is lower-cased.
            if !first.is_ascii() {
                return Err(format!(
                    "invalid value {first:?} for Host matcher, non-ASCII characters are not allowed"
                ));
            }
            Leaf::Host(vec![Text::Exact(first.to_ascii_lowercase())])
        }
        "HostRegexp" => Leaf::Host(vec![pattern(&first)?]),
        "Path" | "PathPrefix" => {
            if !first.starts_with('/') {
                return Err(format!("path {first:?} does not start with a '/'"));
            }
            if matcher == "Path" {
                Leaf::Path(vec![Text::Exact(first)])
            } else {
                Leaf::PathPrefix(first)
            }
        }
        "PathRegexp" => Leaf::Path(vec![pattern(&first)?]),
        "Header" => Leaf::Headers(vec![(
            first.to_ascii_lowercase(),
            Some(Text::Exact(args[1].clone())),
        )]),
        "HeaderRegexp" => {
            Leaf::Headers(vec![(first.to_ascii_lowercase(), Some(pattern(&args[1])?))])
        }
        // `query`: without a value the parameter must be present with an empty value;
        // `queryRegexp` with one argument is `query`.
        "Query" | "QueryRegexp" => {
            let value = args.get(1).cloned().unwrap_or_default();
            let test = if matcher == "QueryRegexp" && args.len() == 2 {
                pattern(&value)?
            } else {
                Text::Exact(value)
            };
            Leaf::Query(vec![(first, Some(test))])
        }
        _ => return Err("unknown matcher".into()),
    })
}

/// `matcher_v2.go` `httpFuncsV2`: gorilla/mux routes.
fn leaf_v2(matcher: &str, args: &[String]) -> Result<Leaf, String> {
    if args.is_empty() {
        return Err("no args".into());
    }
    Ok(match matcher {
        "ClientIP" => Leaf::ClientIp,
        // `methodsV2`: gorilla `Methods` upper-cases.
        "Method" => Leaf::Method(args.iter().map(|m| m.to_ascii_uppercase()).collect()),
        "Host" | "HostHeader" => {
            if let Some(h) = args.iter().find(|h| !h.is_ascii()) {
                return Err(format!(
                    "invalid value {h:?} for \"Host\" matcher, non-ASCII characters are not allowed"
                ));
            }
            Leaf::Host(
                args.iter()
                    .map(|h| Text::Exact(h.to_ascii_lowercase()))
                    .collect(),
            )
        }
        // gorilla `Host` templates: a variable matches `[^.]+` by default.
        "HostRegexp" => Leaf::Host(
            args.iter()
                .map(|h| template(h, "[^.]+", true).map(Text::Pattern))
                .collect::<Result<_, _>>()?,
        ),
        // gorilla `Path` (whole path) and `PathPrefix` templates: a variable matches `[^/]+`.
        "Path" | "PathPrefix" => Leaf::Path(
            args.iter()
                .map(|p| template(p, "[^/]+", matcher == "Path").map(Text::Pattern))
                .collect::<Result<_, _>>()?,
        ),
        "Headers" | "HeadersRegexp" => {
            // gorilla `Headers`/`HeadersRegexp`: name/value pairs; an empty value only asks
            // for the header; `HeadersRegexp` values are unanchored patterns.
            if !args.len().is_multiple_of(2) {
                return Err(format!(
                    "number of parameters must be multiple of 2, got {args:?}"
                ));
            }
            let mut pairs = Vec::new();
            for pair in args.chunks(2) {
                let test = if pair[1].is_empty() {
                    None
                } else if matcher == "Headers" {
                    Some(Text::Exact(pair[1].clone()))
                } else {
                    Some(compile(&pair[1]).map(Text::Pattern)?)
                };
                pairs.push((pair[0].to_ascii_lowercase(), test));
            }
            Leaf::Headers(pairs)
        }
        "Query" => {
            // `queryV2`: each argument split once at `=`, then taken as gorilla `Queries`
            // pairs (so `Query(`a`, `1`)` means a=1); a value is a template (a variable
            // matches `.*`), an empty value only asks for the parameter.
            let flat: Vec<&str> = args.iter().flat_map(|a| a.splitn(2, '=')).collect();
            if !flat.len().is_multiple_of(2) {
                return Err(format!(
                    "number of parameters must be multiple of 2, got {flat:?}"
                ));
            }
            let mut pairs = Vec::new();
            for pair in flat.chunks(2) {
                let test = if pair[1].is_empty() {
                    None
                } else {
                    Some(template(pair[1], ".*", true).map(Text::Pattern)?)
                };
                pairs.push((pair[0].to_owned(), test));
            }
            Leaf::Query(pairs)
        }
        _ => return Err("unknown matcher".into()),
    })
}

/// A gorilla/mux template (`/items/{id:[0-9]+}`) as a pattern anchored at the start (and at
/// the end when `whole`): literal text escaped, `{name}` → `default`, `{name:re}` → `re`.
fn template(text: &str, default: &str, whole: bool) -> Result<std::rc::Rc<Regex>, String> {
    let mut pattern = String::from("^");
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        pattern.push_str(&regex::escape(&rest[..open]));
        // gorilla `braceIndices`: braces must balance.
        let mut level = 0;
        let mut close = None;
        for (i, c) in rest[open..].char_indices() {
            match c {
                '{' => level += 1,
                '}' => {
                    level -= 1;
                    if level == 0 {
                        close = Some(open + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let close = close.ok_or_else(|| format!("unbalanced braces in {text:?}"))?;
        let var = &rest[open + 1..close];
        match var.split_once(':') {
            Some((_, re)) => pattern.push_str(&format!("(?:{re})")),
            None => pattern.push_str(&format!("(?:{default})")),
        }
        rest = &rest[close + 1..];
    }
    if rest.contains('}') {
        return Err(format!("unbalanced braces in {text:?}"));
    }
    pattern.push_str(&regex::escape(rest));
    if whole {
        pattern.push('$');
    }
    compile(&pattern)
}

/// Disjunctive normal form of `tree` (negated when `positive` is false), as probe literals.
fn dnf(tree: &Tree, positive: bool, limit: usize) -> Vec<Vec<Literal>> {
    match (tree, positive) {
        (Tree::Not(t), p) => dnf(t, !p, limit),
        (Tree::Or(a, b), true) | (Tree::And(a, b), false) => {
            let mut out = dnf(a, positive, limit);
            out.extend(dnf(b, positive, limit));
            out.truncate(limit);
            out
        }
        (Tree::And(a, b), true) | (Tree::Or(a, b), false) => {
            let left = dnf(a, positive, limit);
            let right = dnf(b, positive, limit);
            let mut out = Vec::new();
            for l in &left {
                for r in &right {
                    if out.len() < limit {
                        out.push(l.iter().chain(r).cloned().collect());
                    }
                }
            }
            out
        }
        (Tree::Leaf(_, expr), p) => vec![
            literals(expr)
                .into_iter()
                .map(|(c, holds)| (c, holds == p))
                .collect(),
        ],
    }
}

/// The probe conditions of one matcher call (all must hold for it to match).
fn literals(expr: &Expr) -> Vec<Literal> {
    let Expr::Call(name, args) = expr else {
        return Vec::new();
    };
    let name = name.to_ascii_lowercase();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let value = |v: String, regex: bool| {
        if v.is_empty() {
            ValueCond::Present
        } else if regex {
            ValueCond::Regex(v)
        } else {
            ValueCond::Exact(v)
        }
    };
    match name.as_str() {
        "host" | "hostheader" => vec![(Cond::Host(arg(0)), true)],
        "path" => vec![(Cond::PathExact(arg(0)), true)],
        "pathprefix" => vec![(Cond::PathPrefix(arg(0)), true)],
        "pathregexp" => vec![(Cond::PathRegex(arg(0)), true)],
        "method" => vec![(Cond::Method(arg(0)), true)],
        "header" => vec![(Cond::Header(arg(0), ValueCond::Exact(arg(1))), true)],
        "headerregexp" => vec![(Cond::Header(arg(0), ValueCond::Regex(arg(1))), true)],
        "headers" | "headersregexp" => args
            .chunks(2)
            .map(|p| {
                let v = p.get(1).cloned().unwrap_or_default();
                (
                    Cond::Header(p[0].clone(), value(v, name == "headersregexp")),
                    true,
                )
            })
            .collect(),
        "query" if args.len() == 2 || !arg(0).contains('=') => {
            vec![(Cond::Query(arg(0), ValueCond::Exact(arg(1))), true)]
        }
        "query" => args
            .iter()
            .map(|a| {
                let (k, v) = a.split_once('=').unwrap_or((a, ""));
                (Cond::Query(k.to_owned(), value(v.to_owned(), false)), true)
            })
            .collect(),
        "queryregexp" => vec![(Cond::Query(arg(0), ValueCond::Regex(arg(1))), true)],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(host: &str, path: &str, headers: &[(&str, &str)], query: &[(&str, &str)]) -> Request {
        let mut r = Request::get(path);
        r.host = Some(host.into());
        for (k, v) in headers {
            r.headers.insert(k.to_string(), v.to_string());
        }
        for (k, v) in query {
            r.query.insert(k.to_string(), v.to_string());
        }
        r
    }

    #[test]
    fn precedence_and_negation_follow_go() {
        let rule = Rule::parse(
            "Host(`a.com`) && !PathPrefix(`/static`) || Header(`X-Canary`, `1`)",
            Syntax::V3,
        )
        .unwrap();
        assert!(rule.matches(&req("a.com", "/", &[], &[])));
        assert!(!rule.matches(&req("a.com", "/static/x", &[], &[])));
        // `||` binds last: the header alone is enough.
        assert!(rule.matches(&req("b.com", "/static", &[("x-canary", "1")], &[])));
    }

    #[test]
    fn v3_matchers_are_refused_under_v2_and_back() {
        let err = Rule::parse("Header(`X-Canary`, `1`)", Syntax::V2).unwrap_err();
        assert!(
            matches!(&err, RuleError::Invalid(e) if e.contains("a v3 matcher")),
            "{err:?}"
        );
        assert!(Rule::parse("QueryRegexp(`a`, `b`)", Syntax::V2).is_err());
        assert!(Rule::parse("Headers(`X-Canary`, `1`)", Syntax::V3).is_err());
        assert!(Rule::parse("Headers(`X-Canary`, `1`)", Syntax::V2).is_ok());
        // Spellings: lower, upper and title case are accepted, others not.
        assert!(Rule::parse("pathprefix(`/a`)", Syntax::V3).is_ok());
        assert!(Rule::parse("Pathprefix(`/a`)", Syntax::V3).is_ok());
        assert!(Rule::parse("pathPrefix(`/a`)", Syntax::V3).is_err());
    }

    #[test]
    fn v2_query_and_headers_take_pairs() {
        let rule = Rule::parse("Query(`beta=1`, `x`) ", Syntax::V2);
        assert!(rule.is_err(), "an odd number of query parts");
        let rule = Rule::parse("Query(`beta=1`) && Headers(`X-A`, ``)", Syntax::V2).unwrap();
        assert!(rule.matches(&req("h", "/", &[("x-a", "z")], &[("beta", "1")])));
        assert!(!rule.matches(&req("h", "/", &[], &[("beta", "1")])));
        // The v2 Path is a whole-path template.
        let rule = Rule::parse("Path(`/items/{id:[0-9]+}`)", Syntax::V2).unwrap();
        assert!(rule.matches(&req("h", "/items/42", &[], &[])));
        assert!(!rule.matches(&req("h", "/items/42/x", &[], &[])));
    }

    #[test]
    fn v3_query_without_value_wants_an_empty_value() {
        let rule = Rule::parse("Query(`beta`)", Syntax::V3).unwrap();
        assert!(rule.matches(&req("h", "/", &[], &[("beta", "")])));
        assert!(!rule.matches(&req("h", "/", &[], &[("beta", "1")])));
    }

    #[test]
    fn go_strings_unescape_and_bad_rules_fail() {
        let rule = Rule::parse(r#"Header(`x-note`, "say `hi`\t")"#, Syntax::V3).unwrap();
        assert!(rule.matches(&req("h", "/", &[("x-note", "say `hi`\t")], &[])));
        for bad in [
            "Host(`a`",
            "Host(`a`) &",
            "Host(`a`) Path(`/`)",
            "Path(`x`)",
            "Host(a)",
        ] {
            assert!(Rule::parse(bad, Syntax::V3).is_err(), "{bad}");
        }
    }

    /// QA repros `traefik-256hosts`, `traefik-depth100-silent`: the model's own bounds were
    /// reported as Traefik's rejection. They are past the model's bounds, not invalid.
    #[test]
    fn rules_past_the_models_bounds_are_not_invalid() {
        let deep = format!("{}Host(`a`){}", "(".repeat(500), ")".repeat(500));
        assert!(matches!(
            Rule::parse(&deep, Syntax::V3),
            Err(RuleError::PastBounds(e)) if e.contains("more than 64 deep")
        ));
        let long = vec!["Host(`a`)"; 100_000].join(" && ");
        assert!(matches!(
            Rule::parse(&long, Syntax::V3),
            Err(RuleError::PastBounds(e)) if e.contains("more than 256 matchers")
        ));
        let within = vec!["Host(`a`)"; 256].join(" || ");
        assert!(Rule::parse(&within, Syntax::V3).is_ok());
        // An invalid rule within the bounds stays invalid.
        assert!(matches!(
            Rule::parse("Host(`a`) &&", Syntax::V3),
            Err(RuleError::Invalid(_))
        ));
    }

    #[test]
    fn conjunctions_cover_each_branch() {
        let rule =
            Rule::parse("Host(`a`) && (Path(`/x`) || !Header(`h`, `1`))", Syntax::V3).unwrap();
        let conj = rule.conjunctions(16);
        assert_eq!(conj.len(), 2);
        assert_eq!(
            conj[1][1],
            (
                Cond::Header("h".into(), ValueCond::Exact("1".into())),
                false
            )
        );
    }
}
