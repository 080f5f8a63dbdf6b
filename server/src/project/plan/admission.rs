//! Whether Kruise's Rollout admission webhook would accept the Rollout a plan replays: the
//! step and traffic-routing rules of openkruise/rollouts
//! `pkg/webhook/rollout/validating/rollout_create_update_handler.go` (v1beta1:
//! `validateRolloutSpecStrategy`, `validateRolloutSpecCanarySteps`,
//! `validateRolloutSpecCanaryTraffic`) and `validate_v1alphal_rollout.go` (v1alpha1). A Rollout
//! the webhook rejects never runs, so a plan of it must not read as a rollout that works.
//!
//! Left out: the rules that need the cluster (a second Rollout of the same workload, which
//! workload kinds are supported, what may change while a rollout progresses) and the
//! partition style's replica limit (`PartitionReplicasLimitWithTraffic`, set by the
//! controller's environment).

use kruise_lua_engine::luadata::go_atoi;
use kruise_lua_engine::value::JsonValue;

use super::manifests::Manifest;

/// Why the webhook would reject `rollout`, one message per rule broken, each naming the field
/// (`spec.strategy.canary.steps[1].traffic`); empty when it would admit it (or when it is not a
/// Rollout: a TrafficRouting has rules of its own, not modelled).
pub fn rejections(rollout: &Manifest) -> Vec<String> {
    if rollout.field("kind") != "Rollout" {
        return Vec::new();
    }
    let spec = rollout.object.get("spec");
    let strategy = spec.and_then(|s| s.get("strategy"));
    let mut out = Vec::new();
    if rollout.field("apiVersion").ends_with("/v1alpha1") {
        match strategy.and_then(|s| s.get("canary")) {
            Some(canary) => {
                v1alpha1_steps(canary, &mut out);
                routings(canary, "spec.strategy.canary", &mut out);
            }
            None => out.push("spec.strategy.canary: Canary cannot be empty".to_owned()),
        }
        return out;
    }
    let canary = strategy.and_then(|s| s.get("canary"));
    let blue_green = strategy.and_then(|s| s.get("blueGreen"));
    let (chosen, path, traffic_floor) = match (canary, blue_green) {
        (None, None) => {
            return vec!["spec.strategy: Canary and BlueGreen cannot both be empty".to_owned()];
        }
        (Some(_), Some(_)) => {
            return vec!["spec.strategy: Canary and BlueGreen cannot both be set".to_owned()];
        }
        // "traffic "0%" is not allowed in canary strategy"; blue-green allows it.
        (Some(canary), None) => (canary, "spec.strategy.canary", Floor::Exclusive),
        (None, Some(blue_green)) => (blue_green, "spec.strategy.blueGreen", Floor::Inclusive),
    };
    v1beta1_steps(chosen, path, traffic_floor, &mut out);
    routings(chosen, path, &mut out);
    out
}

/// Whether a traffic of 0 % is allowed.
#[derive(Clone, Copy, PartialEq)]
enum Floor {
    Exclusive,
    Inclusive,
}

/// A step's `replicas` or `traffic` as `intstr.GetScaledValueFromIntOrPercent(v, 100, true)`
/// reads it: an integer as is, a string only as `<integer>%` (Go's `strconv.Atoi` of what is
/// before the `%`: no spaces, no fraction), and whether it was a percentage.
fn scaled(value: &JsonValue) -> Result<(i64, bool), String> {
    match value {
        JsonValue::Int(number) => Ok((*number, false)),
        JsonValue::Float(number) if number.fract() == 0.0 => Ok((*number as i64, false)),
        JsonValue::String(text) => {
            let Some(digits) = text.strip_suffix('%') else {
                return Err(format!(
                    "invalid value for IntOrString: invalid type: string is not a percentage ({text:?})"
                ));
            };
            go_atoi(digits).map(|n| (n, true)).ok_or_else(|| {
                format!("invalid value for IntOrString: {text:?} is not an integer percentage")
            })
        }
        other => Err(format!(
            "{} is neither an integer nor a percentage",
            show(other)
        )),
    }
}

