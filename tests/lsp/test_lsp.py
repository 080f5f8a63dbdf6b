"""End-to-end tests of `kruise-lua lsp` over stdio (each runs with VS Code's and Neovim's
client capabilities)."""

import asyncio
import pathlib
import time

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import codes, completion_labels, diagnostics_of, edit, open_file, replace_all, wait_for

ROUTE = pathlib.Path("lua_configuration/example.io/Route")


def route(client: LanguageClient) -> pathlib.Path:
    return client.workspace_root / ROUTE


async def test_syntax_errors_are_reported_with_their_line(client: LanguageClient):
    path = client.workspace_root / "scratch.lua"
    open_file(client, path, "local a = 1\nlocal b = = 2\nreturn {spec = {a = a, b = b}}\n")
    diags = await wait_for(lambda: diagnostics_of(client, path), what="diagnostics")
    syntax = [d for d in diags if d.code == "syntax"]
    assert syntax, diags
    assert syntax[0].range.start.line == 1
    assert syntax[0].severity == types.DiagnosticSeverity.Error


LINT_SNIPPETS = {
    "KL001": ("local w = obj.canaryweight\nreturn {spec = {w = w}}\n", 0),
    "KL002": ("local t = os.time()\nreturn {spec = {t = t}}\n", 0),
    "KL003": ("local x = obj.canaryWeight\nprint(x)\n", None),
    "KL004": ('if obj.canaryWeight == "50" then print(1) end\nreturn obj.data\n', 0),
    "KL005": ('local s = ""\nfor k, v in pairs(obj.data.labels) do s = s .. k end\nreturn {spec = {s = s}}\n', 1),
    "KL006": ("counter = 1\nreturn {spec = {c = counter}}\n", 0),
    "KL007": ("local unused = 1\nreturn obj.data\n", 0),
    "KL009": ("local n = #obj.data.labels\nreturn {spec = {n = n}}\n", 0),
    "KL010": ("obj = {}\nreturn {spec = {}}\n", 0),
    "KL012": ("local function f(a, b) return a end\nreturn {spec = {v = f(1, 2)}}\n", 0),
    "KL013": ("function helper() end\nreturn obj.data\n", 0),
}


@pytest.mark.parametrize("code", sorted(LINT_SNIPPETS))
async def test_each_lint(client: LanguageClient, code: str):
    text, line = LINT_SNIPPETS[code]
    path = client.workspace_root / f"lint_{code}.lua"
    open_file(client, path, text)
    diags = await wait_for(lambda: diagnostics_of(client, path), what="diagnostics")
    found = [d for d in diags if d.code == code]
    assert found, f"{code} not reported: {diags}"
    if line is not None:
        assert found[0].range.start.line == line


async def test_lint_configuration_file_turns_a_lint_off(client: LanguageClient):
    (client.workspace_root / "kruise-lua.toml").write_text('[lints]\nKL007 = "off"\n')
    path = client.workspace_root / "quiet.lua"
    open_file(client, path, "local unused = 1\nlocal t = os.time()\nreturn obj.data\n")
    diags = await wait_for(lambda: diagnostics_of(client, path), what="diagnostics")
    assert "KL002" in codes(diags)
    assert "KL007" not in codes(diags)


async def test_completion_on_obj_and_on_spec_fields_through_an_alias(client: LanguageClient):
    path = route(client) / "trafficRouting.lua"
    # The first run gives the spec's shape from the cases' `original`.
    await wait_for(lambda: diagnostics_of(client, path) is not None, what="first run")
    text = "local spec = obj.data.spec\nlocal w = obj.\nlocal r = spec.\nreturn obj.data\n"
    open_file(client, path, text)
    labels = await completion_labels(client, path, 1, 14)
    assert {"canaryWeight", "stableWeight", "data", "matches"} <= labels, labels

    deadline = time.monotonic() + 10
    labels = await completion_labels(client, path, 2, 15)
    while not {"routes", "host"} <= labels and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        labels = await completion_labels(client, path, 2, 15)
    assert {"routes", "host"} <= labels, labels


