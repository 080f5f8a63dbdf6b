//! `plan`: what a Rollout (or TrafficRouting) will do to the user's real gateway resources,
//! step by step, as plain data (no printing): for each resource the Rollout references, the
//! script Kruise would run for it ([`scripts`]), the controller's sequence replayed on it
//! ([`replay`]: original-spec annotation stored, each step, restore), and per stage the
//! resource's change ([`diff`]), the traffic split per request class (the intent check's
//! probes and routing models) and the schema findings. Front ends render a [`Plan`] (the
//! CLI's `plan` formats) and save it as a test case ([`case_file`]).

use crate::project::crd_sources::CrdSources;
use kruise_lua_engine::intent::TrafficTable;
use kruise_lua_engine::runner::RunOptions;
use kruise_lua_engine::schema::{Finding, Severity};
use kruise_lua_engine::script::ScriptKind;
use kruise_lua_engine::value::JsonValue;

pub mod admission;
pub mod case_file;
pub mod diff;
pub mod manifests;
pub mod replay;
pub mod scripts;

use diff::DiffLine;
use manifests::{Manifest, group_of};
use scripts::{ScriptSources, describe_kind};

/// At most this many steps are planned (a Rollout has a handful; each step runs the script
/// and routes every probe, so this bounds a plan's time).
pub const MAX_STEPS: usize = 200;

/// The plan of one Rollout over its resources.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// `Rollout web`, `TrafficRouting web`.
    pub rollout: String,
    /// `file:line` of the Rollout.
    pub rollout_place: String,
    /// Remarks on the inputs: references without a resource, resources nobody references,
    /// traffic routings Kruise does not run a script for.
    pub notes: Vec<String>,
    /// Why Kruise's admission webhook would reject the Rollout ([`admission`]): such a Rollout
    /// never runs, so the plan fails whatever its stages show.
    pub rejected: Vec<String>,
    pub resources: Vec<ResourcePlan>,
}

impl Plan {
    /// Whether the webhook would reject the Rollout, a stage errors, is invalid or misroutes,
    /// or a resource cannot be planned.
    pub fn has_failures(&self) -> bool {
        !self.rejected.is_empty()
            || self.resources.iter().any(|resource| {
                resource.error.is_some() || resource.stages.iter().any(Stage::failed)
            })
    }
}

/// The plan of one resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourcePlan {
    /// `VirtualService web`.
    pub resource: String,
    pub place: String,
    /// `VirtualService (networking.istio.io)`, `the ingress class nginx`.
    pub provider: String,
    /// Where the script is (`lua_configuration/…/trafficRouting.lua`, `cm.yaml (key)`).
    pub script: Option<String>,
    /// What the stages show: `VirtualService web`, or for an ingress class the canary Ingress
    /// Kruise creates beside the user's (`Ingress web-canary`).
    pub shown: String,
    /// The routing model the traffic tables come from; `None`: the engine has none.
    pub model: Option<String>,
    /// Why the resource cannot be planned (no script, a Rollout Kruise's decoder refuses).
    pub error: Option<String>,
    pub stages: Vec<Stage>,
    /// What a saved case is made of (`None` when the resource cannot be planned).
    pub case: Option<case_file::CaseInputs>,
}

/// When a stage happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StageKind {
    /// The rollout starts: Kruise stores the resource's original spec in an annotation.
    Start,
    /// Step N (numbered from 1, as Kruise numbers a Rollout's steps).
    Step(usize),
    /// The rollout ends: Kruise restores the original (an ingress class: deletes the canary
    /// Ingress).
    Restore,
}

impl StageKind {
    pub fn label(self) -> String {
        match self {
            StageKind::Start => "start".to_owned(),
            StageKind::Step(number) => format!("step {number}"),
            StageKind::Restore => "restore".to_owned(),
        }
    }
}

/// Where traffic goes after a stage.
#[derive(Debug, Clone, PartialEq)]
pub enum Traffic {
    /// The start and the restore: the routing is the original one.
    Original,
    /// The step has neither traffic nor matches: the controller does not call the script.
    NothingAsked,
    /// The split could not be worked out, and why (no routing model for the resource, the
    /// script fails, the model cannot read the resource alone).
    Unavailable(String),
    Table(TrafficTable),
}

