//! `kruise-lua obj CASE.yaml [--step N] [--mode …] [--script SCRIPT]`: the `obj` each step of
//! a test case hands to the script, as Lua source an author can paste into a REPL or a
//! debugging script.
//!
//! Every step is a chunk `obj = { … }` under a `--` header naming the case and the step. With
//! several steps the chunks follow each other (the whole output still loads; the last step's
//! `obj` wins); `--step N` prints one chunk only.
//!
//! A case of an ingress class (under `trafficrouting_ingress/testdata/<class>/`, or with an
//! ingress-class `--script`) gets the ingress provider's obj: `annotations`, `weight` as a
//! string, `matches`, `canaryService`, `requestHeaderModifier`. In production mode the obj is
//! the controller's: a step it does not run the script for gets a comment instead of a chunk,
//! and an ingress step's `annotations` are the canary Ingress's as the earlier steps left
//! them, which takes running the script (found beside the testdata folder, or `--script`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use kruise_lua_engine::discovery::{INGRESS_FOLDER, is_ingress_script};
use kruise_lua_engine::luadata::LuaData;
use kruise_lua_engine::runner::{Mode, Script};
use kruise_lua_engine::steps::{NOT_CALLED_NO_TRAFFIC, ingress_obj, ingress_step_obj};
use kruise_lua_engine::testcase::CaseKind;
use kruise_lua_engine::value::JsonValue;
use kruise_lua_engine::yaml::{YamlNode, YamlValue};

use super::options::{
    EXIT_OK, InputArgs, LimitArgs, ModeArg, SelectedCase, load_case_steps, read_text, write_stdout,
};
use super::report::step_number;
use crate::lua_source;
use crate::project::UsageError;

#[derive(Debug, Args)]
pub struct ObjArgs {
    /// The test case (a testdata/*.yaml file)
    #[arg(value_name = "CASE.yaml")]
    pub case: PathBuf,
    /// Print only step N (numbered from 1, as Kruise numbers a rollout's steps and every
    /// report shows them)
    #[arg(long, value_name = "N")]
    pub step: Option<usize>,
    /// Whose obj: the unit-test harness's (default) or the controller's (steps it skips,
    /// ingress steps on the canary Ingress the earlier steps left)
    #[arg(long, value_enum, default_value_t = ModeArg::Harness)]
    pub mode: ModeArg,
    /// The script the case is for (needed in production mode for an ingress case whose
    /// script is not at trafficrouting_ingress/<class>.lua beside its testdata folder)
    #[arg(long, value_name = "SCRIPT")]
    pub script: Option<PathBuf>,
    #[command(flatten)]
    pub limits: LimitArgs,
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
    let ingress = match &args.script {
        Some(script) => is_ingress_script(script),
        None => ingress_class_of_case(&args.case).is_some(),
    };
    let mode: Mode = args.mode.into();
    // Production mode chains an ingress case's steps through the script.
    let chain = if ingress && mode == Mode::Production {
        let path = match (&args.script, ingress_script_of_case(&args.case)) {
            (Some(script), _) => script.clone(),
            (None, Some(script)) => script,
            (None, None) => {
                return Err(UsageError(format!(
                    "{name}: production mode runs the ingress script to know each step's annotations: pass --script"
                )));
            }
        };
        Some(Script::new(read_text(&path, &args.input)?))
    } else {
        None
    };
    let options = args.limits.run_options();
    // Only the steps' objs are printed: the YAML tree and the expected entries can go.
    case.root = YamlNode::synthetic(YamlValue::Null);
    case.expected = Vec::new();
    let source = kind_label(case.kind, ingress);
    let total = case.steps.len();
    for (position, index) in selected.iter().enumerate() {
        let mut out = String::new();
        if position > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "-- {name}: step {} of {total} ({source})\n",
            step_number(*index)
        ));
        let step = &case.steps[*index];
        let obj: Result<JsonValue, String> = match &chain {
            Some(script) => match ingress_step_obj(script, &case, *index, &options) {
                Ok(Some(obj)) => Ok(obj.to_json()),
                Ok(None) => Err(
                    "no obj: the script fails before this step's run (see `kruise-lua check --mode production`)"
                        .to_string(),
                ),
                Err(reason) => Err(reason.to_string()),
            },
            None if mode == Mode::Production && !step.reaches_provider() => {
                Err(NOT_CALLED_NO_TRAFFIC.to_string())
            }
            None if ingress => Ok(ingress_obj(&step.obj).to_json()),
            None => Ok(obj_json(&mut case.steps[*index].obj)),
        };
        match obj {
            Ok(obj) => {
                out.push_str("obj = ");
                out.push_str(&lua_source::to_lua(&obj, 0));
                out.push('\n');
            }
            Err(reason) => {
                out.push_str(&format!("-- {reason}\n"));
            }
        }
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

/// The ingress class whose case `path` is: `…/trafficrouting_ingress/testdata/<class>/…`.
fn ingress_class_of_case(path: &Path) -> Option<(PathBuf, String)> {
    let absolute = std::path::absolute(path).ok()?;
    for testdata in absolute.ancestors().skip(1) {
        let is_testdata = testdata.file_name().is_some_and(|name| name == "testdata");
        let folder = testdata.parent()?;
        if is_testdata
            && folder
                .file_name()
                .is_some_and(|name| name == INGRESS_FOLDER)
        {
            let class = absolute.strip_prefix(testdata).ok()?.components().next()?;
            return Some((
                folder.to_path_buf(),
                class.as_os_str().to_string_lossy().into_owned(),
            ));
        }
    }
    None
}

/// `trafficrouting_ingress/<class>.lua` beside the testdata folder of an ingress case, when
/// it exists.
fn ingress_script_of_case(path: &Path) -> Option<PathBuf> {
    let (folder, class) = ingress_class_of_case(path)?;
    let script = folder.join(format!("{class}.lua"));
    script.is_file().then_some(script)
}

fn kind_label(kind: CaseKind, ingress: bool) -> &'static str {
    match (kind, ingress) {
        (CaseKind::Rollout, false) => "rollout canary step",
        (CaseKind::TrafficRouting, false) => "trafficRouting",
        (CaseKind::Rollout, true) => "rollout canary step, ingress class",
        (CaseKind::TrafficRouting, true) => "trafficRouting, ingress class",
    }
}