async def test_hover_shows_values_per_case_and_step(client: LanguageClient):
    path = route(client) / "trafficRouting.lua"
    await wait_for(lambda: any(d.code == "summary" for d in diagnostics_of(client, path) or []), what="summary")
    text = path.read_text()
    open_file(client, path, text)
    line = next(i for i, l in enumerate(text.split("\n")) if "canary.weight = obj.canaryWeight" in l)
    character = text.split("\n")[line].index("canaryWeight") + 2
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            position=types.Position(line=line, character=character),
        )
    )
    assert hover is not None
    assert "weights: 20, 50" in hover.contents.value, hover.contents.value


async def hover_text(client: LanguageClient, path: pathlib.Path, text: str, marker: str) -> str:
    """The hover at the first `marker` in `text` (on its second character)."""
    line = next(i for i, l in enumerate(text.split("\n")) if marker in l)
    character = text.split("\n")[line].index(marker) + 1
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            position=types.Position(line=line, character=character),
        )
    )
    assert hover is not None, f"no hover on {marker!r}"
    return hover.contents.value


async def test_completion_on_a_loop_variable_over_the_spec(client: LanguageClient):
    path = route(client) / "trafficRouting.lua"
    await wait_for(lambda: diagnostics_of(client, path) is not None, what="first run")
    text = "local spec = obj.data.spec\nfor _, route in ipairs(spec.routes or {}) do\n  local s = route.\nend\nreturn obj.data\n"
    open_file(client, path, text)
    deadline = time.monotonic() + 10
    labels = await completion_labels(client, path, 2, 18)
    while labels != {"service", "weight"} and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        labels = await completion_labels(client, path, 2, 18)
    assert labels == {"service", "weight"}, labels


async def test_hover_on_a_local_shows_its_inferred_shape(client: LanguageClient):
    path = route(client) / "trafficRouting.lua"
    await wait_for(lambda: diagnostics_of(client, path) is not None, what="first run")
    text = path.read_text()
    open_file(client, path, text)
    deadline = time.monotonic() + 10
    value = await hover_text(client, path, text, "route.service")
    while "route: { service: string, weight: number }" not in value and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        value = await hover_text(client, path, text, "route.service")
    assert "route: { service: string, weight: number }" in value, value
    value = await hover_text(client, path, text, "spec.routes")
    assert "spec: { host: string, routes: […] }" in value, value


async def test_hover_on_a_function_shows_its_signature_and_comment(client: LanguageClient):
    path = client.workspace_root / "functions.lua"
    text = (
        "-- Scales a weight to the\n-- total of the routes.\nlocal function scale(weight, total)\n"
        "  return weight * total / 100\nend\n\n-- Names the canary.\nfunction canaryName(base)\n"
        "  return base .. \"-canary\"\nend\n"
        "return {spec = {w = scale(obj.canaryWeight, 10), n = canaryName(obj.stableService)}}\n"
    )
    open_file(client, path, text)
    value = await hover_text(client, path, text, "scale(obj")
    assert "local function scale(weight, total)" in value, value
    assert "Scales a weight to the\ntotal of the routes." in value, value
    value = await hover_text(client, path, text, "canaryName(obj")
    assert "function canaryName(base)" in value and "Names the canary." in value, value


async def inlay_labels(client: LanguageClient, path: pathlib.Path) -> dict:
    hints = await client.text_document_inlay_hint_async(
        types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=999, character=0)),
        )
    )
    return {h.position.line: h.label for h in hints or []}