/// One stage of a resource's plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub kind: StageKind,
    /// What the step asks: `traffic 20%, 1 match, header modifier`.
    pub asks: String,
    /// The change to the shown resource since the previous stage (empty: unchanged).
    pub diff: Vec<DiffLine>,
    /// Diff lines left out past [`diff::MAX_DIFF_LINES`].
    pub diff_more: usize,
    /// Whether the shown resource exists after the stage (the canary Ingress before it is
    /// created and after the restore does not).
    pub exists: bool,
    /// The script's error on this step (the resource is left as it was).
    pub error: Option<String>,
    /// Why the controller does not run the script for this step.
    pub not_called: Option<String>,
    pub warnings: Vec<String>,
    /// What the script printed.
    pub prints: Vec<String>,
    pub traffic: Traffic,
    /// The intent check's findings (misrouted requests, configuration the gateway rejects).
    pub violations: Vec<String>,
    pub more_violations: usize,
    pub schema: Vec<Finding>,
    /// Why the resource was not checked against a CRD (only labels and annotations were).
    pub schema_unchecked: Option<String>,
}

impl Stage {
    fn new(kind: StageKind, asks: String) -> Stage {
        Stage {
            kind,
            asks,
            diff: Vec::new(),
            diff_more: 0,
            exists: true,
            error: None,
            not_called: None,
            warnings: Vec::new(),
            prints: Vec::new(),
            traffic: Traffic::Original,
            violations: Vec::new(),
            more_violations: 0,
            schema: Vec::new(),
            schema_unchecked: None,
        }
    }

    /// Whether the stage errors, is invalid (the API server would reject it) or misroutes.
    pub fn failed(&self) -> bool {
        self.error.is_some()
            || !self.violations.is_empty()
            || self.schema.iter().any(|f| f.severity == Severity::Error)
    }
}

/// What a plan is computed with.
pub struct Settings<'a> {
    pub scripts: &'a ScriptSources,
    pub options: &'a RunOptions,
    /// The CRDs loaded and the sources that could not be; `None`: schema validation is off.
    pub schemas: Option<&'a CrdSources>,
}

/// One traffic routing of the Rollout and the provider it names.
#[derive(Debug, Clone, PartialEq)]
enum Reference {
    Custom {
        group: String,
        kind: String,
        name: String,
    },
    Ingress {
        name: String,
        class: String,
    },
}

impl Reference {
    fn describe(&self) -> String {
        match self {
            Reference::Custom { kind, name, .. } => format!("{kind} {name}"),
            Reference::Ingress { name, .. } => format!("Ingress {name}"),
        }
    }

    fn matches(&self, resource: &Manifest) -> bool {
        match self {
            Reference::Custom { group, kind, name } => {
                resource.group() == group
                    && resource.field("kind") == kind
                    && resource.name() == name
            }
            Reference::Ingress { name, .. } => {
                resource.field("kind") == "Ingress" && resource.name() == name
            }
        }
    }

    fn script_kind(&self) -> ScriptKind {
        match self {
            Reference::Custom { group, kind, .. } => ScriptKind::Custom {
                group: group.clone(),
                kind: kind.clone(),
            },
            Reference::Ingress { class, .. } => ScriptKind::Ingress {
                class: class.clone(),
            },
        }
    }
}

/// A traffic routing entry and the references it holds.
type RoutingEntry = (JsonValue, Vec<Reference>);

