//! The JSON plan: one document, its fields documented in docs/CLI.md ("plan --format json").
//! Fields are only ever added (`version` counts breaking changes).

use kruise_lua_engine::intent::{RequestClass, Share, ShareRole};
use serde_json::{Value, json};

use crate::project::plan::{Plan, ResourcePlan, Stage, StageKind, Traffic};

/// The format's version.
pub const VERSION: u64 = 1;

/// `plan` as pretty-printed JSON.
pub fn render(plan: &Plan) -> String {
    let document = json!({
        "version": VERSION,
        "rollout": plan.rollout,
        "rollout_place": plan.rollout_place,
        "failed": plan.has_failures(),
        "notes": plan.notes,
        "rejected": plan.rejected,
        "resources": plan.resources.iter().map(resource).collect::<Vec<_>>(),
    });
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}

fn resource(resource: &ResourcePlan) -> Value {
    json!({
        "resource": resource.resource,
        "place": resource.place,
        "provider": resource.provider,
        "script": resource.script,
        "shown": resource.shown,
        "model": resource.model,
        "error": resource.error,
        "stages": resource.stages.iter().map(stage).collect::<Vec<_>>(),
    })
}

fn stage(stage: &Stage) -> Value {
    let (name, step) = match stage.kind {
        StageKind::Start => ("start", None),
        StageKind::Step(number) => ("step", Some(number)),
        StageKind::Restore => ("restore", None),
    };
    json!({
        "stage": name,
        "step": step,
        "asks": stage.asks,
        "failed": stage.failed(),
        "exists": stage.exists,
        "diff": stage.diff.iter().map(|l| format!("{}{}", l.kind.prefix(), l.text)).collect::<Vec<_>>(),
        "diff_more": stage.diff_more,
        "error": stage.error,
        "not_called": stage.not_called,
        "warnings": stage.warnings,
        "prints": stage.prints,
        "traffic": traffic(&stage.traffic),
        "violations": stage.violations,
        "more_violations": stage.more_violations,
        "schema": stage.schema.iter().map(|f| json!({
            "severity": f.severity.as_str(),
            "path": f.path_text(),
            "rule": f.rule,
            "message": f.message,
            "crd": f.crd,
        })).collect::<Vec<_>>(),
        "schema_unchecked": stage.schema_unchecked,
    })
}

fn traffic(traffic: &Traffic) -> Value {
    match traffic {
        Traffic::Original => json!({"status": "original"}),
        Traffic::NothingAsked => json!({"status": "nothing_asked"}),
        Traffic::Unavailable(why) => json!({"status": "unavailable", "reason": why}),
        Traffic::Table(table) => json!({
            "status": "table",
            "probes": table.probes,
            "truncated": table.truncated,
            "more_classes": table.more_classes,
            "classes": table.classes.iter().map(class).collect::<Vec<_>>(),
        }),
    }
}

fn class(class: &RequestClass) -> Value {
    let shares = |shares: &Option<Vec<Share>>| -> Value {
        match shares {
            None => Value::Null,
            Some(shares) => shares
                .iter()
                .map(|s| json!({"backend": s.backend, "role": s.role.as_str(), "percent": round(s.percent)}))
                .collect(),
        }
    };
    json!({
        "example": class.example,
        "requests": class.requests,
        "before": shares(&class.before),
        "after": shares(&class.after),
        "stable_percent": round(class.after_percent(ShareRole::Stable)),
        "canary_percent": round(class.after_percent(ShareRole::Canary)),
        "other_percent": round(class.after_percent(ShareRole::Other)),
        "as_asked": class.misrouted.is_none(),
        "asked": class.misrouted,
    })
}

/// Percentages to two decimals (float sums would otherwise print as 19.999999999999996).
fn round(percent: f64) -> f64 {
    (percent * 100.0).round() / 100.0
}
