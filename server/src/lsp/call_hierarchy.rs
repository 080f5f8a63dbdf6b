//! Call hierarchy (`prepareCallHierarchy`, `incomingCalls`, `outgoingCalls`) over one script's
//! functions. An item carries its script offset in `data`, so the follow-up requests find it
//! again in the current text; the top level of a script appears as a caller named after the
//! file.

use serde_json::json;
use tower_lsp_server::ls_types::{
    CallHierarchyIncomingCall, CallHierarchyItem, CallHierarchyOutgoingCall, SymbolKind, Uri,
};

use super::lua::LuaView;
use super::text::LineIndex;
use crate::analysis::calls::{CallGraph, call_graph};

fn item(
    view: &LuaView,
    host: &str,
    index: &LineIndex,
    uri: &Uri,
    graph: &CallGraph,
    function: Option<usize>,
) -> CallHierarchyItem {
    match function {
        Some(i) => {
            let f = &graph.functions[i];
            CallHierarchyItem {
                name: f.name.clone(),
                kind: SymbolKind::FUNCTION,
                tags: None,
                detail: Some(f.detail.clone()),
                uri: uri.clone(),
                range: view.host_range(host, index, f.range.clone()),
                selection_range: view.host_range(host, index, f.selection.clone()),
                data: Some(json!({ "offset": f.selection.start })),
            }
        }
        None => {
            let whole = view.host_range(host, index, 0..view.source.len());
            CallHierarchyItem {
                name: view.target.id.display(),
                kind: SymbolKind::FILE,
                tags: None,
                detail: Some("the script's top level".into()),
                uri: uri.clone(),
                range: whole,
                selection_range: tower_lsp_server::ls_types::Range::new(whole.start, whole.start),
                data: None,
            }
        }
    }
}

/// The function at `offset` (its name, or a call of it).
pub fn prepare(
    view: &LuaView,
    host: &str,
    uri: &Uri,
    offset: usize,
) -> Option<Vec<CallHierarchyItem>> {
    let graph = call_graph(view.parsed());
    let function = graph.function_at(offset)?;
    let index = LineIndex::new(host);
    Some(vec![item(view, host, &index, uri, &graph, Some(function))])
}

/// The function an item names, in the current text: by the offset it carries.
fn function_of(graph: &CallGraph, item: &CallHierarchyItem) -> Option<usize> {
    let offset = item.data.as_ref()?.get("offset")?.as_u64()? as usize;
    graph.function_at(offset)
}

pub fn incoming(
    view: &LuaView,
    host: &str,
    uri: &Uri,
    of: &CallHierarchyItem,
) -> Vec<CallHierarchyIncomingCall> {
    let graph = call_graph(view.parsed());
    let Some(function) = function_of(&graph, of) else {
        return Vec::new();
    };
    let index = LineIndex::new(host);
    graph
        .incoming(function)
        .into_iter()
        .map(|(caller, ranges)| CallHierarchyIncomingCall {
            from: item(view, host, &index, uri, &graph, caller),
            from_ranges: ranges
                .into_iter()
                .map(|r| view.host_range(host, &index, r))
                .collect(),
        })
        .collect()
}

pub fn outgoing(
    view: &LuaView,
    host: &str,
    uri: &Uri,
    of: &CallHierarchyItem,
) -> Vec<CallHierarchyOutgoingCall> {
    let graph = call_graph(view.parsed());
    let Some(function) = function_of(&graph, of) else {
        return Vec::new();
    };
    let index = LineIndex::new(host);
    graph
        .outgoing(function)
        .into_iter()
        .map(|(callee, ranges)| CallHierarchyOutgoingCall {
            to: item(view, host, &index, uri, &graph, Some(callee)),
            from_ranges: ranges
                .into_iter()
                .map(|r| view.host_range(host, &index, r))
                .collect(),
        })
        .collect()
}