/// The traffic routings of a Rollout (`spec.strategy.canary.trafficRoutings`, or blueGreen's)
/// or a TrafficRouting (`spec.objectRef`): each entry and the references it holds.
fn routing_entries(rollout: &Manifest) -> Result<(&'static str, Vec<RoutingEntry>), String> {
    let (list, path): (Option<&JsonValue>, &str) = match rollout.field("kind") {
        "Rollout" => {
            let strategy = rollout.object.at(&["spec", "strategy"]);
            let chosen = strategy
                .and_then(|s| s.get("canary"))
                .or_else(|| strategy.and_then(|s| s.get("blueGreen")));
            (
                chosen.and_then(|c| c.get("trafficRoutings")),
                "spec.strategy.canary.trafficRoutings",
            )
        }
        _ => (rollout.object.at(&["spec", "objectRef"]), "spec.objectRef"),
    };
    let entries = list.and_then(JsonValue::as_array).unwrap_or_default();
    if entries.is_empty() {
        return Err(format!(
            "{}: {} has no {path}: there is nothing to plan",
            rollout.place,
            rollout.describe()
        ));
    }
    let mut out = Vec::new();
    for entry in entries {
        let mut refs = Vec::new();
        for custom in entry
            .get("customNetworkRefs")
            .and_then(JsonValue::as_array)
            .unwrap_or_default()
        {
            let text = |key: &str| custom.get(key).and_then(JsonValue::as_str).unwrap_or("");
            refs.push(Reference::Custom {
                group: group_of(text("apiVersion")).to_owned(),
                kind: text("kind").to_owned(),
                name: text("name").to_owned(),
            });
        }
        if let Some(ingress) = entry.get("ingress") {
            let text = |key: &str| ingress.get(key).and_then(JsonValue::as_str);
            refs.push(Reference::Ingress {
                name: text("name").unwrap_or("").to_owned(),
                // Kruise's default class (`IngressTrafficRouting.ClassType`: "nginx" by default).
                class: text("classType").unwrap_or("nginx").to_owned(),
            });
        }
        out.push((entry.clone(), refs));
    }
    Ok((path, out))
}

/// The Rollout with `path`'s list narrowed to `entry`: Kruise's test (and so a saved case)
/// takes the services from the first traffic routing.
fn narrowed(rollout: &JsonValue, path: &str, entry: &JsonValue) -> JsonValue {
    let mut rollout = rollout.clone();
    let keys: Vec<&str> = path.split('.').collect();
    let mut at = &mut rollout;
    for (i, key) in keys.iter().enumerate() {
        let JsonValue::Object(map) = at else {
            break;
        };
        // The blue-green strategy sits where the canary one would.
        let key = if *key == "canary" && !map.contains_key("canary") {
            "blueGreen"
        } else {
            key
        };
        if i + 1 == keys.len() {
            map.insert(key.to_owned(), JsonValue::Array(vec![entry.clone()]));
            break;
        }
        match map.get_mut(key) {
            Some(next) => at = next,
            None => break,
        }
    }
    rollout
}

/// Plans `rollout` over `resources`.
pub fn plan(
    rollout: &Manifest,
    resources: &[Manifest],
    settings: &Settings<'_>,
) -> Result<Plan, String> {
    let (path, entries) = routing_entries(rollout)?;
    let steps = match rollout.field("kind") {
        "Rollout" => {
            let strategy = rollout.object.at(&["spec", "strategy"]);
            strategy
                .and_then(|s| s.get("canary").or_else(|| s.get("blueGreen")))
                .and_then(|c| c.get("steps"))
                .and_then(JsonValue::as_array)
                .map_or(0, <[JsonValue]>::len)
        }
        _ => 1,
    };
    if steps > MAX_STEPS {
        return Err(format!(
            "{}: {} has {steps} steps; plan replays at most {MAX_STEPS}",
            rollout.place,
            rollout.describe()
        ));
    }
    let mut out = Plan {
        rollout: rollout.describe(),
        rollout_place: rollout.place.clone(),
        notes: Vec::new(),
        rejected: admission::rejections(rollout),
        resources: Vec::new(),
    };
    let mut used = vec![false; resources.len()];
    for (entry, refs) in &entries {
        if refs.is_empty() {
            out.notes.push(
                "a traffic routing without customNetworkRefs or ingress (the Gateway API provider is Kruise's Go code, not a script): not planned"
                    .to_owned(),
            );
        }
        let case_rollout = narrowed(&rollout.object, path, entry);
        for reference in refs {
            let Some(at) = resources.iter().position(|r| reference.matches(r)) else {
                out.notes.push(format!(
                    "{} references {}, which is not among the resources given (--resource): not planned",
                    rollout.describe(),
                    reference.describe()
                ));
                continue;
            };
            used[at] = true;
            out.resources.push(replay::plan_resource(
                rollout.field("kind"),
                &case_rollout,
                &resources[at],
                &reference.script_kind(),
                settings,
            ));
        }
    }
    for (resource, used) in resources.iter().zip(used) {
        if !used {
            out.notes.push(format!(
                "{}: {} is not referenced by {}: not planned",
                resource.place,
                resource.describe(),
                rollout.describe()
            ));
        }
    }
    Ok(out)
}

