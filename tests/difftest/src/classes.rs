//! The divergences the comparison accepts: the expected differences between Debian's 2017
//! gopher-lua snapshot and the 2022 pin Kruise runs (conformance README 2.12, 2.13), and the
//! open divergence classes of our engine (tests/difftest/FINDINGS.md), each matched by a
//! predicate on the statement and the two engines' outputs. Open classes are for the lead to
//! shrink as fixes merge: one that matches nothing in a run fails that run.

use crate::generate::Program;
use crate::outcome::Divergence;

/// One divergence, as predicates see it.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The statement that observed it (None for a status difference).
    pub label: Option<u32>,
    /// The statement's source, or for a status difference every statement left.
    pub source: String,
    /// What gopher-lua and our engine observed (`None`: no observation on that side).
    pub gopher: Option<String>,
    pub ours: Option<String>,
    /// For a status difference: each side's status and message.
    pub gopher_status: Option<String>,
    pub ours_status: Option<String>,
}

impl Finding {
    pub fn new(program: &Program, divergence: &Divergence) -> Finding {
        match divergence {
            Divergence::Observation {
                label,
                gopher,
                ours,
            } => Finding {
                label: Some(*label),
                source: program.statement(*label).unwrap_or_default().to_string(),
                gopher: gopher.clone(),
                ours: ours.clone(),
                gopher_status: None,
                ours_status: None,
            },
            Divergence::Status { gopher, ours } => Finding {
                label: None,
                source: program
                    .statements
                    .iter()
                    .map(|(_, s)| s.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                gopher: None,
                ours: None,
                gopher_status: Some(format!("{}: {}", gopher.status, gopher.message)),
                ours_status: Some(format!("{}: {}", ours.status, ours.message)),
            },
        }
    }

    fn gopher(&self) -> &str {
        self.gopher.as_deref().unwrap_or_default()
    }

    fn ours(&self) -> &str {
        self.ours.as_deref().unwrap_or_default()
    }
}

/// Where an accepted divergence comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Debian's snapshot differs from the 2022 pin here; the conformance README section.
    Snapshot2017 { readme: &'static str },
    /// Our engine differs from gopher-lua; the FINDINGS.md anchor, to be fixed.
    Open { findings: &'static str },
}

pub struct Class {
    pub id: &'static str,
    pub origin: Origin,
    /// What differs, and why it is accepted.
    pub what: &'static str,
    pub matches: fn(&Finding) -> bool,
}

impl std::fmt::Debug for Class {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Class").field("id", &self.id).finish()
    }
}

/// Expected 2017-vs-2022 differences first, then open classes.
pub static CLASSES: &[Class] = &[];

/// The first class that explains `finding`.
pub fn classify(finding: &Finding) -> Option<&'static Class> {
    CLASSES.iter().find(|class| (class.matches)(finding))
}
