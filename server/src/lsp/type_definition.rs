//! `textDocument/typeDefinition` on what a script reads of `obj`: the places in the script's
//! test cases that give it. Lua declares no types; `obj`'s shape is what the cases hand the
//! script, so "go to type definition" on `obj.data.spec.http` opens the `original.spec.http`
//! of each case, on `obj.canaryWeight` the `traffic:` of each step, and so on (the way
//! Kruise's `custom_network_provider` builds `obj`: `data` from the object's spec, labels and
//! annotations, the weights and matches from the Rollout's current step, the services from
//! its traffic routing).

use kruise_lua_engine::script::ScriptFlavor;
use kruise_lua_engine::yaml::{Span, YamlNode, YamlValue};
use tower_lsp_server::ls_types::Location;

use super::diagnostics::span_range;
use super::documents::path_uri;
use super::lua::LuaView;
use super::runs::ScriptResults;
use super::text::LineIndex;
use crate::analysis::obj_schema::{ObjPath, PathSeg};

/// At most this many places (a case with many steps gives one per step).
const MAX_LOCATIONS: usize = 200;

/// Type definition at script offset `offset` of `view`: where the cases give the `obj` value
/// read there (nothing elsewhere: the script's own names have their definition).
pub fn type_definition(view: &LuaView, offset: usize, results: &ScriptResults) -> Vec<Location> {
    let Some(found) = crate::analysis::hover::hover(view.parsed(), offset, view.flavor(), None)
    else {
        return Vec::new();
    };
    match &found.obj_path {
        Some(path) => case_locations(path, view.flavor(), results),
        None => Vec::new(),
    }
}

/// Where the cases of `results` give the value at `path` of `obj`.
pub fn case_locations(
    path: &ObjPath,
    flavor: ScriptFlavor,
    results: &ScriptResults,
) -> Vec<Location> {
    let mut out = Vec::new();
    for case in &results.cases {
        let Ok(parsed) = &case.case else { continue };
        let Some(uri) = path_uri(&case.path) else {
            continue;
        };
        let index = LineIndex::new(&case.text);
        let mut spans = Vec::new();
        match source_of(path, flavor) {
            Source::Original(yaml_path) => {
                if let Some(node) = deepest(&parsed.root, "original", &yaml_path) {
                    spans.push(node);
                }
            }
            Source::Step(field) => {
                for step in &parsed.steps {
                    let Some(entry) = step.span.and_then(|span| node_at(&parsed.root, span)) else {
                        continue;
                    };
                    let key = field.iter().find_map(|f| key_of(entry, f));
                    spans.push(key.unwrap_or(entry.span));
                }
            }
            Source::Routing(field) => {
                if let Some(span) = routing_entry(&parsed.root).and_then(|r| key_or_node(r, field))
                {
                    spans.push(span);
                }
            }
        }
        for span in spans {
            out.push(Location::new(
                uri.clone(),
                span_range(&case.text, &index, span),
            ));
            if out.len() >= MAX_LOCATIONS {
                return out;
            }
        }
    }
    out
}

/// Which part of a case an `obj` path comes from.
enum Source<'p> {
    /// Under the case's `original:` object, at this path (keys, 0-based indexes).
    Original(Vec<YamlSeg<'p>>),
    /// A field of each Rollout step (`traffic`, `matches`, `requestHeaderModifier`; a
    /// TrafficRouting's strategy says `weight` for `traffic`), the first of these it has.
    Step(&'static [&'static str]),
    /// A field of the traffic routing (`service`).
    Routing(&'static str),
}

enum YamlSeg<'p> {
    Key(&'p str),
    Index(usize),
}

