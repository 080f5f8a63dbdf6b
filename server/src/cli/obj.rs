//! `kruise-lua obj CASE.yaml [--step N]`: the `obj` each step of a test case hands to the
//! script, as Lua source an author can paste into a REPL or a debugging script.
//!
//! Every step is a chunk `obj = { … }` under a `--` header naming the case and the step. With
//! several steps the chunks follow each other (the whole output still loads; the last step's
//! `obj` wins); `--step N` prints one chunk only.

use std::path::PathBuf;

use clap::Args;
use kruise_lua_engine::testcase::CaseKind;

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
        case,
        name,
        steps: selected,
    } = match load_case_steps(&args.case, args.step, &args.input)? {
        Ok(selected) => selected,
        Err(code) => return Ok(code),
    };
    let source = kind_label(case.kind);
    let mut out = String::new();
    for (position, index) in selected.iter().enumerate() {
        if position > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "-- {name}: step {index} of {} ({source})\n",
            case.steps.len()
        ));
        out.push_str("obj = ");
        out.push_str(&lua_source::to_lua(&case.steps[*index].obj.to_json(), 0));
        out.push('\n');
    }
    write_stdout(&out)?;
    Ok(EXIT_OK)
}

fn kind_label(kind: CaseKind) -> &'static str {
    match kind {
        CaseKind::Rollout => "rollout canary step",
        CaseKind::TrafficRouting => "trafficRouting",
    }
}
