//! The human plan report: per resource and stage, what the step asks, the resource's diff
//! (coloured on a terminal), the traffic table (one row per request class: stable, canary and
//! other shares, and whether that is what the step asks) and the findings; a summary last.

use kruise_lua_engine::intent::{RequestClass, ShareRole};
use kruise_lua_engine::schema::Severity;

use crate::cli::terminal::escape_controls;
use crate::project::plan::diff::LineKind;
use crate::project::plan::{Plan, ResourcePlan, Stage, Traffic};

const RED: &str = "\x1b[31m";
const GREEN: &str = "\x1b[32m";
const CYAN: &str = "\x1b[36m";
const YELLOW: &str = "\x1b[33m";
const BOLD: &str = "\x1b[1m";
const RESET: &str = "\x1b[0m";

struct Out {
    text: String,
    color: bool,
}

impl Out {
    fn line(&mut self, indent: usize, text: &str) {
        self.text.push_str(&" ".repeat(indent));
        self.text.push_str(&escape_controls(text));
        self.text.push('\n');
    }

    fn painted(&mut self, indent: usize, paint: &str, text: &str) {
        if self.color {
            self.text.push_str(&" ".repeat(indent));
            self.text.push_str(paint);
            self.text.push_str(&escape_controls(text));
            self.text.push_str(RESET);
            self.text.push('\n');
        } else {
            self.line(indent, text);
        }
    }
}

/// The report of `plan`.
pub fn render(plan: &Plan, color: bool) -> String {
    let mut out = Out {
        text: String::new(),
        color,
    };
    out.painted(
        0,
        BOLD,
        &format!("Plan of {} ({})", plan.rollout, plan.rollout_place),
    );
    for why in &plan.rejected {
        out.painted(
            0,
            RED,
            &format!("✗ the Rollout webhook would reject this Rollout: {why}"),
        );
    }
    for note in &plan.notes {
        out.painted(0, YELLOW, &format!("note: {note}"));
    }
    for resource in &plan.resources {
        out.line(0, "");
        write_resource(&mut out, resource);
    }
    out.line(0, "");
    out.line(0, &summary(plan));
    out.text
}

fn write_resource(out: &mut Out, resource: &ResourcePlan) {
    out.painted(
        0,
        BOLD,
        &format!("{} ({})", resource.resource, resource.place),
    );
    out.line(2, &format!("provider: {}", resource.provider));
    if let Some(script) = &resource.script {
        out.line(2, &format!("script: {script}"));
    }
    if let Some(error) = &resource.error {
        out.painted(2, RED, &format!("✗ error: {error}"));
        return;
    }
    match &resource.model {
        Some(model) => out.line(2, &format!("routing model: {model}")),
        None => out.line(
            2,
            "routing model: none (the diffs are shown; the traffic table is not available)",
        ),
    }
    if resource.shown != resource.resource {
        out.line(
            2,
            &format!("shown: {} (what Kruise writes)", resource.shown),
        );
    }
    for stage in &resource.stages {
        out.line(0, "");
        write_stage(out, stage);
    }
}

fn write_stage(out: &mut Out, stage: &Stage) {
    let mark = if stage.failed() { "✗" } else { "✓" };
    let head = format!("{mark} {}: {}", stage.kind.label(), stage.asks);
    out.painted(2, if stage.failed() { RED } else { BOLD }, &head);
    if let Some(error) = &stage.error {
        out.painted(4, RED, &format!("error: {error}"));
    }
    if let Some(why) = &stage.not_called {
        out.line(4, why);
    }
    for print in &stage.prints {
        out.line(4, &format!("print: {print}"));
    }
    for warning in &stage.warnings {
        out.painted(4, YELLOW, &format!("note: {warning}"));
    }
    if stage.diff.is_empty() {
        if stage.error.is_none() {
            out.line(4, "no change");
        }
    } else {
        for line in &stage.diff {
            let text = format!("{}{}", line.kind.prefix(), shortened(&line.text));
            match line.kind {
                LineKind::Hunk => out.painted(4, CYAN, &text),
                LineKind::Removed => out.painted(4, RED, &text),
                LineKind::Added => out.painted(4, GREEN, &text),
                LineKind::Context => out.line(4, &text),
            }
        }
        if stage.diff_more > 0 {
            out.line(4, &format!("… {} more diff lines", stage.diff_more));
        }
    }
    write_traffic(out, &stage.traffic);
    for violation in &stage.violations {
        out.painted(4, RED, &format!("✗ routing: {violation}"));
    }
    if stage.more_violations > 0 {
        out.painted(4, RED, &format!("✗ and {} more", stage.more_violations));
    }
    for finding in &stage.schema {
        let paint = match finding.severity {
            Severity::Error => RED,
            Severity::Warning => YELLOW,
        };
        out.painted(
            4,
            paint,
            &format!(
                "schema {}: {}: {} ({})",
                finding.severity.as_str(),
                finding.path_text(),
                finding.message,
                finding.rule
            ),
        );
    }
    if let Some(why) = &stage.schema_unchecked {
        out.line(4, &format!("schema not checked: {why}"));
    }
}

