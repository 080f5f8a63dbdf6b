//! The HTML plan: one self-contained page (inline CSS and SVG, no script, nothing fetched
//! from the network) with, per resource and stage, the diff and a chart of the traffic split:
//! one stacked bar per request class (stable, canary, other), marked when it is not what the
//! step asks.

use std::fmt::Write;

use kruise_lua_engine::intent::{ShareRole, TrafficTable};

use super::human::{percent_text, summary};
use crate::project::plan::diff::LineKind;
use crate::project::plan::{Plan, ResourcePlan, Stage, Traffic};

const STYLE: &str = "
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem;color:#1f2328;background:#fff;max-width:72rem}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2.5rem;border-bottom:1px solid #d0d7de}
section.stage{border:1px solid #d0d7de;border-radius:6px;padding:.5rem 1rem;margin:1rem 0}
section.failed{border-color:#cf222e;background:#fff8f8}
h3{font-size:1rem;margin:.4rem 0}
.meta{color:#57606a;font-size:.9rem}
.note{color:#9a6700}.bad{color:#cf222e}
pre.diff{background:#f6f8fa;padding:.5rem;overflow-x:auto;font-size:.85rem;line-height:1.35}
.add{color:#116329;background:#dafbe1;display:block}.del{color:#82071e;background:#ffebe9;display:block}.hunk{color:#0550ae;display:block}
.legend span{display:inline-block;margin-right:1rem}.sw{display:inline-block;width:.8rem;height:.8rem;vertical-align:middle;margin-right:.3rem}
svg.chart text{font-size:12px;font-family:system-ui,sans-serif}
";

const STABLE_COLOR: &str = "#0969da";
const CANARY_COLOR: &str = "#fb8500";
const OTHER_COLOR: &str = "#8c959f";

/// Escapes text for HTML element content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// The page of `plan`.
pub fn render(plan: &Plan) -> String {
    let mut out = String::new();
    let title = escape(&format!("Plan of {}", plan.rollout));
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n<p class=\"meta\">{} · {}</p>\n",
        escape(&plan.rollout_place),
        escape(&summary(plan))
    );
    let _ = writeln!(
        out,
        "<p class=\"legend\"><span><i class=\"sw\" style=\"background:{STABLE_COLOR}\"></i>stable</span><span><i class=\"sw\" style=\"background:{CANARY_COLOR}\"></i>canary</span><span><i class=\"sw\" style=\"background:{OTHER_COLOR}\"></i>other backends</span></p>"
    );
    for why in &plan.rejected {
        let _ = writeln!(
            out,
            "<p class=\"bad\">✗ the Rollout webhook would reject this Rollout: {}</p>",
            escape(why)
        );
    }
    for note in &plan.notes {
        let _ = writeln!(out, "<p class=\"note\">note: {}</p>", escape(note));
    }
    for resource in &plan.resources {
        write_resource(&mut out, resource);
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn write_resource(out: &mut String, resource: &ResourcePlan) {
    let _ = writeln!(
        out,
        "<h2>{}</h2>\n<p class=\"meta\">{} · provider: {} · script: {} · routing model: {}</p>",
        escape(&resource.resource),
        escape(&resource.place),
        escape(&resource.provider),
        escape(resource.script.as_deref().unwrap_or("none")),
        escape(
            resource
                .model
                .as_deref()
                .unwrap_or("none (the traffic table is not available)")
        )
    );
    if let Some(error) = &resource.error {
        let _ = writeln!(out, "<p class=\"bad\">error: {}</p>", escape(error));
        return;
    }
    if resource.shown != resource.resource {
        let _ = writeln!(
            out,
            "<p class=\"meta\">shown: {} (what Kruise writes)</p>",
            escape(&resource.shown)
        );
    }
    for stage in &resource.stages {
        write_stage(out, stage);
    }
}

fn write_stage(out: &mut String, stage: &Stage) {
    let class = if stage.failed() {
        "stage failed"
    } else {
        "stage"
    };
    let mark = if stage.failed() { "✗" } else { "✓" };
    let traffic = match &stage.traffic {
        Traffic::Original => "original",
        Traffic::NothingAsked => "nothing_asked",
        Traffic::Unavailable(_) => "unavailable",
        Traffic::Table(_) => "table",
    };
    let _ = writeln!(
        out,
        "<section class=\"{class}\" data-stage=\"{}\" data-traffic=\"{traffic}\">\n<h3>{mark} {}: {}</h3>",
        escape(&stage.kind.label()),
        escape(&stage.kind.label()),
        escape(&stage.asks)
    );
    if let Some(error) = &stage.error {
        let _ = writeln!(out, "<p class=\"bad\">error: {}</p>", escape(error));
    }
    for text in stage.not_called.iter().chain(&stage.warnings) {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(text));
    }
    for print in &stage.prints {
        let _ = writeln!(out, "<p class=\"meta\">print: {}</p>", escape(print));
    }
    if stage.diff.is_empty() {
        out.push_str("<p class=\"meta\">no change</p>\n");
    } else {
        out.push_str("<pre class=\"diff\">");
        for line in &stage.diff {
            let class = match line.kind {
                LineKind::Hunk => "hunk",
                LineKind::Added => "add",
                LineKind::Removed => "del",
                LineKind::Context => "",
            };
            let text = escape(&format!("{}{}", line.kind.prefix(), line.text));
            if class.is_empty() {
                let _ = writeln!(out, "{text}");
            } else {
                let _ = write!(out, "<span class=\"{class}\">{text}</span>");
            }
        }
        if stage.diff_more > 0 {
            let _ = writeln!(out, "… {} more diff lines", stage.diff_more);
        }
        out.push_str("</pre>\n");
    }
    match &stage.traffic {
        Traffic::Original => {}
        Traffic::NothingAsked => out.push_str(
            "<p class=\"meta\">traffic: unchanged (the step asks nothing of the routing)</p>\n",
        ),
        Traffic::Unavailable(why) => {
            let _ = writeln!(
                out,
                "<p class=\"meta\">traffic: not available: {}</p>",
                escape(why)
            );
        }
        Traffic::Table(table) => chart(out, table),
    }
    for violation in &stage.violations {
        let _ = writeln!(out, "<p class=\"bad\">✗ routing: {}</p>", escape(violation));
    }
    if stage.more_violations > 0 {
        let _ = writeln!(
            out,
            "<p class=\"bad\">✗ and {} more</p>",
            stage.more_violations
        );
    }
    for finding in &stage.schema {
        let _ = writeln!(
            out,
            "<p class=\"{}\">schema {}: {}: {} ({})</p>",
            if finding.severity == kruise_lua_engine::schema::Severity::Error {
                "bad"
            } else {
                "note"
            },
            finding.severity.as_str(),
            escape(&finding.path_text()),
            escape(&finding.message),
            finding.rule
        );
    }
    if let Some(why) = &stage.schema_unchecked {
        let _ = writeln!(
            out,
            "<p class=\"meta\">schema not checked: {}</p>",
            escape(why)
        );
    }
    out.push_str("</section>\n");
}

/// The traffic chart: one stacked bar per request class.
fn chart(out: &mut String, table: &TrafficTable) {
    const LABEL: f64 = 380.0;
    const BAR: f64 = 300.0;
    const ROW: f64 = 24.0;
    let width = LABEL + BAR + 260.0;
    let height = ROW * table.classes.len() as f64 + 8.0;
    let _ = writeln!(
        out,
        "<svg class=\"chart\" role=\"img\" aria-label=\"traffic split per request class\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\">"
    );
    for (i, class) in table.classes.iter().enumerate() {
        let y = i as f64 * ROW + 4.0;
        let mut label = class.example.clone();
        if class.requests > 1 {
            label.push_str(&format!(" (+{} alike)", class.requests - 1));
        }
        if label.chars().count() > 56 {
            label = label.chars().take(55).collect::<String>() + "…";
        }
        let _ = writeln!(
            out,
            "<text x=\"0\" y=\"{}\"><title>{}</title>{}</text>",
            y + 14.0,
            escape(&class.example),
            escape(&label)
        );
        let mut x = LABEL;
        let mut parts = Vec::new();
        for (role, color) in [
            (ShareRole::Stable, STABLE_COLOR),
            (ShareRole::Canary, CANARY_COLOR),
            (ShareRole::Other, OTHER_COLOR),
        ] {
            let percent = class.after_percent(role);
            if percent <= 0.0 {
                continue;
            }
            let w = BAR * percent / 100.0;
            let _ = writeln!(
                out,
                "<rect x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"18\" fill=\"{color}\"><title>{} {}</title></rect>",
                role.as_str(),
                percent_text(percent)
            );
            x += w;
            parts.push(format!("{} {}", role.as_str(), percent_text(percent)));
        }
        if class.misrouted.is_some() {
            // Not what the step asks: the bar is outlined in red.
            let _ = writeln!(
                out,
                "<rect class=\"misrouted\" x=\"{LABEL}\" y=\"{}\" width=\"{BAR}\" height=\"20\" fill=\"none\" stroke=\"#cf222e\" stroke-width=\"2\"/>",
                y - 1.0
            );
        }
        if class.after.is_none() {
            let _ = writeln!(
                out,
                "<rect x=\"{LABEL}\" y=\"{y}\" width=\"{BAR}\" height=\"18\" fill=\"none\" stroke=\"{OTHER_COLOR}\" stroke-dasharray=\"4 3\"/>"
            );
            parts.push("no route".to_owned());
        }
        let verdict = match &class.misrouted {
            Some(asked) => format!("✗ asked: {asked}"),
            None => "✓".to_owned(),
        };
        let fill = if class.misrouted.is_some() {
            "#cf222e"
        } else {
            "#1f2328"
        };
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{}\" fill=\"{fill}\">{} {}</text>",
            LABEL + BAR + 8.0,
            y + 14.0,
            escape(&parts.join(", ")),
            escape(&verdict)
        );
    }
    out.push_str("</svg>\n");
    if table.more_classes > 0 {
        let _ = writeln!(
            out,
            "<p class=\"meta\">… {} more request classes</p>",
            table.more_classes
        );
    }
    let _ = writeln!(
        out,
        "<p class=\"meta\">{} probe requests{}</p>",
        table.probes,
        if table.truncated {
            " (cut at the intent check's bound)"
        } else {
            ""
        }
    );
}
