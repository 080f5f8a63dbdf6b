"""End-to-end tests of the standard editing features a LuaLS user expects (issue 23): folding,
document highlight, selection range, call hierarchy, document links, lint-disabling code
actions, types in hover, parameter hints and snippets. Each runs with VS Code's and Neovim's
client capabilities."""

import pathlib

from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import diagnostics_of, open_file, wait_for

SCRIPT = """-- Fixture: helpers calling each other.
-- Two comment lines fold together.
local function weight(w)
  if w > 50 then
    return 100
  end
  return w * 1
end
local function route(r)
  r.weight = weight(obj.canaryWeight)
  return r
end
local spec = obj.data.spec
for _, r in ipairs(spec.routes or {}) do
  route(r)
end
counter = 1
return obj.data
"""


def doc(path: pathlib.Path) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=path.as_uri())


def at(text: str, marker: str, delta: int = 0) -> types.Position:
    line = next(i for i, l in enumerate(text.split("\n")) if marker in l)
    return types.Position(line=line, character=text.split("\n")[line].index(marker) + delta)


async def opened(client: LanguageClient, name: str = "helpers.lua", text: str = SCRIPT) -> pathlib.Path:
    path = client.workspace_root / name
    open_file(client, path, text)
    await wait_for(lambda: diagnostics_of(client, path) is not None, what="analysis")
    return path


async def test_folding_ranges(client: LanguageClient):
    path = await opened(client)
    folds = await client.text_document_folding_range_async(types.FoldingRangeParams(text_document=doc(path)))
    spans = {(f.start_line, f.end_line, f.kind) for f in folds}
    assert (0, 1, types.FoldingRangeKind.Comment) in spans, spans
    assert (2, 6, None) in spans, spans  # function weight .. (`end` on line 7 stays visible)
    assert (3, 4, None) in spans, spans  # the `if`
    assert (13, 14, None) in spans, spans  # the loop


async def test_document_highlight_tells_writes_from_reads(client: LanguageClient):
    path = await opened(client)
    found = await client.text_document_document_highlight_async(
        types.DocumentHighlightParams(text_document=doc(path), position=at(SCRIPT, "local spec", 7))
    )
    kinds = [(h.range.start.line, h.kind) for h in found]
    assert kinds == [(12, types.DocumentHighlightKind.Write), (13, types.DocumentHighlightKind.Read)], kinds


async def test_selection_range_expands_through_the_chain(client: LanguageClient):
    path = await opened(client)
    lines = SCRIPT.split("\n")
    result = await client.text_document_selection_range_async(
        types.SelectionRangeParams(text_document=doc(path), positions=[at(SCRIPT, "data.spec", 1)])
    )
    texts = []
    node = result[0]
    while node is not None:
        r = node.range
        if r.start.line == r.end.line:
            texts.append(lines[r.start.line][r.start.character:r.end.character])
        node = node.parent
    assert texts[:4] == ["data", "obj.data", "obj.data.spec", "local spec = obj.data.spec"], texts


async def test_call_hierarchy_incoming_and_outgoing(client: LanguageClient):
    path = await opened(client)
    items = await client.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(text_document=doc(path), position=at(SCRIPT, "weight(w)", 1))
    )
    assert [i.name for i in items] == ["weight"]
    incoming = await client.call_hierarchy_incoming_calls_async(types.CallHierarchyIncomingCallsParams(item=items[0]))
    assert [(c.from_.name, c.from_ranges[0].start.line) for c in incoming] == [("route", 9)]
    route = (await client.text_document_prepare_call_hierarchy_async(
        types.CallHierarchyPrepareParams(text_document=doc(path), position=at(SCRIPT, "  route(r)", 3))
    ))[0]
    assert route.name == "route"
    outgoing = await client.call_hierarchy_outgoing_calls_async(types.CallHierarchyOutgoingCallsParams(item=route))
    assert [c.to.name for c in outgoing] == ["weight"]
    callers = await client.call_hierarchy_incoming_calls_async(types.CallHierarchyIncomingCallsParams(item=route))
    assert [c.from_.name for c in callers] == ["helpers.lua"], "the script's top level calls it"


