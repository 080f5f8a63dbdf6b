//! Kubernetes' CEL regex library (`find`, `findAll`), as k8s.io/apiserver
//! `pkg/cel/library/regex.go` declares it: Go's `FindString` and `FindAllString`, which the
//! `regex` crate's leftmost-first matching follows (an empty match right after a match is
//! skipped in both).

use cel::common::types::{CelInt, CelList, CelString};
use cel::common::value::Val;
use cel::{DeclarationError, Env, ExecutionError};

fn compile(pattern: &str, function: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|error| {
        ExecutionError::function_error(function, format!("Illegal regex: {error}"))
    })
}

fn find(
    this: &CelString<'_>,
    pattern: &CelString<'_>,
) -> Result<CelString<'static>, ExecutionError> {
    let re = compile(pattern.inner(), "find")?;
    Ok(re
        .find(this.inner())
        .map_or(String::new(), |m| m.as_str().to_owned())
        .into())
}

fn matches_up_to(
    text: &str,
    pattern: &str,
    limit: i64,
) -> Result<CelList<'static>, ExecutionError> {
    let re = compile(pattern, "findAll")?;
    // Go: a negative limit means all matches.
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let found: Vec<Box<dyn Val>> = re
        .find_iter(text)
        .take(limit)
        .map(|m| Box::new(CelString::from(m.as_str().to_owned())) as Box<dyn Val>)
        .collect();
    Ok(CelList::from(found))
}

fn find_all(
    this: &CelString<'_>,
    pattern: &CelString<'_>,
) -> Result<CelList<'static>, ExecutionError> {
    matches_up_to(this.inner(), pattern.inner(), -1)
}

fn find_all_limit(
    this: &CelString<'_>,
    pattern: &CelString<'_>,
    limit: &CelInt,
) -> Result<CelList<'static>, ExecutionError> {
    matches_up_to(this.inner(), pattern.inner(), *limit.inner())
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    cel::add_member_overload!(env, fn find: (CelString, CelString) -> Result<CelString>)?;
    cel::add_member_overload!(env, fn find_all: (CelString, CelString) -> Result<CelList>)?;
    cel::add_member_overload!(env, fn find_all_limit: (CelString, CelString, CelInt) -> Result<CelList>, name = "findAll")?;
    Ok(())
}
