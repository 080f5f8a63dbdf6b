//! Kubernetes' CEL URL library (`url`, `isURL`, `getScheme`, `getHost`, `getHostname`,
//! `getPort`, `getEscapedPath`, `getQuery`), as k8s.io/apiserver `pkg/cel/library/urls.go`
//! declares it, over URLs parsed as Go's `net/url.ParseRequestURI` parses them (an absolute
//! URI or an absolute path; `#` is not split off, as a request URI has no fragment).

use std::collections::HashMap;

use cel::common::types::{CelBool, CelList, CelMap, CelMapKey, CelString, Type};
use cel::common::value::Val;
use cel::{DeclarationError, Env, ExecutionError};

static URL: Type = Type::new_unspecified_type("kubernetes.URL");

/// A parsed URL: what the getters return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    scheme: String,
    /// Host and port, as written (`[::1]:80`).
    host: String,
    /// The path, unescaped (Go's `URL.Path`).
    path: String,
    /// The path as written, when it is a valid encoding of `path` (Go's `RawPath` rule).
    raw_path: Option<String>,
    raw_query: String,
}

library_value!(Url, URL);

/// Go's `shouldEscape` modes used here.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Path,
    Host,
    QueryComponent,
}

fn unreserved(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.' | b'~')
}

/// RFC 3986's sub-delims, which Go's `shouldEscape` (host mode) and `validEncoded` both let
/// through.
fn sub_delim(c: u8) -> bool {
    matches!(
        c,
        b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'='
    )
}

/// Go `net/url.shouldEscape`, for the modes above.
fn should_escape(c: u8, mode: Mode) -> bool {
    if unreserved(c) {
        return false;
    }
    if mode == Mode::Host && (sub_delim(c) || matches!(c, b':' | b'[' | b']' | b'<' | b'>' | b'"'))
    {
        return false;
    }
    match c {
        b'$' | b'&' | b'+' | b',' | b'/' | b':' | b';' | b'=' | b'?' | b'@' => match mode {
            Mode::Path => c == b'?',
            Mode::QueryComponent => true,
            Mode::Host => true,
        },
        _ => true,
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

/// Go `net/url.unescape`: `%XX` decoded (and `+` as space in a query component); `None` on a
/// bad escape, or in a host, on a character a host cannot hold.
fn unescape(text: &str, mode: Mode) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'%' => {
                let high = hex(*bytes.get(at + 1)?)?;
                let low = hex(*bytes.get(at + 2)?)?;
                out.push(high << 4 | low);
                at += 3;
            }
            b'+' if mode == Mode::QueryComponent => {
                out.push(b' ');
                at += 1;
            }
            c => {
                if mode == Mode::Host && c < 0x80 && should_escape(c, mode) {
                    return None;
                }
                out.push(c);
                at += 1;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// Go `net/url.escape` in path mode.
fn escape_path(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &c in text.as_bytes() {
        if should_escape(c, Mode::Path) {
            out.push_str(&format!("%{c:02X}"));
        } else {
            out.push(c as char);
        }
    }
    out
}

/// Go `net/url.validEncoded` in path mode.
fn valid_encoded_path(text: &str) -> bool {
    text.bytes().all(|c| {
        sub_delim(c)
            || matches!(c, b':' | b'@' | b'[' | b']' | b'%')
            || !should_escape(c, Mode::Path)
    })
}

/// Go `net/url.validOptionalPort`.
fn valid_optional_port(port: &str) -> bool {
    port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
}

/// Go `net/url.parseHost`, checking only.
fn valid_host(host: &str) -> bool {
    if let Some(rest) = host.strip_prefix('[') {
        let Some(close) = rest.rfind(']') else {
            return false;
        };
        if !valid_optional_port(&rest[close + 1..]) {
            return false;
        }
    } else if let Some(colon) = host.rfind(':')
        && !valid_optional_port(&host[colon..])
    {
        return false;
    }
    unescape(host, Mode::Host).is_some()
}

impl Url {
    /// Parses `text` as Go's `url.ParseRequestURI`; the error says why not.
    pub(crate) fn parse(text: &str) -> Result<Url, String> {
        if text.bytes().any(|b| b < 0x20 || b == 0x7f) {
            return Err("net/url: invalid control character in URL".into());
        }
        if text.is_empty() {
            return Err("empty url".into());
        }
        let mut url = Url {
            scheme: String::new(),
            host: String::new(),
            path: String::new(),
            raw_path: None,
            raw_query: String::new(),
        };
        if text == "*" {
            url.path = "*".into();
            return Ok(url);
        }
        let mut rest = text;
        for (i, c) in text.bytes().enumerate() {
            match c {
                b'a'..=b'z' | b'A'..=b'Z' => {}
                b'0'..=b'9' | b'+' | b'-' | b'.' if i > 0 => {}
                b':' if i == 0 => return Err("missing protocol scheme".into()),
                b':' => {
                    url.scheme = text[..i].to_ascii_lowercase();
                    rest = &text[i + 1..];
                    break;
                }
                _ => break,
            }
        }
        if rest.ends_with('?') && rest.matches('?').count() == 1 {
            rest = &rest[..rest.len() - 1];
        } else if let Some((before, query)) = rest.split_once('?') {
            url.raw_query = query.to_owned();
            rest = before;
        }
        if !rest.starts_with('/') {
            if !url.scheme.is_empty() {
                // An opaque URL (`mailto:x`): Go keeps it, with no host or path.
                return Ok(url);
            }
            return Err("invalid URI for request".into());
        }
        if !url.scheme.is_empty() && rest.starts_with("//") {
            let after = &rest[2..];
            let (authority, path) = match after.find('/') {
                Some(slash) => (&after[..slash], &after[slash..]),
                None => (after, ""),
            };
            let host = match authority.rfind('@') {
                Some(at) => {
                    let user = &authority[..at];
                    let valid_user = user
                        .bytes()
                        .all(|c| unreserved(c) || b":!$&'()*+,;=%@".contains(&c));
                    if !valid_user {
                        return Err("net/url: invalid userinfo".into());
                    }
                    &authority[at + 1..]
                }
                None => authority,
            };
            if !valid_host(host) {
                return Err(format!("invalid host or port in {host:?}"));
            }
            url.host = host.to_owned();
            rest = path;
        }
        url.path = unescape(rest, Mode::Path).ok_or_else(|| "invalid URL escape".to_owned())?;
        if escape_path(&url.path) != rest {
            url.raw_path = Some(rest.to_owned());
        }
        Ok(url)
    }

    fn hostname(&self) -> &str {
        let host = &self.host;
        if let Some(rest) = host.strip_prefix('[') {
            return rest.find(']').map_or(rest, |end| &rest[..end]);
        }
        host.rfind(':')
            .map_or(host.as_str(), |colon| &host[..colon])
    }

    fn port(&self) -> &str {
        let host = &self.host;
        let after_brackets = host.rfind(']').map_or(0, |end| end + 1);
        host[after_brackets..]
            .rfind(':')
            .map_or("", |colon| &host[after_brackets + colon + 1..])
    }

    /// Go's `URL.EscapedPath`.
    fn escaped_path(&self) -> String {
        if let Some(raw) = &self.raw_path
            && valid_encoded_path(raw)
            && unescape(raw, Mode::Path).as_ref() == Some(&self.path)
        {
            return raw.clone();
        }
        if self.path == "*" {
            return "*".into();
        }
        escape_path(&self.path)
    }

    /// Go's `URL.Query` (`url.ParseQuery`, pairs it cannot read left out).
    fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut keys: Vec<(String, Vec<String>)> = Vec::new();
        for pair in self.raw_query.split('&') {
            if pair.is_empty() || pair.contains(';') {
                continue;
            }
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let (Some(key), Some(value)) = (
                unescape(key, Mode::QueryComponent),
                unescape(value, Mode::QueryComponent),
            ) else {
                continue;
            };
            match keys.iter_mut().find(|(k, _)| *k == key) {
                Some((_, values)) => values.push(value),
                None => keys.push((key, vec![value])),
            }
        }
        keys
    }
}

fn url(text: &CelString<'_>) -> Result<Url, ExecutionError> {
    Url::parse(text.inner()).map_err(|reason| {
        ExecutionError::function_error(
            "url",
            format!("URL parse error during conversion from string: {reason}"),
        )
    })
}

fn is_url(text: &CelString<'_>) -> CelBool {
    Url::parse(text.inner()).is_ok().into()
}

fn get_scheme(this: &Url) -> CelString<'static> {
    this.scheme.clone().into()
}

fn get_host(this: &Url) -> CelString<'static> {
    this.host.clone().into()
}

