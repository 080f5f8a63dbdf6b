//! Kubernetes' CEL semver library (`semver`, `isSemver`, `major`/`minor`/`patch`,
//! `isGreaterThan`, `isLessThan`, `compareTo`; Kubernetes 1.33), as k8s.io/apiserver
//! `pkg/cel/library/semverlib.go` declares it, over versions parsed as blang/semver v4's
//! `Parse` (strict `MAJOR.MINOR.PATCH[-pre][+build]`, no leading zeros) and with the library's
//! own `normalizeAndParse` when asked (`v` prefix, missing parts, leading zeros).

use std::cmp::Ordering;

use cel::common::types::{CelBool, CelInt, CelString, Type};
use cel::{DeclarationError, Env, ExecutionError};

static SEMVER: Type = Type::new_unspecified_type("kubernetes.Semver");

#[derive(Debug, Clone, PartialEq, Eq)]
enum Identifier {
    Numeric(u64),
    Text(String),
}

#[derive(Debug, Clone)]
pub(crate) struct Semver {
    major: u64,
    minor: u64,
    patch: u64,
    pre: Vec<Identifier>,
}

impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.compare(other) == Ordering::Equal
    }
}

library_value!(Semver, SEMVER);

fn number(text: &str, what: &str) -> Result<u64, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "Invalid character(s) found in {what} number {text:?}"
        ));
    }
    if text.len() > 1 && text.starts_with('0') {
        return Err(format!(
            "{what} number must not contain leading zeroes {text:?}"
        ));
    }
    text.parse().map_err(|e| format!("{e}"))
}

fn identifier_chars(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

impl Semver {
    /// blang/semver v4 `Parse`.
    fn parse(text: &str) -> Result<Semver, String> {
        let parts: Vec<&str> = text.splitn(3, '.').collect();
        if parts.len() != 3 {
            return Err("No Major.Minor.Patch elements found".into());
        }
        let major = number(parts[0], "Major")?;
        let minor = number(parts[1], "Minor")?;
        let rest = parts[2];
        let (before_build, build) = match rest.find('+') {
            Some(plus) => (&rest[..plus], Some(&rest[plus + 1..])),
            None => (rest, None),
        };
        let (patch, pre) = match before_build.find('-') {
            Some(dash) => (&before_build[..dash], Some(&before_build[dash + 1..])),
            None => (before_build, None),
        };
        let patch = number(patch, "Patch")?;
        let mut identifiers = Vec::new();
        if let Some(pre) = pre {
            for part in pre.split('.') {
                if !identifier_chars(part) {
                    return Err(format!("Invalid character(s) found in prerelease {part:?}"));
                }
                if part.bytes().all(|b| b.is_ascii_digit()) {
                    identifiers.push(Identifier::Numeric(number(part, "PreRelease")?));
                } else {
                    identifiers.push(Identifier::Text(part.to_owned()));
                }
            }
        }
        if let Some(build) = build
            && !build.split('.').all(identifier_chars)
        {
            return Err(format!(
                "Invalid character(s) found in build meta data {build:?}"
            ));
        }
        Ok(Semver {
            major,
            minor,
            patch,
            pre: identifiers,
        })
    }

    /// semverlib.go `normalizeAndParse`.
    fn normalize_and_parse(text: &str) -> Result<Semver, String> {
        let text = text.strip_prefix('v').unwrap_or(text);
        let mut parts: Vec<String> = text
            .splitn(3, '.')
            .map(|part| {
                if part.len() > 1 {
                    let trimmed = part.trim_start_matches('0');
                    if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                        return format!("0{trimmed}");
                    }
                    return trimmed.to_owned();
                }
                part.to_owned()
            })
            .collect();
        if parts.len() < 3 {
            if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
                return Err("short version cannot contain PreRelease/Build meta data".into());
            }
            parts.resize(3, "0".into());
        }
        Semver::parse(&parts.join("."))
    }

    fn compare(&self, other: &Semver) -> Ordering {
        let numbers =
            (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch));
        if numbers != Ordering::Equal {
            return numbers;
        }
        match (self.pre.is_empty(), other.pre.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Greater,
            (false, true) => return Ordering::Less,
            (false, false) => {}
        }
        for (a, b) in self.pre.iter().zip(&other.pre) {
            let order = match (a, b) {
                (Identifier::Numeric(a), Identifier::Numeric(b)) => a.cmp(b),
                (Identifier::Numeric(_), Identifier::Text(_)) => Ordering::Less,
                (Identifier::Text(_), Identifier::Numeric(_)) => Ordering::Greater,
                (Identifier::Text(a), Identifier::Text(b)) => a.cmp(b),
            };
            if order != Ordering::Equal {
                return order;
            }
        }
        self.pre.len().cmp(&other.pre.len())
    }
}

fn parse(text: &str, normalize: bool) -> Result<Semver, String> {
    if normalize {
        Semver::normalize_and_parse(text)
    } else {
        Semver::parse(text)
    }
}

fn semver(text: &CelString<'_>) -> Result<Semver, ExecutionError> {
    parse(text.inner(), false).map_err(|e| ExecutionError::function_error("semver", e))
}

fn semver_normalized(text: &CelString<'_>, normalize: &CelBool) -> Result<Semver, ExecutionError> {
    parse(text.inner(), *normalize.inner()).map_err(|e| ExecutionError::function_error("semver", e))
}

fn is_semver(text: &CelString<'_>) -> CelBool {
    parse(text.inner(), false).is_ok().into()
}

fn is_semver_normalized(text: &CelString<'_>, normalize: &CelBool) -> CelBool {
    parse(text.inner(), *normalize.inner()).is_ok().into()
}

fn major(this: &Semver) -> CelInt {
    CelInt::from(this.major as i64)
}

fn minor(this: &Semver) -> CelInt {
    CelInt::from(this.minor as i64)
}

fn patch(this: &Semver) -> CelInt {
    CelInt::from(this.patch as i64)
}

fn is_greater_than(this: &Semver, other: &Semver) -> CelBool {
    (this.compare(other) == Ordering::Greater).into()
}

fn is_less_than(this: &Semver, other: &Semver) -> CelBool {
    (this.compare(other) == Ordering::Less).into()
}

fn compare_to(this: &Semver, other: &Semver) -> CelInt {
    CelInt::from(this.compare(other) as i64)
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(SEMVER.to_owned())?;
    cel::add_overload!(env, fn semver: (CelString) -> Result<Semver>)?;
    cel::add_overload!(env, fn semver_normalized: (CelString, CelBool) -> Result<Semver>, name = "semver")?;
    cel::add_overload!(env, fn is_semver: (CelString) -> CelBool)?;
    cel::add_overload!(env, fn is_semver_normalized: (CelString, CelBool) -> CelBool, name = "isSemver")?;
    cel::add_member_overload!(env, fn major: (Semver) -> CelInt)?;
    cel::add_member_overload!(env, fn minor: (Semver) -> CelInt)?;
    cel::add_member_overload!(env, fn patch: (Semver) -> CelInt)?;
    cel::add_member_overload!(env, fn is_greater_than: (Semver, Semver) -> CelBool)?;
    cel::add_member_overload!(env, fn is_less_than: (Semver, Semver) -> CelBool)?;
    cel::add_member_overload!(env, fn compare_to: (Semver, Semver) -> CelInt)?;
    Ok(())
}