async def test_disable_comment_actions_and_the_kl006_fix(client: LanguageClient):
    path = await opened(client)
    diags = await wait_for(
        lambda: [d for d in diagnostics_of(client, path) or [] if d.code == "KL006"], what="KL006"
    )
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=doc(path),
            range=diags[0].range,
            context=types.CodeActionContext(diagnostics=diags),
        )
    )
    titles = {a.title: a for a in actions}
    assert "Declare `counter` with `local`" in titles, list(titles)
    assert "Disable KL006 on this line" in titles, list(titles)
    assert "Disable KL006 in this file" in titles, list(titles)
    line_edit = titles["Disable KL006 on this line"].edit.changes[path.as_uri()][0]
    assert line_edit.new_text == "-- kruise-lua: disable-next-line KL006\n"
    assert line_edit.range.start.line == 16
    # Applied, the comment silences the finding in the server too.
    lines = SCRIPT.split("\n")
    lines.insert(16, line_edit.new_text.rstrip("\n"))
    quiet = "\n".join(lines)
    path2 = client.workspace_root / "quiet.lua"
    open_file(client, path2, quiet)
    await wait_for(lambda: diagnostics_of(client, path2) is not None, what="analysis")
    assert "KL006" not in [d.code for d in diagnostics_of(client, path2)]


async def test_hover_shows_types_of_locals_and_function_results(client: LanguageClient):
    path = await opened(client)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(path), position=at(SCRIPT, "local function weight", 16))
    )
    assert "local function weight(w) -> number" in hover.contents.value, hover.contents.value
    text = "local n = #obj.data.spec\nlocal s = tostring(n)\nreturn {spec = {s = s}}\n"
    path = await opened(client, "typed.lua", text)
    hover = await client.text_document_hover_async(
        types.HoverParams(text_document=doc(path), position=at(text, "local s", 6))
    )
    assert "s: string" in hover.contents.value, hover.contents.value


async def test_document_links_between_a_case_its_script_and_its_steps(client: LanguageClient):
    script = client.workspace_root / "lua_configuration/example.io/Route/trafficRouting.lua"
    case = script.parent / "testdata/weights.yaml"
    await wait_for(lambda: diagnostics_of(client, script) is not None, what="first run")
    open_file(client, case)
    text = case.read_text()
    lines = text.split("\n")

    async def links():
        return await client.text_document_document_link_async(types.DocumentLinkParams(text_document=doc(case)))

    found = await links()
    while len(found) < 5:  # the script's link plus two per step, once the run is in
        found = await links()
    to_script = [l for l in found if l.target == script.as_uri()]
    assert to_script and lines[to_script[0].range.start.line] == "expected:"
    steps = [i for i, l in enumerate(lines) if l.strip().startswith("- traffic:")]
    expected = [i for i, l in enumerate(lines) if l.startswith("- apiVersion:")]
    by_line = {l.range.start.line: l.target for l in found}
    assert by_line[steps[0]] == f"{case.as_uri()}#L{expected[0] + 1}", by_line
    assert by_line[expected[1]] == f"{case.as_uri()}#L{steps[1] + 1}", by_line
    # VS Code shows a tooltip as a Markdown link's label: brackets in it broke the link.
    assert all("[" not in (l.tooltip or "") and "]" not in (l.tooltip or "") for l in found), found


async def test_a_comment_naming_a_case_links_to_it(client: LanguageClient):
    script = client.workspace_root / "lua_configuration/example.io/Route/trafficRouting.lua"
    case = script.parent / "testdata/wrong_weight.yaml"
    await wait_for(lambda: diagnostics_of(client, script) is not None, what="first run")
    text = "-- See testdata/wrong_weight.yaml and weights.yaml; not old_weights.yaml.\n" + script.read_text()
    open_file(client, script, text)

    async def links():
        return await client.text_document_document_link_async(types.DocumentLinkParams(text_document=doc(script)))

    found = await links()
    while len(found) < 2:  # once the run is in
        found = await links()
    first = text.split("\n")[0]
    shown = sorted((first[l.range.start.character : l.range.end.character], l.target) for l in found)
    assert shown == [
        ("testdata/wrong_weight.yaml", case.as_uri()),
        ("weights.yaml", (script.parent / "testdata/weights.yaml").as_uri()),
    ], shown


