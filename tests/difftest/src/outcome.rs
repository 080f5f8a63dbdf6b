//! What one run of a generated script produced, on either engine, and how two runs differ.

use std::collections::BTreeMap;

/// How a run ended, in the controller's terms (conformance README 2.10), plus the failures
/// of the harness itself.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Status {
    /// The chunk returned a table; its observations are in [`Outcome::lines`].
    Ok,
    Syntax,
    Runtime,
    Timeout,
    /// The last value was not a table; the gopher type name.
    NotTable(String),
    /// Anything else: a Go panic in gopher-lua, our memory cap, the runner hanging or dying.
    Other(String),
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Status::Ok => f.write_str("ok"),
            Status::Syntax => f.write_str("syntax error"),
            Status::Runtime => f.write_str("runtime error"),
            Status::Timeout => f.write_str("timeout"),
            Status::NotTable(t) => write!(f, "not a table ({t})"),
            Status::Other(what) => f.write_str(what),
        }
    }
}

/// One run: its status, the error text if any, and the observations by statement label.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: Status,
    pub message: String,
    pub lines: BTreeMap<u32, String>,
}

impl Outcome {
    pub fn new(status: Status, message: impl Into<String>, out: &str) -> Outcome {
        let mut lines = BTreeMap::new();
        if status == Status::Ok {
            for line in out.lines() {
                let (label, rest) = line.split_once('|').unwrap_or((line, ""));
                if let Ok(label) = label.parse() {
                    lines.insert(label, normalise(rest));
                }
            }
        }
        Outcome {
            status,
            message: message.into(),
            lines,
        }
    }
}

/// Hides what legitimately varies between runs: the addresses in `table: 0x…`-style text
/// (gopher-lua prints Go pointers; we print our own).
fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(": 0x") {
        let (head, tail) = rest.split_at(at + 4);
        out.push_str(head);
        let hex = tail
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(tail.len());
        if hex > 0 && is_address_owner(head) {
            out.push_str("ADDR");
        } else {
            out.push_str(&tail[..hex]);
        }
        rest = &tail[hex..];
    }
    out.push_str(rest);
    out
}

fn is_address_owner(head: &str) -> bool {
    [
        "table: 0x",
        "function: 0x",
        "builtin: 0x",
        "userdata: 0x",
        "thread: 0x",
    ]
    .iter()
    .any(|owner| head.ends_with(owner))
}

/// One way two runs of the same script differ.
#[derive(Debug, Clone, PartialEq)]
pub enum Divergence {
    /// The runs ended differently.
    Status { gopher: Outcome, ours: Outcome },
    /// Statement `label` observed different things (`None`: no observation on that side).
    Observation {
        label: u32,
        gopher: Option<String>,
        ours: Option<String>,
    },
}

/// Every difference between two runs: a status difference alone, or each differing observation.
pub fn differences(gopher: &Outcome, ours: &Outcome) -> Vec<Divergence> {
    if gopher.status != ours.status {
        return vec![Divergence::Status {
            gopher: gopher.clone(),
            ours: ours.clone(),
        }];
    }
    let mut labels: Vec<u32> = gopher
        .lines
        .keys()
        .chain(ours.lines.keys())
        .copied()
        .collect();
    labels.sort_unstable();
    labels.dedup();
    labels
        .into_iter()
        .filter_map(|label| {
            let (g, o) = (gopher.lines.get(&label), ours.lines.get(&label));
            (g != o).then(|| Divergence::Observation {
                label,
                gopher: g.cloned(),
                ours: o.cloned(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_hidden_and_other_hex_kept() {
        assert_eq!(
            normalise("s:table: 0xc000123abc|s:x: 0x10"),
            "s:table: 0xADDR|s:x: 0x10"
        );
    }

    #[test]
    fn a_missing_observation_is_a_difference() {
        let gopher = Outcome::new(Status::Ok, "", "1|ok|n:1\n2|ok|n:2");
        let ours = Outcome::new(Status::Ok, "", "1|ok|n:1");
        assert_eq!(
            differences(&gopher, &ours),
            vec![Divergence::Observation {
                label: 2,
                gopher: Some("ok|n:2".into()),
                ours: None
            }]
        );
    }
}