fn write_traffic(out: &mut Out, traffic: &Traffic) {
    let table = match traffic {
        Traffic::Original => return,
        Traffic::NothingAsked => {
            out.line(
                4,
                "traffic: unchanged (the step asks nothing of the routing)",
            );
            return;
        }
        Traffic::Unavailable(why) => {
            out.line(4, &format!("traffic: not available: {why}"));
            return;
        }
        Traffic::Table(table) => table,
    };
    let rows: Vec<[String; 5]> = table.classes.iter().map(row).collect();
    let headers = [
        "requests".to_owned(),
        "stable".to_owned(),
        "canary".to_owned(),
        "other".to_owned(),
        "as asked".to_owned(),
    ];
    let width = rows
        .iter()
        .chain(std::iter::once(&headers))
        .map(|r| r[0].chars().count())
        .max()
        .unwrap_or(0);
    out.line(4, &format!("traffic ({} probe requests):", table.probes));
    let format_row = |r: &[String; 5]| {
        format!(
            "{:<width$}  {:>6}  {:>6}  {:>6}  {}",
            r[0], r[1], r[2], r[3], r[4]
        )
    };
    out.line(6, &format_row(&headers));
    for (class, r) in table.classes.iter().zip(&rows) {
        if class.misrouted.is_some() {
            out.painted(6, RED, &format_row(r));
        } else {
            out.line(6, &format_row(r));
        }
    }
    if table.more_classes > 0 {
        out.line(6, &format!("… {} more request classes", table.more_classes));
    }
}

/// Diff lines longer than this many characters are cut in the terminal (the original-spec
/// annotation holds the whole spec on one line); the JSON and HTML formats keep them whole.
const MAX_LINE_CHARS: usize = 160;

/// `text` cut at [`MAX_LINE_CHARS`], saying how much was left out.
fn shortened(text: &str) -> std::borrow::Cow<'_, str> {
    let total = text.chars().count();
    if total <= MAX_LINE_CHARS {
        return std::borrow::Cow::Borrowed(text);
    }
    let kept: String = text.chars().take(MAX_LINE_CHARS).collect();
    std::borrow::Cow::Owned(format!(
        "{kept}… ({} more characters)",
        total - MAX_LINE_CHARS
    ))
}

/// One row of the traffic table: the class, stable, canary and other shares after the step,
/// and the verdict.
fn row(class: &RequestClass) -> [String; 5] {
    let name = if class.requests > 1 {
        format!("{} (+{} alike)", class.example, class.requests - 1)
    } else {
        class.example.clone()
    };
    let percent = |role| match class.after {
        None => "-".to_owned(),
        Some(_) => percent_text(class.after_percent(role)),
    };
    let verdict = match (&class.misrouted, &class.after) {
        (Some(expected), _) => format!("✗ asked: {expected}"),
        (None, None) => "✓ (no route)".to_owned(),
        (None, Some(_)) => "✓".to_owned(),
    };
    [
        name,
        percent(ShareRole::Stable),
        percent(ShareRole::Canary),
        percent(ShareRole::Other),
        verdict,
    ]
}

/// `20 %`, `33.33 %`; empty for 0.
pub fn percent_text(percent: f64) -> String {
    if percent.abs() < 1e-9 {
        String::new()
    } else if (percent - percent.round()).abs() < 1e-6 {
        format!("{} %", percent.round() as i64)
    } else {
        format!("{percent:.2} %")
    }
}

/// `2 resources, 9 stages: 1 failed`.
pub fn summary(plan: &Plan) -> String {
    let stages: usize = plan.resources.iter().map(|r| r.stages.len()).sum();
    let failed: usize = plan
        .resources
        .iter()
        .map(|r| r.stages.iter().filter(|s| s.failed()).count())
        .sum();
    let unplanned = plan.resources.iter().filter(|r| r.error.is_some()).count();
    let mut text = format!(
        "{} resource(s), {stages} stage(s): {failed} failed",
        plan.resources.len()
    );
    if unplanned > 0 {
        text.push_str(&format!(", {unplanned} resource(s) not planned"));
    }
    if !plan.rejected.is_empty() {
        text.push_str("; the Rollout webhook would reject the Rollout");
    }
    text
}
