//! `kruise-lua run SCRIPT --case CASE.yaml [--step N] [--mode …]`: runs a custom-provider
//! or ingress-class script on the steps of a test case and prints each resulting resource as a YAML document
//! shaped like `expected[i]` (rendered by the engine's YAML renderer): apiVersion, kind and metadata from `original` (with the
//! result's labels and annotations), spec from the result. Errors go to stderr as
//! `file:line: message`, and what the script printed goes to stderr too, so stdout stays YAML.
//! With `--mode production`, an ingress-class script's steps are chained as the controller
//! runs them (see `steps::controller_ingress_step`); its notes go to stderr.

use std::path::PathBuf;

use clap::Args;
use kruise_lua_engine::discovery;
use kruise_lua_engine::luadata::{Data, string_map_json};
use kruise_lua_engine::render::to_yaml;
use kruise_lua_engine::runner::{Mode, Script, run_custom, run_ingress};
use kruise_lua_engine::steps::{controller_ingress_step, ingress_obj};
use kruise_lua_engine::value::{JsonMap, JsonValue};
use kruise_lua_engine::yaml::{YamlNode, YamlValue};

use crate::chunk_positions::file_script_error;

use super::options::{
    EXIT_FINDINGS, EXIT_OK, InputArgs, LimitArgs, ModeArg, SelectedCase, load_case_steps,
    read_text, write_stderr_line, write_stdout,
};
use super::report::step_number;
use super::terminal::escape_controls;
use crate::project::UsageError;
use crate::project::paths;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The script (a trafficRouting.lua file)
    #[arg(value_name = "SCRIPT")]
    pub script: PathBuf,
    /// The test case whose steps give the script its obj
    #[arg(long, value_name = "CASE.yaml")]
    pub case: PathBuf,
    /// Run only step N (numbered from 1, as Kruise numbers a rollout's steps and every
    /// report shows them)
    #[arg(long, value_name = "N")]
    pub step: Option<usize>,
    /// Result rules: the unit-test harness's (default) or the controller's
    #[arg(long, value_enum, default_value_t = ModeArg::Harness)]
    pub mode: ModeArg,
    #[command(flatten)]
    pub limits: LimitArgs,
    #[command(flatten)]
    pub input: InputArgs,
}

pub fn execute(args: RunArgs) -> Result<u8, UsageError> {
    let script = Script::new(read_text(&args.script, &args.input)?);
    let script_name = paths::display(&args.script);
    let SelectedCase {
        mut case,
        name: case_name,
        steps: selected,
    } = match load_case_steps(&args.case, args.step, &args.input)? {
        Ok(selected) => selected,
        Err(code) => return Ok(code),
    };
    // What the printed resources take from `original`: everything but its spec (a run's
    // result brings its own; an ingress script's keeps the case's, the obj's spec).
    let original = field_ignoring_case(&case.root, "original").map(identity_json);
    case.expected = Vec::new();
    case.root = YamlNode::synthetic(YamlValue::Null);
    let options = args.limits.run_options();
    let mode = args.mode.into();
    let mut out = String::new();
    let mut code = EXIT_OK;
    let ingress = discovery::is_ingress_script(&args.script);
    for index in selected {
        let step = &case.steps[index];
        let number = step_number(index);
        let (prints, result) = if ingress && mode == Mode::Production {
            // The controller runs the script on the canary Ingress the earlier steps left.
            let chained = controller_ingress_step(&script, &case, index, &options);
            for note in chained.not_called.iter().map(|r| r.to_string()).chain(
                chained
                    .warnings
                    .iter()
                    .map(|warning| format!("warning: {warning}")),
            ) {
                write_stderr_line(&escape_controls(&format!(
                    "{script_name}: step {number}: {note}"
                )));
            }
            let result = chained.result.map(|data| Data {
                spec: step.obj.data.spec.clone(),
                labels: step.obj.data.labels.clone(),
                annotations: data.annotations,
            });
            (chained.prints, result)
        } else if ingress {
            // An ingress-class script returns the canary Ingress's annotations; the rest of the
            // resource stays as `original` has it.
            let run = run_ingress(&script, &ingress_obj(&step.obj), &options);
            let result = run.result.map(|annotations| Data {
                spec: step.obj.data.spec.clone(),
                labels: step.obj.data.labels.clone(),
                annotations,
            });
            (run.prints, result)
        } else {
            let run = run_custom(&script, &step.obj, &options);
            let result = run.result(mode).clone();
            (run.prints, result)
        };
        for print in &prints {
            write_stderr_line(&escape_controls(&format!(
                "{script_name}: step {number}: print: {print}"
            )));
        }
        match &result {
            Ok(data) => {
                if !out.is_empty() {
                    out.push_str("---\n");
                }
                out.push_str(&format!("# {case_name}: step {number}\n"));
                out.push_str(&resource(original.as_ref(), data));
            }
            Err(error) => {
                let (at, what) = file_script_error(&script_name, error);
                write_stderr_line(&escape_controls(&format!("{at}: step {number}: {what}")));
                code = EXIT_FINDINGS;
            }
        }
    }
    write_stdout(&out)?;
    Ok(code)
}