fn source_of(path: &ObjPath, flavor: ScriptFlavor) -> Source<'_> {
    let first = match path.0.first() {
        Some(PathSeg::Key(k)) => k.as_str(),
        _ => return Source::Original(Vec::new()),
    };
    match (flavor, first) {
        (ScriptFlavor::Custom, "data") => match path.0.get(1) {
            // `data.labels` and `data.annotations` are the object's metadata.
            Some(PathSeg::Key(k)) if k == "labels" || k == "annotations" => {
                let mut segs = vec![YamlSeg::Key("metadata")];
                segs.extend(yaml_path(&path.0[1..]));
                Source::Original(segs)
            }
            _ => Source::Original(yaml_path(&path.0[1..])),
        },
        (ScriptFlavor::Ingress, "annotations") => {
            let mut segs = vec![YamlSeg::Key("metadata")];
            segs.extend(yaml_path(&path.0));
            Source::Original(segs)
        }
        (_, "canaryWeight" | "stableWeight" | "weight") => Source::Step(&["traffic", "weight"]),
        (_, "matches") => Source::Step(&["matches"]),
        (_, "requestHeaderModifier") => Source::Step(&["requestHeaderModifier"]),
        (_, "canaryService" | "stableService") => Source::Routing("service"),
        _ => Source::Original(Vec::new()),
    }
}

/// An obj path as YAML keys and 0-based indexes, up to its first unknown index.
fn yaml_path(segs: &[PathSeg]) -> Vec<YamlSeg<'_>> {
    segs.iter()
        .map_while(|seg| match seg {
            PathSeg::Key(k) => Some(YamlSeg::Key(k)),
            // Lua counts from 1.
            PathSeg::Index(i) => Some(YamlSeg::Index((*i as usize).saturating_sub(1))),
            PathSeg::Any => None,
        })
        .collect()
}

/// The deepest node of `top` → `path` that the case has (the nearest ancestor when the case
/// lacks the rest), as the span of its key where it has one.
fn deepest(root: &YamlNode, top: &str, path: &[YamlSeg]) -> Option<Span> {
    let mut span = key_or_node(root, top)?;
    let mut node = root.get(top)?;
    for seg in path {
        match (seg, &node.value) {
            (YamlSeg::Key(k), YamlValue::Map(_)) => {
                let Some(found) = key_or_node(node, k) else {
                    break;
                };
                span = found;
                node = node.get(k)?;
            }
            (YamlSeg::Index(i), YamlValue::Seq(items)) => {
                let Some(item) = items.get(*i) else { break };
                span = item.span;
                node = item;
            }
            _ => break,
        }
    }
    Some(span)
}

/// The span of `key`'s key node in the map `node`, else of `node` itself when it has no such
/// key; `None` when `node` is not a map.
fn key_or_node(node: &YamlNode, key: &str) -> Option<Span> {
    matches!(node.value, YamlValue::Map(_)).then(|| key_of(node, key).unwrap_or(node.span))
}

/// The span of `key`'s key node in the map `node` (the last, as the case's reader takes it).
fn key_of(node: &YamlNode, key: &str) -> Option<Span> {
    let YamlValue::Map(entries) = &node.value else {
        return None;
    };
    entries
        .iter()
        .rev()
        .find(|(k, _)| k.key_string().as_deref() == Some(key))
        .map(|(k, _)| k.span)
}

/// The node whose span is `span`.
fn node_at(node: &YamlNode, span: Span) -> Option<&YamlNode> {
    if node.span == span {
        return Some(node);
    }
    if node.span.start.offset > span.start.offset || node.span.end.offset < span.end.offset {
        return None;
    }
    match &node.value {
        YamlValue::Seq(items) => items.iter().find_map(|item| node_at(item, span)),
        YamlValue::Map(entries) => entries.iter().find_map(|(_, value)| node_at(value, span)),
        _ => None,
    }
}

/// The first traffic routing of the case: the Rollout's `trafficRoutings[0]` (canary or
/// blue-green strategy), or a TrafficRouting's `spec.objectRef[0]`.
fn routing_entry(root: &YamlNode) -> Option<&YamlNode> {
    if let Some(rollout) = root.get("rollout") {
        let strategy = rollout.get("spec")?.get("strategy")?;
        let kind = strategy
            .get("canary")
            .or_else(|| strategy.get("blueGreen"))?;
        return match &kind.get("trafficRoutings")?.value {
            YamlValue::Seq(items) => items.first(),
            _ => None,
        };
    }
    match &root
        .get("trafficRouting")?
        .get("spec")?
        .get("objectRef")?
        .value
    {
        YamlValue::Seq(items) => items.first(),
        _ => None,
    }
}
