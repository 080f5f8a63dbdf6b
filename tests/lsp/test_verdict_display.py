"""How case results show as diagnostics (issue 23, defects 2, 6, 7, 12): one syntax error is
one diagnostic and one note per case, a failing step's error sits on the `- ` line of its
`expected[i]` entry, line 1 of a script does not repeat the lens's verdict under the whole
line, and the summary counts steps beside cases."""

import asyncio
import pathlib

from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import codes, diagnostics_of, open_file, replace_all, wait_for

ROUTE = pathlib.Path("lua_configuration/example.io/Route")


def route(client: LanguageClient) -> pathlib.Path:
    return client.workspace_root / ROUTE


async def test_a_syntax_error_is_one_diagnostic_and_one_note_per_case(client: LanguageClient):
    """Defect 2: 22 errors in Problems for one typo (one per step of every case, plus the
    script's own)."""
    script = route(client) / "trafficRouting.lua"
    text = script.read_text()
    open_file(client, script, text)
    await wait_for(lambda: "summary" in codes(diagnostics_of(client, script)), what="the first run")
    replace_all(client, script, text, "local x = = 1\n" + text, 2)
    cases = sorted((route(client) / "testdata").glob("*.yaml"))
    await wait_for(
        lambda: all("script-does-not-compile" in codes(diagnostics_of(client, c)) for c in cases),
        what="the cases' notes",
    )
    await asyncio.sleep(0.3)  # any later publish
    for case in cases:
        # Hints (the steps' "not checked" notes, as `check` prints them) are not in Problems.
        diags = [d for d in diagnostics_of(client, case) if d.severity != types.DiagnosticSeverity.Hint]
        assert codes(diags) == ["script-does-not-compile"], (case.name, diags)
        note = diags[0]
        assert note.severity == types.DiagnosticSeverity.Information, note
        assert "trafficRouting.lua:1" in note.message, note.message
    errors = [d for d in diagnostics_of(client, script) if d.severity == types.DiagnosticSeverity.Error]
    assert [(d.code, d.range.start.line) for d in errors] == [("syntax", 0)], errors


async def test_a_failing_step_is_marked_on_the_dash_line_of_its_entry(client: LanguageClient):
    """Defect 6: the step's error underlined the whole `expected[i]` entry (65 lines in the
    Istio weights case) on top of the per-field errors."""
    case = route(client) / "testdata" / "wrong_weight.yaml"
    fails = await wait_for(
        lambda: [d for d in diagnostics_of(client, case) or [] if d.code == "step-fails"],
        what="failing step",
    )
    lines = case.read_text().split("\n")
    entry = [i for i, l in enumerate(lines) if l.startswith("- apiVersion")][1]
    r = fails[0].range
    assert (r.start.line, r.start.character, r.end.line) == (entry, 0, entry), r
    assert r.end.character == len(lines[entry]), r
    fields = [d for d in diagnostics_of(client, case) if d.code == "field-differs"]
    assert [d.range.start.line for d in fields] == [len(lines) - 2], fields


async def test_the_summary_sits_at_the_start_of_line_1_and_counts_steps(client: LanguageClient):
    """Defect 7: the summary underlined the whole first line (usually a comment) under the lens
    that says the same. Defect 12: the status bar counted cases where `check` counts steps: the
    summary (which the status bar adds up) and runAll say both."""
    script = route(client) / "trafficRouting.lua"
    summary = await wait_for(
        lambda: [d for d in diagnostics_of(client, script) or [] if d.code == "summary"],
        what="the summary",
    )
    r = summary[0].range
    assert (r.start.line, r.start.character, r.end.line, r.end.character) == (0, 0, 0, 0), r
    assert summary[0].message.startswith("1/2 cases pass (3/4 steps)"), summary[0].message
    result = await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command="kruise-lua.runAll", arguments=[])
    )
    # The whole workspace's totals (tests/tests/parity.rs compares them with `check`'s).
    assert result["steps"] >= result["cases"] and result["stepsPassed"] < result["steps"], result