async def test_step_values_as_inlay_hints_from_the_lens_and_hidden_again(client: LanguageClient):
    script = route(client) / "trafficRouting.lua"
    case = route(client) / "testdata" / "weights.yaml"
    await wait_for(lambda: any(d.code == "summary" for d in diagnostics_of(client, script) or []), what="summary")
    text = script.read_text()
    open_file(client, script, text)
    open_file(client, case)
    # Off by default.
    assert await inlay_labels(client, script) == {}
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=case.as_uri()))
    )
    lens = next(l for l in lenses if l.command and l.command.title == "show values of step 2")
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=lens.command.command, arguments=lens.command.arguments)
    )
    assert result["step"] == 1 and result["truncated"] is False, result
    labels = await inlay_labels(client, script)
    lines = text.split("\n")
    weight_line = next(i for i, l in enumerate(lines) if "canary.weight = obj.canaryWeight" in l)
    # The line reads obj and writes a field: both values (issue 23, defect 4: the field, not
    # the table holding it).
    assert labels[weight_line] == "obj.canaryWeight = 50, canary.weight = 50", labels
    loop_line = next(i for i, l in enumerate(lines) if "for _, route in ipairs" in l)
    assert "(×2)" in labels[loop_line], labels
    # Another text than the one that ran: no hints (the lines may have moved).
    replace_all(client, script, text, "-- moved\n" + text, 2)
    deadline = time.monotonic() + 10
    while await inlay_labels(client, script) != {} and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert await inlay_labels(client, script) == {}
    replace_all(client, script, "-- moved\n" + text, text, 3)
    deadline = time.monotonic() + 10
    while await inlay_labels(client, script) == {} and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert await inlay_labels(client, script) != {}
    await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kruise-lua.hideStepValues", arguments=[])
    )
    assert await inlay_labels(client, script) == {}
    with pytest.raises(Exception):
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="kruise-lua.showStepValues", arguments=[{"uri": case.as_uri(), "step": 7}]
            )
        )


async def test_failing_case_diagnostic_on_the_right_line_and_fix_clears_it(client: LanguageClient):
    case = route(client) / "testdata" / "wrong_weight.yaml"
    script = route(client) / "trafficRouting.lua"
    diags = await wait_for(
        lambda: [d for d in diagnostics_of(client, case) or [] if d.code == "step-fails"],
        what="failing step",
    )
    text = case.read_text()
    lines = text.split("\n")
    expected_1 = [i for i, l in enumerate(lines) if l.startswith("- apiVersion")][1]
    assert diags[0].range.start.line == expected_1
    assert "spec.routes[1].weight: expected 45, actual 50" in diags[0].message
    assert "+++ actual" in diags[0].message
    field = [d for d in diagnostics_of(client, case) if d.code == "field-differs"]
    assert field and field[0].range.start.line == len(lines) - 2  # `weight: 45`, last line
    # The script's summary comes in its own publish, not necessarily before the case's.
    summary = await wait_for(
        lambda: [d for d in diagnostics_of(client, script) or [] if d.code == "summary"],
        what="script summary",
    )
    assert summary[0].message == "1/2 cases pass (3/4 steps) — wrong_weight step 2 fails"

    # Fix the case in the editor: the diagnostics go away.
    open_file(client, case, text)
    edit(client, case, len(lines) - 2, len(lines[-2]) - 2, len(lines[-2]), "50", 2)
    await wait_for(
        lambda: not [d for d in diagnostics_of(client, case) or [] if d.code in ("step-fails", "field-differs")],
        what="diagnostics cleared",
    )
    await wait_for(
        lambda: [d for d in diagnostics_of(client, script) or [] if d.message == "2/2 cases pass (4/4 steps)"],
        what="summary updated",
    )


async def test_hover_on_failing_expected_entry_shows_the_diff(client: LanguageClient):
    case = route(client) / "testdata" / "wrong_weight.yaml"
    await wait_for(lambda: [d for d in diagnostics_of(client, case) or [] if d.code == "step-fails"], what="failure")
    text = case.read_text()
    open_file(client, case, text)
    line = [i for i, l in enumerate(text.split("\n")) if l.startswith("- apiVersion")][1]
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=case.as_uri()),
            position=types.Position(line=line + 1, character=4),
        )
    )
    assert hover is not None and "step 2 fails" in hover.contents.value
    assert "-      weight: 45" in hover.contents.value or "weight: 45" in hover.contents.value