fn steps_of<'a>(strategy: &'a JsonValue, path: &str, out: &mut Vec<String>) -> &'a [JsonValue] {
    let steps = strategy
        .get("steps")
        .and_then(JsonValue::as_array)
        .unwrap_or_default();
    if steps.is_empty() {
        out.push(format!(
            "{path}.steps: The number of Canary.Steps cannot be empty"
        ));
    }
    steps
}

/// `replicas` checked as both versions check it: a positive number, or a percentage in
/// (0 %, 100 %]; its value and whether it is a percentage, or `None` after a rejection.
fn replicas(value: &JsonValue, at: &str, out: &mut Vec<String>) -> Option<(i64, bool)> {
    match scaled(value) {
        Ok((n, percent)) if n > 0 && !(percent && n > 100) => Some((n, percent)),
        found => {
            let why = found.err().map(|e| format!(" ({e})")).unwrap_or_default();
            out.push(format!(
                "{at}.replicas {}: replicas must be positive number, or a percentage with \"0%\" < canaryReplicas <= \"100%\"{why}",
                show(value)
            ));
            None
        }
    }
}

/// Field `key` of a step or routing, unless it is absent or null (the webhook's Go structs
/// read both as unset).
fn given<'a>(object: &'a JsonValue, key: &str) -> Option<&'a JsonValue> {
    object
        .get(key)
        .filter(|value| !matches!(value, JsonValue::Null))
}

/// Each step checked by `check` (which pushes its rejections and gives the step's replicas),
/// up to the first step rejected, as the webhook stops there; the steps' replicas when none
/// was.
fn checked_steps(
    steps: &[JsonValue],
    path: &str,
    out: &mut Vec<String>,
    mut check: impl FnMut(&JsonValue, &str, &mut Vec<String>) -> Option<(i64, bool)>,
) -> Option<Vec<(i64, bool)>> {
    let mut sizes = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let before = out.len();
        let size = check(step, &format!("{path}.steps[{i}]"), out);
        match size {
            Some(size) if out.len() == before => sizes.push(size),
            _ => return None,
        }
    }
    Some(sizes)
}

fn v1beta1_steps(strategy: &JsonValue, path: &str, floor: Floor, out: &mut Vec<String>) {
    let steps = steps_of(strategy, path, out);
    let sizes = checked_steps(steps, path, out, |step, at, out| {
        let size = match given(step, "replicas") {
            None => {
                out.push(format!("{at}.replicas: replicas cannot be empty"));
                None
            }
            Some(value) => replicas(value, at, out),
        };
        if let Some(traffic) = given(step, "traffic") {
            // `traffic` is a *string read with intstr.FromString: "20" (no %) is refused too.
            let weight = match traffic {
                JsonValue::String(_) => scaled(traffic),
                _ => Err("traffic must be a string".to_owned()),
            };
            let low_ok = |n: i64| match floor {
                Floor::Exclusive => n > 0,
                Floor::Inclusive => n >= 0,
            };
            if !matches!(weight, Ok((n, _)) if low_ok(n) && n <= 100) {
                let (rule, strategy) = match floor {
                    Floor::Exclusive => ("\"0%\" < traffic <= \"100%\"", "canary"),
                    Floor::Inclusive => ("\"0%\" <= traffic <= \"100%\"", "blueGreen"),
                };
                out.push(format!(
                    "{at}.traffic {}: traffic must be percentage with {rule} in {strategy} strategy",
                    show(traffic)
                ));
            }
        }
        size
    });
    if let Some(sizes) = sizes {
        non_decreasing(&sizes, path, out);
    }
}

