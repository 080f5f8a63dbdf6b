//! One comparison session: generate programs for a set of seeds, run both engines, classify
//! each divergence, shrink the unexplained ones to minimal reproducers.

use std::collections::BTreeMap;

use kruise_lua_engine::JsonValue;

use crate::classes::{self, Class, Finding, Oracle};
use crate::engines::{self, Reference};
use crate::generate::{self, Program};
use crate::outcome::{self, Divergence, Outcome};

/// Runs programs through both engines.
pub struct Session {
    gopher: Box<dyn Reference>,
    /// Which gopher-lua `gopher` is: it decides which classes apply.
    oracle: Oracle,
    obj: JsonValue,
    /// Program runs so far (both engines count as one).
    pub runs: usize,
}

/// A divergence no list explains, shrunk.
#[derive(Debug, Clone)]
pub struct Unexplained {
    pub program: Program,
    pub divergence: Divergence,
}

/// What a session found.
#[derive(Debug, Default)]
pub struct Report {
    pub programs: usize,
    pub observations: usize,
    /// Divergences per class id (expected and open classes alike).
    pub matched: BTreeMap<&'static str, usize>,
    /// One example per class id: the program shrunk around it and the divergence.
    pub examples: BTreeMap<&'static str, Unexplained>,
    pub unexplained: Vec<Unexplained>,
}

impl Session {
    pub fn new(gopher: impl Reference + 'static, oracle: Oracle) -> Session {
        Session {
            gopher: Box::new(gopher),
            oracle,
            obj: engines::obj(),
            runs: 0,
        }
    }

    pub fn run(&mut self, program: &Program) -> (Outcome, Outcome) {
        self.runs += 1;
        let source = program.source();
        let gopher = self.gopher.run(&source);
        let ours = engines::run_ours(&source, &self.obj);
        (gopher, ours)
    }

    /// Whether `program` still shows a divergence that `keep` accepts.
    fn diverges(
        &mut self,
        program: &Program,
        keep: &dyn Fn(&Program, &Divergence) -> bool,
    ) -> bool {
        let (gopher, ours) = self.run(program);
        outcome::differences(&gopher, &ours)
            .iter()
            .any(|d| keep(program, d))
    }

    /// Drops statements while the program still diverges in a way `keep` accepts (first the
    /// single statement `focus`, if given, then one statement at a time).
    pub fn shrink(
        &mut self,
        program: &Program,
        focus: Option<u32>,
        keep: &dyn Fn(&Program, &Divergence) -> bool,
    ) -> Program {
        let mut current = program.clone();
        if let Some(label) = focus {
            let alone = current.retain(|l| l == label);
            if self.diverges(&alone, keep) {
                return alone;
            }
        }
        let mut chunk = current.statements.len().div_ceil(2).max(1);
        while chunk >= 1 {
            let mut start = 0;
            while start < current.statements.len() {
                let drop: Vec<u32> = current.statements[start..]
                    .iter()
                    .take(chunk)
                    .map(|(l, _)| *l)
                    .collect();
                let candidate = current.retain(|l| !drop.contains(&l));
                if candidate.statements.len() < current.statements.len()
                    && self.diverges(&candidate, keep)
                {
                    current = candidate;
                } else {
                    start += chunk;
                }
            }
            if chunk == 1 {
                break;
            }
            chunk /= 2;
        }
        current
    }

    /// Runs every class's example alone: each open class's example must still diverge and be
    /// classified as its own class. Counts the matches into `report`; returns what is wrong
    /// (failures) and, for expected 2017 classes whose example shows nothing, notes: there our
    /// engine behaves like the 2017 snapshot, not like the pin.
    pub fn check_examples(&mut self, report: &mut Report) -> (Vec<String>, Vec<String>) {
        let mut problems = Vec::new();
        let mut notes = Vec::new();
        let oracle = self.oracle;
        for class in classes::CLASSES.iter().filter(|c| c.applies_to(oracle)) {
            let program = classes::example_program(class);
            let (gopher, ours) = self.run(&program);
            let differences = outcome::differences(&gopher, &ours);
            let snapshot = match class.origin {
                classes::Origin::Snapshot2017 { readme } => Some(readme),
                classes::Origin::Open { .. } => None,
            };
            if differences.is_empty()
                || snapshot.is_some()
                    && !differences.iter().any(|d| {
                        classes::classify(&Finding::new(&program, d), oracle)
                            .is_some_and(|c| c.id == class.id)
                    })
            {
                if let Some(readme) = snapshot {
                    notes.push(format!(
                        "class `{}`: our engine behaves like the 2017 snapshot on `{}`; the pin does not (reference: {readme})",
                        class.id, class.example
                    ));
                    continue;
                }
                problems.push(format!(
                    "class `{}`: its example no longer diverges (`{}`): if the engine was fixed, remove the class",
                    class.id, class.example
                ));
                continue;
            }
            for divergence in differences {
                match classes::classify(&Finding::new(&program, &divergence), oracle) {
                    Some(found) if found.id == class.id => {
                        self.count(found, &program, divergence, report)
                    }
                    found => problems.push(format!(
                        "class `{}`: its example is classified as {:?}: tighten the predicates",
                        class.id,
                        found.map(|c| c.id)
                    )),
                }
            }
        }
        (problems, notes)
    }