async def test_case_created_on_disk_is_picked_up(client: LanguageClient):
    testdata = route(client) / "testdata"
    script = route(client) / "trafficRouting.lua"
    await wait_for(lambda: diagnostics_of(client, script), what="first run")
    new_case = testdata / "created_later.yaml"
    text = (testdata / "weights.yaml").read_text().replace("weight: 50", "weight: 51")
    new_case.write_text(text)
    diags = await wait_for(
        lambda: [d for d in diagnostics_of(client, new_case) or [] if d.code == "step-fails"],
        what="diagnostics of the new case",
    )
    assert "expected 51, actual 50" in diags[0].message
    new_case.unlink()
    await wait_for(
        lambda: diagnostics_of(client, new_case) is not None and len(diagnostics_of(client, new_case)) == 0,
        what="cleared after delete",
    )


async def test_accept_expected_round_trip(client: LanguageClient):
    case = route(client) / "testdata" / "wrong_weight.yaml"
    await wait_for(lambda: [d for d in diagnostics_of(client, case) or [] if d.code == "step-fails"], what="failure")
    text = case.read_text()
    open_file(client, case, text)
    lines = text.split("\n")
    line = [i for i, l in enumerate(lines) if l.startswith("- apiVersion")][1]
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=case.as_uri()),
            range=types.Range(start=types.Position(line=line, character=0), end=types.Position(line=line, character=0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    accept = [a for a in actions if a.title.startswith("Accept actual output as expected[1]")]
    assert accept, [a.title for a in actions]
    edits = accept[0].edit.changes[case.as_uri()]
    assert len(edits) == 1
    e = edits[0]
    # Apply it as an editor would.
    start = sum(len(l) + 1 for l in lines[: e.range.start.line]) + e.range.start.character
    end = sum(len(l) + 1 for l in lines[: e.range.end.line]) + e.range.end.character
    new_text = text[:start] + e.new_text + text[end:]
    assert new_text.startswith("# Fixture: the second expected entry is wrong")  # comment kept
    assert new_text[:start] == text[:start]
    replace_all(client, case, text, new_text, 2)
    await wait_for(
        lambda: diagnostics_of(client, case) is not None
        and not [d for d in diagnostics_of(client, case) if d.code == "step-fails"],
        what="case passes after accepting",
    )


async def test_accept_expected_command_writes_unopened_file(client: LanguageClient):
    case = route(client) / "testdata" / "wrong_weight.yaml"
    await wait_for(lambda: [d for d in diagnostics_of(client, case) or [] if d.code == "step-fails"], what="failure")
    before = case.read_text()
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kruise-lua.acceptExpected", arguments=[{"uri": case.as_uri()}])
    )
    assert result["applied"] and result["steps"] == 1
    after = case.read_text()
    assert after != before and "weight: 45" not in after
    assert after.split("expected:")[0] == before.split("expected:")[0]
    await wait_for(
        lambda: not [d for d in diagnostics_of(client, case) or [] if d.code == "step-fails"],
        what="cleared after the write",
    )


async def test_obj_as_lua_command(client: LanguageClient):
    case = route(client) / "testdata" / "weights.yaml"
    await wait_for(lambda: diagnostics_of(client, case) is not None, what="first run")
    lua = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kruise-lua.objAsLua", arguments=[{"uri": case.as_uri(), "step": 1}])
    )
    assert lua.startswith("local obj = {")
    assert "canaryWeight = 50," in lua
    assert 'canaryService = "web-canary",' in lua