fn v1alpha1_steps(canary: &JsonValue, out: &mut Vec<String>) {
    let path = "spec.strategy.canary";
    let steps = steps_of(canary, path, out);
    let sizes = checked_steps(steps, path, out, |step, at, out| {
        match (given(step, "replicas"), given(step, "weight")) {
            (None, None) => {
                out.push(format!(
                    "{at}: weight and replicas cannot be empty at the same time"
                ));
                None
            }
            (Some(value), _) => replicas(value, at, out),
            (None, Some(weight)) => match weight.as_f64() {
                Some(w) if w > 0.0 && w <= 100.0 => Some((w as i64, true)),
                _ => {
                    out.push(format!(
                        "{at}.weight {}: weight must be positive number, and less than or equal to replicasLimitWithTraffic (defaults to 30)",
                        show(weight)
                    ));
                    None
                }
            },
        }
    });
    let Some(sizes) = sizes else {
        return;
    };
    let has_routing = canary
        .get("trafficRoutings")
        .and_then(JsonValue::as_array)
        .is_some_and(|r| !r.is_empty());
    if has_routing {
        let weights: Vec<Option<f64>> = steps
            .iter()
            .map(|step| given(step, "weight").and_then(JsonValue::as_f64))
            .collect();
        for (i, pair) in weights.windows(2).enumerate() {
            if let [Some(prev), Some(curr)] = pair
                && curr < prev
            {
                out.push(format!(
                    "{path}.steps[{}].weight: Steps.Weight must be a non decreasing sequence",
                    i + 1
                ));
                return;
            }
        }
    }
    non_decreasing(&sizes, path, out);
}

/// Steps' replicas must not decrease where two neighbours are comparable (both percentages or
/// both counts).
fn non_decreasing(sizes: &[(i64, bool)], path: &str, out: &mut Vec<String>) {
    for (i, pair) in sizes.windows(2).enumerate() {
        if let [(prev, prev_percent), (curr, curr_percent)] = pair
            && prev_percent == curr_percent
            && curr < prev
        {
            out.push(format!(
                "{path}.steps[{}].replicas: Steps.CanaryReplicas must be a non decreasing sequence",
                i + 1
            ));
            return;
        }
    }
}

fn routings(strategy: &JsonValue, path: &str, out: &mut Vec<String>) {
    let routings = strategy
        .get("trafficRoutings")
        .and_then(JsonValue::as_array)
        .unwrap_or_default();
    if routings.len() > 1 {
        out.push(format!(
            "{path}.trafficRoutings: Rollout currently only support single TrafficRouting."
        ));
    }
    for (i, routing) in routings.iter().enumerate() {
        let at = format!("{path}.trafficRoutings[{i}]");
        if routing
            .get("gracePeriodSeconds")
            .and_then(JsonValue::as_f64)
            .is_some_and(|g| g < 0.0)
        {
            out.push(format!(
                "{at}.gracePeriodSeconds: TrafficRouting.GracePeriodSeconds cannot be negative"
            ));
        }
        if routing
            .get("service")
            .and_then(JsonValue::as_str)
            .is_none_or(str::is_empty)
        {
            out.push(format!(
                "{at}.service: TrafficRouting.Service cannot be empty"
            ));
        }
        let set = |key: &str| given(routing, key).is_some();
        if !set("gateway") && !set("ingress") && !set("customNetworkRefs") {
            out.push(format!("{at}: TrafficRoutings are not set"));
        }
        if set("ingress")
            && routing
                .at(&["ingress", "name"])
                .and_then(JsonValue::as_str)
                .is_none_or(str::is_empty)
        {
            out.push(format!(
                "{at}.ingress.name: TrafficRouting.Ingress.Ingress cannot be empty"
            ));
        }
        if set("gateway")
            && routing
                .at(&["gateway", "httpRouteName"])
                .and_then(JsonValue::as_str)
                .is_none_or(str::is_empty)
        {
            out.push(format!(
                "{at}.gateway.httpRouteName: TrafficRouting.Gateway must set the name of HTTPRoute or HTTPsRoute"
            ));
        }
    }
}