async def test_type_definition_of_obj_reads_opens_the_cases(client: LanguageClient):
    script = client.workspace_root / "lua_configuration/example.io/Route/trafficRouting.lua"
    testdata = script.parent / "testdata"
    await wait_for(lambda: diagnostics_of(client, script) is not None, what="first run")
    open_file(client, script)
    text = script.read_text()

    async def type_definition(position: types.Position):
        return await client.text_document_type_definition_async(
            types.TypeDefinitionParams(text_document=doc(script), position=position)
        )

    def places(found):
        out = set()
        for loc in found or []:
            path = pathlib.Path(loc.uri.removeprefix("file://"))
            out.add((path.name, path.read_text().split("\n")[loc.range.start.line].strip()))
        return out

    # `obj.data.spec` -> `spec:` under each case's `original:`.
    spec = await type_definition(at(text, "obj.data.spec", len("obj.data.s")))
    while not spec:  # the first run is in once the cases are known
        spec = await type_definition(at(text, "obj.data.spec", len("obj.data.s")))
    cases = sorted(p.name for p in testdata.glob("*.yaml"))
    assert places(spec) == {(name, "spec:") for name in cases}, places(spec)
    original = testdata / "weights.yaml"
    lines = original.read_text().split("\n")
    at_weights = [loc for loc in spec if loc.uri == original.as_uri()]
    assert at_weights[0].range.start.line > lines.index("original:"), at_weights
    # `obj.canaryWeight` -> the `traffic:` of every step.
    weight = await type_definition(at(text, "obj.canaryWeight >= 0", len("obj.c")))
    in_weights = [loc for loc in weight if loc.uri == original.as_uri()]
    assert [lines[loc.range.start.line].strip() for loc in in_weights] == ['- traffic: "20%"', '- traffic: "50%"']
    # `obj.canaryService` -> the traffic routing's `service:`.
    service = await type_definition(at(text, "obj.canaryService then", len("obj.c")))
    assert ("weights.yaml", "- service: web") in places(service), places(service)
    # A local of the script's own: no type definition.
    assert not await type_definition(at(text, "local canary", len("local c")))


async def test_configmap_key_links_to_the_bundled_script(client: LanguageClient):
    manifest = client.workspace_root / "manifests/route.yaml"
    manifest.write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\n"
        "data:\n  lua.traffic.routing.Route.example.io: |\n    return obj.data\n"
    )
    open_file(client, manifest)
    found = await client.text_document_document_link_async(types.DocumentLinkParams(text_document=doc(manifest)))
    targets = [l.target for l in found]
    assert any(t.endswith("/example.io/Route/trafficRouting.lua") for t in targets), targets


async def test_snippets_where_a_statement_starts(client: LanguageClient):
    path = await opened(client, "snip.lua", "local x = 1\nfor\nreturn obj.data\n")
    result = await client.text_document_completion_async(
        types.CompletionParams(text_document=doc(path), position=types.Position(line=1, character=3))
    )
    items = result.items if hasattr(result, "items") else result
    snippets = {i.label: i for i in items if i.kind == types.CompletionItemKind.Snippet}
    assert "forroutes" in snippets, [i.label for i in items]
    assert snippets["forroutes"].insert_text_format == types.InsertTextFormat.Snippet


async def test_parameter_hints_only_when_turned_on(client: LanguageClient):
    path = await opened(client)
    whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=20, character=0))

    async def parameter_hints():
        hints = await client.text_document_inlay_hint_async(types.InlayHintParams(text_document=doc(path), range=whole))
        return [h for h in hints or [] if h.kind == types.InlayHintKind.Parameter]

    assert await parameter_hints() == []
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"kruiseLua": {"inlayHints": {"parameterNames": True}}})
    )
    hints = await wait_for_async(parameter_hints)
    assert [(h.position.line, h.label) for h in hints] == [(9, "w:")], hints


async def wait_for_async(fetch, tries: int = 100):
    import asyncio

    for _ in range(tries):
        value = await fetch()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError("timed out")