async def test_run_all_command_and_code_lens(client: LanguageClient):
    summary = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kruise-lua.runAll", arguments=[])
    )
    # Route (2 cases, one failing), the demo ingress class, the ConfigMap's Gateway (failing).
    assert summary == {"scripts": 3, "cases": 4, "passed": 2, "steps": 6, "stepsPassed": 4, "skipped": 0}, summary
    case = route(client) / "testdata" / "wrong_weight.yaml"
    open_file(client, case)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=case.as_uri()))
    )
    titles = [l.command.title for l in lenses]
    assert titles[0] == "✗ 1 of 2 step(s) fail", titles
    assert any(t.startswith("✓ step 1 passes") for t in titles)


async def test_runtime_error_on_the_script_line(client: LanguageClient):
    script = route(client) / "trafficRouting.lua"
    text = script.read_text()
    open_file(client, script, text)
    broken = text.replace("canary.weight = obj.canaryWeight", 'error("boom")')
    replace_all(client, script, text, broken, 2)
    line = next(i for i, l in enumerate(broken.split("\n")) if 'error("boom")' in l)
    diags = await wait_for(
        lambda: [d for d in diagnostics_of(client, script) or [] if d.code == "runtime"],
        what="runtime error",
    )
    assert all(d.range.start.line == line for d in diags), diags
    # One diagnostic for the same error in every step, naming them all.
    assert len(diags) == 1, diags
    message = diags[0].message
    assert message.startswith("case weights step 1 (and 3 more:"), message
    assert "case wrong_weight step 2" in message and "runtime error" in message and "boom" in message


@pytest.mark.parametrize(
    "line, says",
    [("local x = = 1", "expected an expression"), ("local y = 7 // 2", "floor division"), ("::continue::", "labels")],
)
async def test_one_syntax_diagnostic_per_problem(client: LanguageClient, line: str, says: str):
    """Issue 13: the parser's follow-ons and the runs' per-case "syntax error" said it 2-3 times."""
    script = route(client) / "trafficRouting.lua"
    text = script.read_text()
    open_file(client, script, text)
    await wait_for(lambda: "summary" in codes(diagnostics_of(client, script)), what="the first run")
    broken = line + "\n" + text
    replace_all(client, script, text, broken, 2)
    # The cases have run on the broken text (each case says once that the script does not compile).
    case = route(client) / "testdata" / "weights.yaml"
    await wait_for(
        lambda: "script-does-not-compile" in codes(diagnostics_of(client, case)), what="the cases' notes"
    )
    await asyncio.sleep(0.3)  # any later publish of the script's list
    syntax = [d for d in diagnostics_of(client, script) if d.code == "syntax"]
    assert len(syntax) == 1, syntax
    assert syntax[0].range.start.line == 0 and says in syntax[0].message, syntax


async def test_infinite_loop_does_not_block_completion(client: LanguageClient):
    script = route(client) / "trafficRouting.lua"
    text = script.read_text()
    open_file(client, script, text)
    looping = text.replace("local spec = obj.data.spec", "while true do end\nlocal spec = obj.data.spec")
    replace_all(client, script, text, looping, 2)
    await asyncio.sleep(0.3)  # the runs are now spinning until the engine's timeout
    labels = await completion_labels(client, script, 3, len("local spec = obj."))
    assert "canaryWeight" in labels
    # Completion was answered while the runs were still spinning: their timeout is not out yet
    # (an order of events, not a wall-clock bound).
    assert not [d for d in diagnostics_of(client, script) or [] if "timeout" in d.message]
    diags = await wait_for(
        lambda: [d for d in diagnostics_of(client, script) or [] if "timeout" in d.message],
        timeout=30,
        what="timeout diagnostic",
    )
    last_return = max(i for i, l in enumerate(looping.split("\n")) if l.startswith("return"))
    assert diags[0].range.start.line == last_return


