//! Intent-check findings in the report: a step whose configuration routes probe requests
//! other than the step asks (`check --intent`, see `kruise_lua_engine::intent`). Like an
//! order-dependence finding, it makes a passing step fail (verdict `misrouted`) and the exit
//! code 1.

use kruise_lua_engine::intent::{StepCheck, StepIntentOutcome};

use crate::chunk_positions::ScriptPlace;

/// The violations the intent check found in one step.
#[derive(Debug, Clone, PartialEq)]
pub struct IntentFinding {
    /// The step's index in the case (`steps[i]`; shown numbered from 1).
    pub step: usize,
    /// How many probe requests were routed.
    pub probes: usize,
    /// One line per violation: `GET /static with x-canary: 1 → web-canary 100 %, expected
    /// web 100 %`, or a configuration the gateway rejects.
    pub violations: Vec<String>,
    /// Violations left out of `violations` (the engine keeps the first few).
    pub more: usize,
    /// For each of `violations`, the script's line (from 1) of the last store the script made
    /// to the route that took the probe (for an ingress class, to the canary Ingress's
    /// annotations), when a recorded run of the step found one (`None` otherwise, and for
    /// configuration problems). See docs/ROUTING_MODELS.md, "Where a violation was written".
    pub script_lines: Vec<Option<u32>>,
}

/// A step that asks something of the routing which the intent check could not verify (no
/// routing model for the resource, nothing to probe, probes cut short), and why. Reports say
/// so in every format: silence means "checked and fine".
#[derive(Debug, Clone, PartialEq)]
pub struct IntentUnverified {
    /// The step's index in the case.
    pub step: usize,
    pub reason: String,
    /// Whether some probes were judged (the check ran, cut short or past what the model
    /// evaluates) rather than none.
    pub partly: bool,
}

impl IntentUnverified {
    /// The steps of a case's intent check that were not (fully) verified.
    pub fn from_checks(checks: &[StepCheck]) -> Vec<IntentUnverified> {
        checks
            .iter()
            .filter_map(|check| {
                Some(IntentUnverified {
                    step: check.index,
                    reason: check.outcome.unverified()?,
                    partly: matches!(&check.outcome, StepIntentOutcome::Checked(report) if report.probes > 0),
                })
            })
            .collect()
    }

    /// `intent check not done: <why>`, or `intent check partly done: <why>` when some probes
    /// were judged.
    pub fn message(&self) -> String {
        if self.partly {
            let why = self
                .reason
                .strip_prefix("partly checked: ")
                .unwrap_or(&self.reason);
            format!("intent check partly done: {why}")
        } else {
            format!("intent check not done: {}", self.reason)
        }
    }
}

impl IntentFinding {
    /// The findings of a case's intent check (steps without violations give none).
    pub fn from_checks(checks: &[StepCheck]) -> Vec<IntentFinding> {
        checks
            .iter()
            .filter_map(|check| match &check.outcome {
                StepIntentOutcome::Checked(report) if !report.violations.is_empty() => {
                    Some(IntentFinding {
                        step: check.index,
                        probes: report.probes,
                        violations: report
                            .violations
                            .iter()
                            .map(|v| v.message.clone())
                            .collect(),
                        more: report.more,
                        script_lines: report.violations.iter().map(|v| v.script_line).collect(),
                    })
                }
                _ => None,
            })
            .collect()
    }

    fn heading(&self) -> String {
        let plural = if self.probes == 1 { "" } else { "s" };
        format!(
            "misrouted (intent check, {} probe request{plural})",
            self.probes
        )
    }

    /// `violations[i]` as reports show it: with `(written at FILE:LINE)` when the script line
    /// is known, the line mapped to the file the user opens (`place`: the script file, or the
    /// manifest of a ConfigMap script).
    pub fn violation_text(&self, i: usize, place: ScriptPlace<'_>) -> String {
        let text = &self.violations[i];
        match self.script_line(i) {
            Some(line) => format!(
                "{text} (written at {}:{})",
                place.file,
                place.file_line(line)
            ),
            None => text.clone(),
        }
    }

    /// The script line (from 1) behind `violations[i]`, when known.
    pub fn script_line(&self, i: usize) -> Option<u32> {
        self.script_lines.get(i).copied().flatten()
    }

    /// Each script line that wrote a route that took a probe, once, with the first violation
    /// it caused (what the editor's and SARIF's related locations show).
    pub fn lines_written(&self) -> Vec<(u32, &str)> {
        let mut lines: Vec<(u32, &str)> = Vec::new();
        for (i, violation) in self.violations.iter().enumerate() {
            if let Some(line) = self.script_line(i)
                && !lines.iter().any(|(seen, _)| *seen == line)
            {
                lines.push((line, violation));
            }
        }
        lines
    }

    /// The whole finding on one line.
    pub fn message(&self, place: ScriptPlace<'_>) -> String {
        let texts: Vec<String> = (0..self.violations.len())
            .map(|i| self.violation_text(i, place))
            .collect();
        let mut text = format!("{}: {}", self.heading(), texts.join("; "));
        if self.more > 0 {
            text.push_str(&format!("; and {} more", self.more));
        }
        text
    }

    /// The finding as a heading line and one line per violation (the human report).
    pub fn lines(&self, place: ScriptPlace<'_>) -> Vec<String> {
        let mut lines = vec![format!("{}:", self.heading())];
        lines.extend(
            (0..self.violations.len()).map(|i| format!("  {}", self.violation_text(i, place))),
        );
        if self.more > 0 {
            lines.push(format!("  and {} more", self.more));
        }
        lines
    }
}