fn get_hostname(this: &Url) -> CelString<'static> {
    this.hostname().to_owned().into()
}

fn get_port(this: &Url) -> CelString<'static> {
    this.port().to_owned().into()
}

fn get_escaped_path(this: &Url) -> CelString<'static> {
    this.escaped_path().into()
}

fn get_query(this: &Url) -> CelMap<'static> {
    let map: HashMap<CelMapKey<'static>, Box<dyn Val>> = this
        .query()
        .into_iter()
        .map(|(key, values)| {
            let list: Vec<Box<dyn Val>> = values
                .into_iter()
                .map(|v| Box::new(CelString::from(v)) as Box<dyn Val>)
                .collect();
            (
                CelMapKey::from(key),
                Box::new(CelList::from(list)) as Box<dyn Val>,
            )
        })
        .collect();
    CelMap::from(map)
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(URL.to_owned())?;
    cel::add_overload!(env, fn url: (CelString) -> Result<Url>)?;
    cel::add_overload!(env, fn is_url: (CelString) -> CelBool, name = "isURL")?;
    cel::add_member_overload!(env, fn get_scheme: (Url) -> CelString)?;
    cel::add_member_overload!(env, fn get_host: (Url) -> CelString)?;
    cel::add_member_overload!(env, fn get_hostname: (Url) -> CelString)?;
    cel::add_member_overload!(env, fn get_port: (Url) -> CelString)?;
    cel::add_member_overload!(env, fn get_escaped_path: (Url) -> CelString)?;
    cel::add_member_overload!(env, fn get_query: (Url) -> CelMap)?;
    Ok(())
}