async def test_configmap_with_embedded_lua(client: LanguageClient):
    manifest = client.workspace_root / "manifests" / "kruise-rollout-configuration.yaml"
    text = manifest.read_text()
    open_file(client, manifest, text, "yaml")
    diags = await wait_for(
        lambda: [d for d in diagnostics_of(client, manifest) or [] if d.code == "KL001"],
        what="lint in the embedded script",
    )
    lines = text.split("\n")
    line = next(i for i, l in enumerate(lines) if "obj.canaryweight" in l)
    assert diags[0].range.start.line == line
    assert diags[0].range.start.character == lines[line].index("canaryweight")
    labels = await completion_labels(client, manifest, line, lines[line].index("canaryweight"))
    assert "canaryWeight" in labels


async def test_bad_input_does_not_kill_the_server(client: LanguageClient):
    path = client.workspace_root / "garbage.lua"
    open_file(client, path, "\x00\xff" * 1000 + "local = = = (((")
    # Out-of-range positions and a 3.6 MB buffer (over the 2 MiB analysis cap, under the
    # default 8 MiB message limit).
    await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            position=types.Position(line=999, character=999),
        )
    )
    big = client.workspace_root / "big.lua"
    open_file(client, big, "local x = 1\n" * 300_000)
    small = client.workspace_root / "small.lua"
    open_file(client, small, "local spec = obj.data.spec\nlocal w = obj.\nreturn obj.data\n")
    at_obj = len("local w = obj.")
    await completion_labels(client, small, 1, at_obj)  # the big buffer has been read by now
    hover = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=big.as_uri()),
            position=types.Position(line=1, character=7),
        )
    )
    labels = await completion_labels(client, small, 1, at_obj)
    # Not a timing assertion (the suite has none): the big buffer is not analysed at all.
    assert hover is None
    assert "canaryWeight" in labels
    big_diags = await wait_for(lambda: diagnostics_of(client, big), what="size notice")
    assert "not analysed" in big_diags[0].message
    scratch = client.workspace_root / "after.lua"
    open_file(client, scratch, "local a = \n")
    await wait_for(lambda: diagnostics_of(client, scratch), what="server still answers")


async def test_case_level_problems_on_their_nodes(client: LanguageClient):
    testdata = route(client) / "testdata"
    script = route(client) / "trafficRouting.lua"
    await wait_for(lambda: diagnostics_of(client, script), what="first run")
    # `weight:` on a v1beta1 step is ignored by Kruise: a warning on that key.
    text = (testdata / "weights.yaml").read_text().replace(
        '        - traffic: "50%"\n', '        - traffic: "50%"\n          weight: 50\n'
    )
    unknown = testdata / "unknown_field.yaml"
    unknown.write_text(text)
    diags = await wait_for(
        lambda: [d for d in diagnostics_of(client, unknown) or [] if "`weight`" in d.message],
        what="unknown field warning",
    )
    line = text.split("\n").index("          weight: 50")
    assert diags[0].range.start.line == line
    assert diags[0].severity == types.DiagnosticSeverity.Warning
    # Too few expected entries: an error on the `expected` list.
    short = testdata / "too_few.yaml"
    short_text = text.split("- apiVersion: example.io/v1\n  kind: Route\n  metadata:\n    name: web\n  spec:\n    host: web.example.com\n    routes:\n    - service: web\n      weight: 100\n    - service: web-canary\n      weight: 50\n")[0]
    short.write_text(short_text)
    diags = await wait_for(
        lambda: [d for d in diagnostics_of(client, short) or [] if "no expected[1]" in d.message],
        what="too few expected entries",
    )
    # The `expected` sequence starts on the line after `expected:`.
    assert diags[0].range.start.line == short_text.split("\n").index("expected:") + 1
    # A YAML syntax error at its position.
    broken = testdata / "broken.yaml"
    broken.write_text("rollout:\n  spec: [unclosed\n")
    diags = await wait_for(
        lambda: [d for d in diagnostics_of(client, broken) or [] if d.code == "case"],
        what="yaml error",
    )
    assert diags[0].severity == types.DiagnosticSeverity.Error
    assert diags[0].range.start.line >= 1