/// A value as a message quotes it.
fn show(value: &JsonValue) -> String {
    match value {
        JsonValue::String(text) => format!("{text:?}"),
        JsonValue::Int(number) => number.to_string(),
        JsonValue::Float(number) => number.to_string(),
        JsonValue::Bool(flag) => flag.to_string(),
        JsonValue::Null => "null".to_owned(),
        JsonValue::Array(_) => "a list".to_owned(),
        JsonValue::Object(_) => "a map".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::plan::manifests;

    fn rejections_of(yaml: &str) -> Vec<String> {
        let rollout = manifests::read("r.yaml", yaml).unwrap().remove(0);
        rejections(&rollout)
    }

    fn v1beta1(steps: &str) -> String {
        format!(
            "apiVersion: rollouts.kruise.io/v1beta1\nkind: Rollout\nmetadata: {{name: r}}\nspec:\n  strategy:\n    canary:\n      trafficRoutings:\n      - service: web\n        customNetworkRefs: [{{apiVersion: a.io/v1, kind: X, name: x}}]\n      steps:\n{steps}"
        )
    }

    #[test]
    fn a_valid_rollout_is_admitted() {
        let steps = "      - {traffic: 10%, replicas: 1}\n      - {replicas: 50%}\n      - {traffic: 100%, replicas: 100%}\n";
        assert_eq!(rejections_of(&v1beta1(steps)), Vec::<String>::new());
    }

    #[test]
    fn traffic_must_be_an_integer_percentage_above_zero_in_canary() {
        for (traffic, shown) in [
            ("abc", "\"abc\""),
            ("150%", "\"150%\""),
            ("-5%", "\"-5%\""),
            ("10.5%", "\"10.5%\""),
            ("0%", "\"0%\""),
            ("'20'", "\"20\""),
        ] {
            let found = rejections_of(&v1beta1(&format!(
                "      - {{traffic: {traffic}, replicas: 1}}\n"
            )));
            assert_eq!(
                found,
                [format!(
                    "spec.strategy.canary.steps[0].traffic {shown}: traffic must be percentage with \"0%\" < traffic <= \"100%\" in canary strategy"
                )],
                "{traffic}"
            );
        }
    }

    #[test]
    fn blue_green_allows_zero_traffic() {
        let yaml = "apiVersion: rollouts.kruise.io/v1beta1\nkind: Rollout\nmetadata: {name: r}\nspec:\n  strategy:\n    blueGreen:\n      trafficRoutings:\n      - {service: web, ingress: {name: web}}\n      steps:\n      - {traffic: 0%, replicas: 100%}\n";
        assert_eq!(rejections_of(yaml), Vec::<String>::new());
    }

    #[test]
    fn steps_replicas_and_routings_are_checked() {
        assert_eq!(
            rejections_of(&v1beta1("      []\n").replace("steps:\n      []", "steps: []")),
            ["spec.strategy.canary.steps: The number of Canary.Steps cannot be empty"]
        );
        assert_eq!(
            rejections_of(&v1beta1("      - {traffic: 10%}\n")),
            ["spec.strategy.canary.steps[0].replicas: replicas cannot be empty"]
        );
        assert_eq!(
            rejections_of(&v1beta1(
                "      - {replicas: 50%}\n      - {replicas: 20%}\n"
            )),
            [
                "spec.strategy.canary.steps[1].replicas: Steps.CanaryReplicas must be a non decreasing sequence"
            ]
        );
        let no_service = v1beta1("      - {replicas: 1}\n").replace("service: web", "service: ''");
        assert_eq!(
            rejections_of(&no_service),
            [
                "spec.strategy.canary.trafficRoutings[0].service: TrafficRouting.Service cannot be empty"
            ]
        );
    }

    #[test]
    fn v1alpha1_needs_a_weight_or_replicas() {
        let yaml = "apiVersion: rollouts.kruise.io/v1alpha1\nkind: Rollout\nmetadata: {name: r}\nspec:\n  strategy:\n    canary:\n      trafficRoutings:\n      - {service: web, ingress: {name: web}}\n      steps:\n      - {weight: 20}\n      - {weight: 10}\n";
        assert_eq!(
            rejections_of(yaml),
            [
                "spec.strategy.canary.steps[1].weight: Steps.Weight must be a non decreasing sequence"
            ]
        );
        let empty = yaml.replace("- {weight: 10}", "- {pause: {}}");
        assert_eq!(
            rejections_of(&empty),
            ["spec.strategy.canary.steps[1]: weight and replicas cannot be empty at the same time"]
        );
    }
}
