//! `kruise-lua obj CASE.yaml [--step N]`: the `obj` each step of a test case hands to the
//! script, as Lua source an author can paste into a REPL or a debugging script.
//!
//! Every step is a chunk `obj = { … }` under a `--` header naming the case and the step. With
//! several steps the chunks follow each other (the whole output still loads; the last step's
//! `obj` wins); `--step N` prints one chunk only.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;
use kruise_lua_engine::luadata::LuaData;
use kruise_lua_engine::testcase::CaseKind;
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::{YamlNode, YamlValue};

use super::{EXIT_OK, InputArgs, SelectedCase, UsageError, load_case_steps, write_stdout};
use crate::lua_source;

#[derive(Debug, Args)]
pub struct ObjArgs {
    /// The test case (a testdata/*.yaml file)
    #[arg(value_name = "CASE.yaml")]
    pub case: PathBuf,
    /// Print only step N (0-based)
    #[arg(long, value_name = "N")]
    pub step: Option<usize>,
    #[command(flatten)]
    pub input: InputArgs,
}

pub fn execute(args: ObjArgs) -> Result<u8, UsageError> {
    let SelectedCase {
        mut case,
        name,
        steps: selected,
    } = match load_case_steps(&args.case, args.step, &args.input)? {
        Ok(selected) => selected,
        Err(code) => return Ok(code),
    };
    // Only the steps' objs are printed: the YAML tree and the expected entries can go.
    case.root = YamlNode::synthetic(YamlValue::Null);
    case.expected = Vec::new();
    let source = kind_label(case.kind);
    let total = case.steps.len();
    for (position, index) in selected.iter().enumerate() {
        let mut out = String::new();
        if position > 0 {
            out.push('\n');
        }
        out.push_str(&format!("-- {name}: step {index} of {total} ({source})\n"));
        out.push_str("obj = ");
        out.push_str(&lua_source::to_lua(
            &obj_json(&mut case.steps[*index].obj),
            0,
        ));
        out.push('\n');
        // Step by step: a big case's output is never held whole.
        write_stdout(&out)?;
    }
    Ok(EXIT_OK)
}

/// The obj as JSON. When this step alone holds the data (a one-step case), its spec is moved
/// into the JSON rather than copied, which matters for a big `original`.
fn obj_json(obj: &mut Arc<LuaData>) -> JsonValue {
    let spec = Arc::get_mut(obj)
        .and_then(|lua| Arc::get_mut(&mut lua.data))
        .and_then(|data| data.spec.take());
    let mut json = obj.to_json();
    if let (Some(spec), JsonValue::Object(members)) = (spec, &mut json)
        && let Some(JsonValue::Object(data)) = members.get_mut("data")
    {
        data.insert("spec".to_string(), spec);
    }
    json
}

fn kind_label(kind: CaseKind) -> &'static str {
    match kind {
        CaseKind::Rollout => "rollout canary step",
        CaseKind::TrafficRouting => "trafficRouting",
    }
}