async def test_settings_reconfigure_lints(client: LanguageClient):
    path = client.workspace_root / "configured.lua"
    open_file(client, path, "local unused = 1\nreturn obj.data\n")
    await wait_for(lambda: "KL007" in codes(diagnostics_of(client, path)), what="KL007 at first")
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"kruiseLua": {"lints": {"KL007": "off", "KL006": "error"}}})
    )
    await wait_for(lambda: diagnostics_of(client, path) is not None and "KL007" not in codes(diagnostics_of(client, path)), what="KL007 off")


async def test_navigation_and_symbols(client: LanguageClient):
    path = client.workspace_root / "nav.lua"
    text = "local function weight_of(o)\n  return o.canaryWeight\nend\nlocal w = weight_of(obj)\nreturn {spec = {w = w}}\n"
    open_file(client, path, text)
    definition = await client.text_document_definition_async(
        types.DefinitionParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            position=types.Position(line=3, character=12),
        )
    )
    location = definition if isinstance(definition, types.Location) else definition[0]
    assert location.range.start.line == 0
    references = await client.text_document_references_async(
        types.ReferenceParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            position=types.Position(line=0, character=16),
            context=types.ReferenceContext(include_declaration=True),
        )
    )
    assert sorted(r.range.start.line for r in references) == [0, 3]
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=types.TextDocumentIdentifier(uri=path.as_uri()))
    )
    assert "weight_of" in [s.name for s in symbols]


async def test_ingress_script_runs_with_its_own_obj(client: LanguageClient):
    script = client.workspace_root / "lua_configuration" / "trafficrouting_ingress" / "demo.lua"
    diags = await wait_for(
        lambda: [d for d in diagnostics_of(client, script) or [] if d.code == "summary"],
        what="ingress summary",
    )
    assert diags[0].message == "1/1 cases pass (1/1 steps)"
    text = script.read_text()
    open_file(client, script, text)
    labels = await completion_labels(client, script, 1, len("local annotations = obj."))
    assert "weight" in labels and "annotations" in labels and "data" not in labels


async def test_configmap_script_runs_against_its_testdata(client: LanguageClient):
    manifest = client.workspace_root / "manifests" / "kruise-rollout-configuration.yaml"
    case = client.workspace_root / "lua_configuration" / "example.io" / "Gateway" / "testdata" / "weights.yaml"
    # `obj.canaryweight` is nil: the case fails.
    await wait_for(
        lambda: [d for d in diagnostics_of(client, case) or [] if d.code == "step-fails"],
        what="the embedded script's case fails",
    )
    text = manifest.read_text()
    lines = text.split("\n")
    summary = await wait_for(
        lambda: [d for d in diagnostics_of(client, manifest) or [] if d.code == "summary"],
        what="summary on the manifest",
    )
    first_script_line = next(i for i, l in enumerate(lines) if "local spec = obj.data.spec" in l)
    assert summary[0].range.start.line == first_script_line
    assert summary[0].message == "0/1 cases pass (0/1 steps) — weights step 1 fails"
    # Fix the typo inside the block scalar: the case passes.
    open_file(client, manifest, text, "yaml")
    line = next(i for i, l in enumerate(lines) if "obj.canaryweight" in l)
    start = lines[line].index("canaryweight")
    edit(client, manifest, line, start, start + len("canaryweight"), "canaryWeight", 2)
    await wait_for(
        lambda: diagnostics_of(client, case) is not None
        and not [d for d in diagnostics_of(client, case) if d.code == "step-fails"],
        what="case passes after the fix",
    )
    await wait_for(
        lambda: [d for d in diagnostics_of(client, manifest) or [] if d.message == "1/1 cases pass (1/1 steps)"],
        what="summary updated",
    )