/// What a step asks, from its obj: `traffic 20%`, `2 matches`, `header modifier`.
pub(crate) fn asks(obj: &kruise_lua_engine::LuaData, traffic_set: bool) -> String {
    let mut parts = Vec::new();
    if traffic_set {
        parts.push(format!("traffic {}%", obj.canary_weight));
    }
    let matches = obj.matches.as_deref().map_or(0, <[_]>::len);
    match matches {
        0 => {}
        1 => parts.push("1 match".to_owned()),
        n => parts.push(format!("{n} matches")),
    }
    if obj.request_header_modifier.is_some() {
        parts.push("header modifier".to_owned());
    }
    if parts.is_empty() {
        "no traffic, no matches".to_owned()
    } else {
        parts.join(", ")
    }
}

/// `metadata.<field>` of an object as a string map (values that are not strings left out).
pub(crate) fn string_map(
    object: &JsonValue,
    field: &str,
) -> std::collections::BTreeMap<String, String> {
    object
        .at(&["metadata", field])
        .and_then(JsonValue::as_object)
        .map(|map| {
            map.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// The provider's name as messages show it.
pub(crate) fn provider(kind: &ScriptKind) -> String {
    describe_kind(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kruise_lua_engine::runner::RunOptions;
    use scripts::GivenScript;

    fn manifests(text: &str) -> Vec<Manifest> {
        manifests::read("in.yaml", text).unwrap()
    }

    const ROLLOUT: &str = "apiVersion: rollouts.kruise.io/v1beta1\nkind: Rollout\nmetadata: {name: two}\nspec:\n  strategy:\n    canary:\n      trafficRoutings:\n      - service: alpha\n        customNetworkRefs:\n        - {apiVersion: a.io/v1, kind: Split, name: alpha}\n      - service: beta\n        customNetworkRefs:\n        - {apiVersion: a.io/v1, kind: Split, name: beta}\n        - {apiVersion: a.io/v1, kind: Split, name: gone}\n      steps:\n      - traffic: 20%\n";

    const RESOURCES: &str = "apiVersion: a.io/v1\nkind: Split\nmetadata: {name: beta}\nspec: {to: x}\n---\napiVersion: a.io/v1\nkind: Split\nmetadata: {name: alpha}\nspec: {to: x}\n---\napiVersion: a.io/v1\nkind: Split\nmetadata: {name: stray}\nspec: {to: x}\n";

    #[test]
    fn each_resource_gets_the_services_of_its_own_traffic_routing() {
        let sources = ScriptSources {
            given: vec![GivenScript {
                path: "s.lua".into(),
                kind: None,
                source: "obj.data.spec.to = obj.stableService .. '/' .. obj.canaryService\nreturn obj.data\n".into(),
            }],
            ..ScriptSources::default()
        };
        let options = RunOptions::default();
        let settings = Settings {
            scripts: &sources,
            options: &options,
            schemas: None,
        };
        let rollout = manifests(ROLLOUT).remove(0);
        let plan = plan(&rollout, &manifests(RESOURCES), &settings).unwrap();
        let planned: Vec<(&str, String)> = plan
            .resources
            .iter()
            .map(|r| {
                let added: Vec<String> = r.stages[1]
                    .diff
                    .iter()
                    .filter(|l| l.kind == diff::LineKind::Added)
                    .map(|l| l.text.trim().to_owned())
                    .collect();
                (r.resource.as_str(), added.join(" "))
            })
            .collect();
        assert_eq!(
            planned,
            [
                ("Split alpha", "to: alpha/alpha-canary".to_owned()),
                ("Split beta", "to: beta/beta-canary".to_owned()),
            ]
        );
        assert_eq!(
            plan.notes,
            [
                "Rollout two references Split gone, which is not among the resources given (--resource): not planned",
                "in.yaml:11: Split stray is not referenced by Rollout two: not planned",
            ]
        );
        // Each saved case keeps only its own traffic routing (Kruise's test reads the first).
        let case = plan.resources[1].case.as_ref().unwrap();
        let routings = case
            .rollout
            .at(&["spec", "strategy", "canary", "trafficRoutings"])
            .and_then(JsonValue::as_array)
            .unwrap();
        assert_eq!(routings.len(), 1);
        assert_eq!(
            routings[0].get("service").and_then(JsonValue::as_str),
            Some("beta")
        );
    }
}