    /// Generates and compares the programs of `seeds`, `size` statements each.
    pub fn compare_seeds(
        &mut self,
        seeds: impl Iterator<Item = u64>,
        size: usize,
        report: &mut Report,
    ) {
        for seed in seeds {
            let program = generate::program(seed, size);
            report.programs += 1;
            let (gopher, ours) = self.run(&program);
            report.observations += gopher.lines.len().max(ours.lines.len());
            for divergence in outcome::differences(&gopher, &ours) {
                self.account(&program, divergence, report);
            }
        }
    }

    fn account(&mut self, program: &Program, divergence: Divergence, report: &mut Report) {
        // A status difference is about the program as a whole: shrink first, then classify
        // what is left.
        let (program, divergence) = match &divergence {
            Divergence::Status { .. } => {
                let shrunk = self.shrink(program, None, &|_, d| {
                    matches!(d, Divergence::Status { .. })
                });
                let (gopher, ours) = self.run(&shrunk);
                let again = outcome::differences(&gopher, &ours)
                    .into_iter()
                    .find(|d| matches!(d, Divergence::Status { .. }))
                    .unwrap_or(divergence);
                (shrunk, again)
            }
            Divergence::Observation { .. } => (program.clone(), divergence),
        };
        let oracle = self.oracle;
        let finding = Finding::new(&program, &divergence);
        match classes::classify(&finding, oracle) {
            Some(class) => self.count(class, &program, divergence, report),
            None => {
                let focus = finding.label;
                let shrunk = self.shrink(&program, focus, &|p, d| {
                    classes::classify(&Finding::new(p, d), oracle).is_none()
                });
                let (gopher, ours) = self.run(&shrunk);
                let divergence = outcome::differences(&gopher, &ours)
                    .into_iter()
                    .find(|d| classes::classify(&Finding::new(&shrunk, d), oracle).is_none())
                    .unwrap_or(divergence);
                report.unexplained.push(Unexplained {
                    program: shrunk,
                    divergence,
                });
            }
        }
    }

    fn count(
        &mut self,
        class: &'static Class,
        program: &Program,
        divergence: Divergence,
        report: &mut Report,
    ) {
        *report.matched.entry(class.id).or_default() += 1;
        if !report.examples.contains_key(class.id) {
            let example = match &divergence {
                Divergence::Observation { label, .. } => program.retain(|l| l == *label),
                Divergence::Status { .. } => program.clone(),
            };
            report.examples.insert(
                class.id,
                Unexplained {
                    program: example,
                    divergence,
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::Status;

    /// A stand-in for gopher-lua: our engine, except that it reads `"MARK"` as `"XXXX"` in
    /// what a statement observed, and fails the whole run when the script says `BOOM`.
    struct Skewed;

    impl Reference for Skewed {
        fn run(&mut self, source: &str) -> Outcome {
            if source.contains("BOOM") {
                return Outcome::new(Status::Runtime, "boom", "");
            }
            let mut outcome = engines::run_ours(source, &engines::obj());
            for line in outcome.lines.values_mut() {
                *line = line.replace("MARK", "XXXX");
            }
            outcome
        }
    }

    fn program(statements: &[&str]) -> Program {
        Program {
            seed: 0,
            statements: statements
                .iter()
                .enumerate()
                .map(|(i, body)| (i as u32, format!("__o({i}, function() {body} end)")))
                .collect(),
        }
    }

    #[test]
    fn an_unexplained_observation_is_reported_with_its_statement_alone() {
        let mut session = Session::new(Skewed, Oracle::Snapshot2017);
        let mut report = Report::default();
        let p = program(&["return 1", "return string.rep(\"MARK\", 1)", "return 2"]);
        let (gopher, ours) = session.run(&p);
        for divergence in outcome::differences(&gopher, &ours) {
            session.account(&p, divergence, &mut report);
        }
        assert_eq!(report.unexplained.len(), 1);
        let found = &report.unexplained[0];
        assert_eq!(found.program.statements.len(), 1);
        assert!(found.program.statements[0].1.contains("MARK"));
    }

    #[test]
    fn a_status_difference_is_shrunk_to_the_statements_that_cause_it() {
        let mut session = Session::new(Skewed, Oracle::Snapshot2017);
        let mut report = Report::default();
        let p = program(&[
            "return 1",
            "return 2",
            "local BOOM = 1 return BOOM",
            "return 3",
            "return 4",
        ]);
        let (gopher, ours) = session.run(&p);
        for divergence in outcome::differences(&gopher, &ours) {
            session.account(&p, divergence, &mut report);
        }
        assert_eq!(report.unexplained.len(), 1);
        let found = &report.unexplained[0];
        assert_eq!(found.program.statements.len(), 1);
        assert!(found.program.statements[0].1.contains("BOOM"));
        assert!(matches!(found.divergence, Divergence::Status { .. }));
    }

    #[test]
    fn every_open_class_is_stale_when_the_reference_agrees_with_us() {
        // The stand-in is our engine, so no open class's example diverges any more.
        let mut session = Session::new(Skewed, Oracle::Snapshot2017);
        let mut report = Report::default();
        let (problems, _) = session.check_examples(&mut report);
        let open = classes::CLASSES
            .iter()
            .filter(|c| matches!(c.origin, classes::Origin::Open { .. }))
            .count();
        assert_eq!(problems.len(), open);
        assert!(report.matched.is_empty());
    }
}