/// A resource node as JSON without its `spec`.
fn identity_json(node: &YamlNode) -> JsonValue {
    match &node.value {
        YamlValue::Map(entries) => {
            let without_spec = entries
                .iter()
                .filter(|(key, _)| key.key_string().as_deref() != Some("spec"))
                .cloned()
                .collect();
            YamlNode::synthetic(YamlValue::Map(without_spec)).to_json()
        }
        _ => node.to_json(),
    }
}

/// The value under `key` of a map node: an exact match, else the first that matches
/// ignoring ASCII case (Kruise's decoder matches field names that way).
fn field_ignoring_case<'a>(node: &'a YamlNode, key: &str) -> Option<&'a YamlNode> {
    let YamlValue::Map(entries) = &node.value else {
        return None;
    };
    let name = |k: &YamlNode| match &k.value {
        YamlValue::String(s) => Some(s.clone()),
        _ => None,
    };
    entries
        .iter()
        .find(|(k, _)| name(k).as_deref() == Some(key))
        .or_else(|| {
            entries
                .iter()
                .find(|(k, _)| name(k).is_some_and(|n| n.eq_ignore_ascii_case(key)))
        })
        .map(|(_, v)| v)
}

/// The `expected[i]`-shaped resource for a result.
pub fn resource(original: Option<&JsonValue>, data: &Data) -> String {
    let get = |key: &str| match original {
        Some(JsonValue::Object(map)) => map.get(key).cloned(),
        _ => None,
    };
    let mut metadata = match get("metadata") {
        Some(JsonValue::Object(map)) => map,
        _ => JsonMap::new(),
    };
    metadata.remove("labels");
    metadata.remove("annotations");
    if let Some(labels) = &data.labels {
        metadata.insert("labels".to_string(), string_map_json(labels));
    }
    if let Some(annotations) = &data.annotations {
        metadata.insert("annotations".to_string(), string_map_json(annotations));
    }
    // Sorted keys put apiVersion, kind, metadata and spec in the usual order.
    let mut resource = JsonMap::new();
    for key in ["apiVersion", "kind"] {
        if let Some(value) = get(key) {
            resource.insert(key.to_string(), value);
        }
    }
    resource.insert("metadata".to_string(), JsonValue::Object(metadata));
    if let Some(spec) = &data.spec {
        resource.insert("spec".to_string(), spec.clone());
    }
    to_yaml(&JsonValue::Object(resource))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_takes_identity_from_original_and_content_from_result() {
        let mut meta = JsonMap::new();
        meta.insert("name".to_string(), JsonValue::String("demo".into()));
        meta.insert("labels".to_string(), JsonValue::Object(JsonMap::new()));
        let mut original = JsonMap::new();
        original.insert(
            "apiVersion".to_string(),
            JsonValue::String("example.io/v1".into()),
        );
        original.insert("kind".to_string(), JsonValue::String("Demo".into()));
        original.insert("metadata".to_string(), JsonValue::Object(meta));
        original.insert("spec".to_string(), JsonValue::String("old".into()));
        let data = Data {
            spec: Some(JsonValue::Object(JsonMap::from([(
                "weight".to_string(),
                JsonValue::Float(20.0),
            )]))),
            labels: None,
            annotations: Some(std::collections::BTreeMap::from([(
                "a".to_string(),
                "yes".to_string(),
            )])),
        };
        assert_eq!(
            resource(Some(&JsonValue::Object(original)), &data),
            "apiVersion: example.io/v1\nkind: Demo\nmetadata:\n  annotations:\n    a: \"yes\"\n  name: demo\nspec:\n  weight: 20\n"
        );
    }
}
