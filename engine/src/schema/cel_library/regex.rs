//! CEL's regular-expression functions as the API server runs them: the standard `matches`
//! (cel-go `regexp.MatchString`) and Kubernetes' `find`, `findAll` (k8s.io/apiserver
//! `pkg/cel/library/regex.go`: Go's `FindString`, `FindAllString`). All read Go's regexp
//! syntax, translated in `schema/re2.rs` (the `cel` crate's own `matches`, with the regex
//! crate's syntax, is left out: its `regex` feature is off). The regex crate's leftmost-first
//! matching follows Go's (an empty match right after a match is skipped in both).

use std::rc::Rc;

use cel::common::types::{CelBool, CelInt, CelList, CelString};
use cel::common::value::Val;
use cel::{DeclarationError, Env, ExecutionError};

use crate::schema::re2::{self, PatternError};

/// A pattern Go refuses fails the call, as in cel-go; one Go accepts but the regex crate
/// cannot compile leaves the rule not checked.
fn compile(pattern: &str, function: &str) -> Result<Rc<regex::Regex>, ExecutionError> {
    re2::compile_shared(pattern).map_err(|error| match error {
        PatternError::Invalid(reason) => ExecutionError::function_error(function, reason),
        PatternError::Unsupported(_) => super::not_modelled(function, error),
    })
}

fn matches(this: &CelString<'_>, pattern: &CelString<'_>) -> Result<CelBool, ExecutionError> {
    let re = compile(pattern.inner(), "matches")?;
    Ok(CelBool::from(re.is_match(this.inner())))
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
    // `matches(s, re)` and `s.matches(re)`, with the overload ids cel-go gives them.
    cel::add_overload!(env, fn matches: (CelString, CelString) -> Result<CelBool>, id = "matches")?;
    cel::add_member_overload!(env, fn matches: (CelString, CelString) -> Result<CelBool>)?;
    cel::add_member_overload!(env, fn find: (CelString, CelString) -> Result<CelString>)?;
    cel::add_member_overload!(env, fn find_all: (CelString, CelString) -> Result<CelList>)?;
    cel::add_member_overload!(env, fn find_all_limit: (CelString, CelString, CelInt) -> Result<CelList>, name = "findAll")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use cel::{Context, ExecutionError, Value};

    use super::super::environment;

    fn evaluate(source: &str) -> Result<Value, ExecutionError> {
        let env = environment();
        let program = env.compile(source).expect("parses");
        program.execute(&Context::with_env(Arc::clone(&env)))
    }

    #[test]
    fn matches_find_and_find_all_read_gos_syntax() {
        let cases = [
            // `\d` is ASCII in Go: Arabic-Indic digits are no match.
            (r"'١٢٣'.matches('^\\d+$')", Value::Bool(false)),
            (r"matches('123', '^\\d+$')", Value::Bool(true)),
            (r"'a\u00a0b'.matches('^\\S+$')", Value::Bool(true)),
            ("'a-'.matches('^[a-z0-9--]+$')", Value::Bool(true)),
            (r"'x.*y'.matches('\\Q.*\\E')", Value::Bool(true)),
            (
                r"'a١2'.find('\\d')",
                Value::String(Arc::new("2".to_owned())),
            ),
            (r"'١2٣4'.findAll('\\d').size()", Value::Int(2)),
        ];
        for (source, want) in cases {
            assert_eq!(evaluate(source), Ok(want), "{source}");
        }
    }

    #[test]
    fn a_pattern_go_refuses_fails_the_call() {
        let Err(ExecutionError::FunctionError { function, message }) =
            evaluate("'a'.matches('(?x)a')")
        else {
            panic!("an error");
        };
        assert_eq!(function, "matches");
        assert!(
            message.contains("invalid or unsupported Perl syntax"),
            "{message}"
        );
    }
}
