"""End-to-end: the kruise_lua Neovim plugin with the real `kruise-lua lsp`, in headless Neovim."""

import pathlib
import shutil
import time

from conftest import GATEWAY, PLUGIN, REPO, Editor

SCRIPT = GATEWAY / "trafficRouting.lua"
FAILING_CASE = GATEWAY / "testdata" / "wrong_weight.yaml"
CONFIGMAP = pathlib.Path("deploy/rollout-configuration.yaml")


def line_of(path: pathlib.Path, text: str, start: int = 0) -> int:
    """0-based number of the first line from `start` that contains `text`."""
    lines = path.read_text().splitlines()
    for i in range(start, len(lines)):
        if text in lines[i]:
            return i
    raise AssertionError(f"{text!r} not in {path}")


def test_plugin_loads_and_defines_its_commands(editor: Editor, tmp_path: pathlib.Path):
    for command in ("KruiseLuaRun", "KruiseLuaObj", "KruiseLuaAccept"):
        assert editor.lua("return vim.fn.exists(':' .. ...)", command) == 2, command
    enabled = editor.lua("return vim.lsp.is_enabled and vim.lsp.is_enabled('kruise_lua') or false")
    assert enabled == (editor.mode == "lsp.enable"), (editor.mode, enabled)
    # The help file's tags resolve (tags generated in a copy: the tree stays clean).
    docs = tmp_path / "help-rtp"
    shutil.copytree(PLUGIN / "doc", docs / "doc")
    editor.nvim.command(f"helptags {docs / 'doc'}")
    editor.nvim.command(f"set runtimepath+={docs}")
    for tag in ("kruise_lua.txt", "kruise_lua-commands", ":KruiseLuaAccept", "kruise_lua.setup()", "kruise_lua-lspconfig"):
        editor.nvim.command(f"help {tag}")
        assert editor.lua("return vim.bo.filetype") == "help", tag


def test_script_gets_lint_and_summary_diagnostics_on_their_lines(editor: Editor):
    bufnr = editor.edit(SCRIPT)
    client = editor.wait_attached(bufnr)
    assert pathlib.Path(client["root"]) == editor.workspace / "lua_configuration"
    unused = editor.wait_diagnostic(bufnr, "KL007")
    assert unused[0]["lnum"] == line_of(editor.workspace / SCRIPT, "local unused_limit"), unused
    assert unused[0]["severity"] == 4, unused  # HINT by default
    summary = editor.wait_diagnostic(bufnr, "summary")
    assert summary[0]["lnum"] == 0
    assert summary[0]["message"].startswith("1/2 cases pass"), summary


def test_failing_case_is_marked_on_its_expected_entry_and_field(editor: Editor):
    path = editor.workspace / FAILING_CASE
    bufnr = editor.edit(FAILING_CASE)
    editor.wait_attached(bufnr)
    fails = editor.wait_diagnostic(bufnr, "step-fails")
    expected = line_of(path, "expected:")
    second_entry = line_of(path, "- apiVersion", line_of(path, "- apiVersion", expected) + 1)
    assert [d["lnum"] for d in fails] == [second_entry], fails
    assert fails[0]["severity"] == 1  # ERROR
    field = editor.wait_diagnostic(bufnr, "field-differs")
    assert field[0]["lnum"] == line_of(path, "weight: 35")
    assert "35" in field[0]["message"] and "40" in field[0]["message"], field


def test_completion_after_obj_lists_canary_weight(editor: Editor):
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    editor.wait_diagnostic(bufnr, "summary")  # the first run gives the spec's shape
    editor.lua("vim.api.nvim_buf_set_lines(..., 2, 2, false, {'local w = obj.'})", bufnr)
    result = editor.request(bufnr, "textDocument/completion", 2, len("local w = obj."))
    items = result["items"] if isinstance(result, dict) else result
    labels = {item["label"] for item in items}
    assert {"canaryWeight", "stableWeight", "data"} <= labels, labels


def test_hover_on_obj_field_and_on_failing_step(editor: Editor):
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    line = line_of(editor.workspace / SCRIPT, "obj.canaryWeight")
    character = (editor.workspace / SCRIPT).read_text().splitlines()[line].index("canaryWeight") + 2
    hover = editor.request(bufnr, "textDocument/hover", line, character)
    assert hover, "no hover on obj.canaryWeight"
    assert "canaryWeight" in str(hover["contents"]), hover

    case = editor.workspace / FAILING_CASE
    case_buf = editor.edit(FAILING_CASE)
    editor.wait_diagnostic(case_buf, "step-fails")
    hover = editor.request(case_buf, "textDocument/hover", line_of(case, "weight: 35"), 8)
    assert hover and "step 2 fails" in str(hover["contents"]), hover


def test_accept_fixes_the_case_and_its_diagnostic_clears(editor: Editor):
    path = editor.workspace / FAILING_CASE
    bufnr = editor.edit(FAILING_CASE)
    editor.wait_attached(bufnr)
    editor.wait_diagnostic(bufnr, "step-fails")
    wrong = line_of(path, "weight: 35")
    editor.nvim.current.window.cursor = (wrong + 1, 0)
    editor.nvim.command("KruiseLuaAccept")
    editor.wait(
        lambda: "      weight: 40" in editor.buffer_lines(bufnr),
        what="the accepted expected value in the buffer",
    )
    editor.wait(
        lambda: not [d for d in editor.diagnostics(bufnr) if d["code"] in ("step-fails", "field-differs")],
        what="the failure diagnostics to clear",
    )
    assert any("accepted the actual output of 1 step" in m for m in editor.messages()), editor.messages()
    # The script's verdict follows: the lens says 2/2 (and the all-pass summary hint, which
    # would say it again on line 1, is left out).
    script_buf = editor.edit(SCRIPT)
    editor.wait(
        lambda: "✓ 2/2 cases pass" in editor.lens_titles(script_buf),
        what="the lens to say 2/2",
    )
    assert not [d for d in editor.diagnostics(script_buf) if d["code"] == "summary"], editor.diagnostics(script_buf)


def test_accept_all_and_nothing_left_to_accept(editor: Editor):
    bufnr = editor.edit(FAILING_CASE)
    editor.wait_attached(bufnr)
    editor.wait_diagnostic(bufnr, "step-fails")
    editor.nvim.command("KruiseLuaAccept all")
    editor.wait(lambda: not [d for d in editor.diagnostics(bufnr) if d["code"] == "step-fails"], what="failures to clear")
    editor.nvim.command("KruiseLuaAccept all")
    editor.wait(lambda: any("nothing to accept" in m for m in editor.messages()), what="the nothing-to-accept message")


def test_accept_outside_a_step_says_how(editor: Editor):
    bufnr = editor.edit(FAILING_CASE)
    editor.wait_attached(bufnr)
    editor.nvim.current.window.cursor = (1, 0)
    editor.nvim.command("KruiseLuaAccept")
    assert any(":KruiseLuaAccept all" in m for m in editor.messages()), editor.messages()


def test_run_command_reports_counts(editor: Editor):
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    editor.nvim.command("KruiseLuaRun")
    message = editor.wait(
        lambda: [m for m in editor.messages() if "cases pass" in m],
        what="the run's counts",
    )
    assert "1/2 cases pass, 3/4 steps (1 scripts)" in message[0], message


def test_obj_command_opens_a_scratch_lua_buffer(editor: Editor):
    bufnr = editor.edit(FAILING_CASE)
    editor.wait_attached(bufnr)
    editor.wait_diagnostic(bufnr, "step-fails")
    editor.nvim.command("KruiseLuaObj 2")
    editor.wait(lambda: editor.nvim.current.buffer.number != bufnr, what="the obj buffer")
    scratch = editor.nvim.current.buffer.number
    assert editor.lua("return vim.bo[...].filetype", scratch) == "lua"
    assert editor.lua("return vim.bo[...].buftype", scratch) == "nofile"
    text = "\n".join(editor.buffer_lines(scratch))
    assert "canaryWeight = 40" in text and "stableWeight = 60" in text, text
    assert "kruise-lua://obj/wrong_weight/step2.lua" in editor.nvim.current.buffer.name


def test_obj_from_the_cursor_step(editor: Editor):
    path = editor.workspace / FAILING_CASE
    bufnr = editor.edit(FAILING_CASE)
    editor.wait_attached(bufnr)
    editor.wait_diagnostic(bufnr, "step-fails")
    editor.nvim.current.window.cursor = (line_of(path, 'traffic: "10%"') + 1, 0)
    editor.nvim.command("KruiseLuaObj")
    editor.wait(lambda: editor.nvim.current.buffer.number != bufnr, what="the obj buffer")
    assert "canaryWeight = 10" in "\n".join(editor.buffer_lines(editor.nvim.current.buffer.number))


def test_code_lenses_show_step_verdicts_and_open_obj(editor: Editor):
    bufnr = editor.edit(FAILING_CASE)
    editor.wait_attached(bufnr)
    editor.wait_diagnostic(bufnr, "step-fails")
    lenses = editor.wait(
        lambda: editor.lua(
            "local out = {}"
            " for _, l in ipairs(vim.lsp.codelens.get(...)) do"
            "   if l.command then out[#out + 1] = {title = l.command.title, line = l.range.start.line} end"
            " end return out",
            bufnr,
        ),
        what="code lenses",
    )
    titles = [lens["title"] for lens in lenses]
    assert any("step 2 fails" in t for t in titles), titles
    assert any("step 1 passes" in t for t in titles), titles
    # Running the step-2 lens goes through the plugin's handler of kruise-lua.objAsLua.
    editor.lua(
        "local bufnr = ... for _, l in ipairs(vim.lsp.codelens.get(bufnr)) do"
        "  if l.command and l.command.title:find('step 2') and l.command.command == 'kruise-lua.objAsLua' then"
        "    vim.lsp.commands[l.command.command](l.command, {bufnr = bufnr})"
        "  end"
        " end",
        bufnr,
    )
    editor.wait(lambda: editor.nvim.current.buffer.number != bufnr, what="the obj buffer from the lens")
    assert "canaryWeight = 40" in "\n".join(editor.buffer_lines(editor.nvim.current.buffer.number))


def test_lenses_are_asked_again_when_a_run_ends_while_they_are_answered(editor: Editor):
    """CI defect: Neovim drops a lens refresh while the buffer's last request is on its way, so
    a run that ended while that request was answered left the lenses from before the run. An
    in-process stand-in server holds the lens requests, so the order is the test's, not a race's.
    (On a file the plugin leaves alone, so that the real server does not attach too.)"""
    bufnr = editor.edit("deploy/service.yaml")
    editor.lua(
        "local bufnr = ... _G.held = {}"
        " vim.lsp.start({name = 'kruise_lua', root_dir = vim.fn.getcwd(),"
        "   cmd = function(dispatchers)"
        "     local id = 0"
        "     return {"
        "       request = function(method, params, callback)"
        "         id = id + 1"
        "         if method == 'initialize' then callback(nil, {capabilities = {codeLensProvider = {}}})"
        "         elseif method == 'textDocument/codeLens' then table.insert(_G.held, callback)"
        "         else callback(nil, vim.NIL) end"
        "         return true, id"
        "       end,"
        "       notify = function() return true end,"
        "       is_closing = function() return false end,"
        "       terminate = function() end,"
        "     }"
        "   end}, {bufnr = bufnr})",
        bufnr,
    )
    # Attaching asks for the lenses once; the run ends (its diagnostics arrive) before the answer.
    editor.wait(lambda: editor.lua("return #_G.held") == 1, what="the first lens request")
    editor.lua(
        "vim.diagnostic.set(vim.api.nvim_create_namespace('run'), ..., "
        "{{lnum = 0, col = 0, message = 'the run ended'}})",
        bufnr,
    )
    # The first request is answered with the lenses from before the run: none.
    editor.lua("_G.held[1](nil, {})")
    editor.wait(lambda: editor.lua("return #_G.held") == 2, what="the lenses to be asked for again")
    editor.lua(
        "_G.held[2](nil, {{range = {start = {line = 0, character = 0}, ['end'] = {line = 0, character = 0}},"
        "  command = {title = 'after the run', command = 'none'}}})"
    )
    titles = editor.lens_titles(bufnr)
    assert titles == ["after the run"], titles


def test_configmap_attaches_to_the_same_root(editor: Editor):
    script_buf = editor.edit(SCRIPT)
    script_client = editor.wait_attached(script_buf)
    bufnr = editor.edit(CONFIGMAP)
    client = editor.wait_attached(bufnr)
    assert client["id"] == script_client["id"], (client, script_client)
    # The tree bundles a script for the same provider, so Kruise never reads the ConfigMap's
    # (as `check` says): it runs no case and says why, on the key's script.
    skipped = editor.wait_diagnostic(bufnr, "skipped")
    assert skipped[0]["message"].startswith("skipped: "), skipped
    assert skipped[0]["message"].endswith("this ConfigMap script is never read"), skipped


def test_other_lua_and_yaml_files_are_left_alone(editor: Editor):
    script_buf = editor.edit(SCRIPT)
    editor.wait_attached(script_buf)
    others = [editor.edit(p) for p in ("other/init.lua", "other/testdata/values.yaml", "deploy/service.yaml")]
    editor.wait_diagnostic(script_buf, "summary")
    for bufnr in others:
        assert editor.client_of(bufnr) is None, bufnr
        assert editor.diagnostics(bufnr) == [], bufnr


def test_checkhealth_reports_binary_version_and_client(editor: Editor):
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    editor.nvim.command("checkhealth kruise_lua")
    text = "\n".join(editor.nvim.current.buffer[:])
    assert "kruise-lua" in text
    assert "`kruise-lua lsp` is available" in text, text
    assert "Neovim 0." in text, text
    assert "client" in text and "attached" in text, text
    assert "ERROR" not in text, text
    # Issue 23, defect 3: the report is about the user's buffer, not the report's own buffer,
    # and a help reference has no stray bars.
    assert "not a kruise-lua file" not in text, text
    assert "a script" in text, text
    assert "no kruise-lua client attached" not in text, text
    assert ")|" not in text, text


def test_missing_binary_says_how_to_install(editor: Editor):
    editor.lua("require('kruise_lua').setup({cmd = {'kruise-lua-that-is-not-installed', 'lsp'}})")
    bufnr = editor.edit(SCRIPT)
    editor.wait(
        lambda: any("cargo install --locked --path server" in m for m in editor.messages()),
        what="the install hint",
    )
    assert editor.client_of(bufnr) is None


def test_lint_settings_reach_the_server(editor: Editor):
    editor.setup("{lints = {KL007 = 'error'}}")
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    unused = editor.wait_diagnostic(bufnr, "KL007")
    assert unused[0]["severity"] == 1, unused  # ERROR, where the default is a hint


def test_debug_lens_runs_nvim_dap_with_the_adapter_that_debugs_the_step(editor: Editor):
    """nvim-dap is not on a package registry: a stand-in `dap` module records what the plugin
    gives it, and a scripted DAP client drives the adapter the plugin defined."""
    editor.lua(
        "_G.dap_runs = {}"
        " package.loaded['dap'] = {adapters = {}, configurations = {},"
        "   run = function(config) table.insert(_G.dap_runs, config) end}"
    )
    bufnr = editor.edit(FAILING_CASE)
    editor.wait_attached(bufnr)
    editor.wait_diagnostic(bufnr, "step-fails")
    editor.wait(
        lambda: editor.lua(
            "for _, l in ipairs(vim.lsp.codelens.get(...)) do"
            "  if l.command and l.command.title == '▶ debug step 2' then"
            "    vim.lsp.commands[l.command.command](l.command, {bufnr = ...}) return true"
            "  end"
            " end"
            # Lenses fetched before the run ended do not have it yet: ask again (a busy CI host
            # can finish the run after the plugin's last refresh).
            " pcall(vim.lsp.codelens.refresh, {bufnr = ...}) return false",
            bufnr,
        ),
        what="the debug lens",
    )
    runs = editor.lua("return _G.dap_runs")
    assert len(runs) == 1, runs
    config = runs[0]
    assert config["type"] == "kruise-lua" and config["request"] == "launch", config
    assert pathlib.Path(config["script"]) == editor.workspace / SCRIPT
    assert pathlib.Path(config["case"]) == editor.workspace / FAILING_CASE
    assert (config["step"], config["mode"]) == (2, "harness"), config
    # The adapter nvim-dap would start: kruise-lua dap.
    adapter = editor.lua(
        "local out; require('dap').adapters['kruise-lua'](function(a) out = a end) return out"
    )
    assert adapter["type"] == "executable" and adapter["args"] == ["dap"], adapter
    assert pathlib.Path(adapter["command"]).resolve() == editor.server.resolve()

    client = DapClient([adapter["command"], *adapter["args"]])
    try:
        client.request("initialize", {"adapterID": "kruise-lua"})
        client.request("launch", {k: config[k] for k in ("script", "case", "step", "mode")})
        client.wait_event("initialized")
        line = line_of(editor.workspace / SCRIPT, "canaryWeight") + 1
        client.request("setBreakpoints", {"source": {"path": config["script"]}, "breakpoints": [{"line": line}]})
        client.request("configurationDone", {})
        assert client.wait_event("stopped")["reason"] == "breakpoint"
        frame = client.request("stackTrace", {"threadId": 1})["stackFrames"][0]
        assert frame["line"] == line, frame
        weight = client.request("evaluate", {"expression": "obj.canaryWeight", "frameId": 1, "context": "watch"})
        assert weight["result"] == "40", weight
        client.request("continue", {"threadId": 1})
        exited = client.wait_event("exited")
        assert exited["exitCode"] == 1
        console = "".join(m["body"]["output"] for m in client.seen if m.get("event") == "output")
        assert "step 2: FAIL" in console, console
        client.request("disconnect", {})
    finally:
        client.close()


class DapClient:
    """A minimal Debug Adapter Protocol client over a child process's stdio."""

    def __init__(self, argv):
        import subprocess

        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.seq = 0
        self.seen = []

    def read(self):
        import json

        length = None
        while True:
            line = self.process.stdout.readline()
            assert line, "the adapter ended"
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        message = json.loads(self.process.stdout.read(length))
        self.seen.append(message)
        return message

    def request(self, command, arguments):
        import json

        self.seq += 1
        body = json.dumps({"seq": self.seq, "type": "request", "command": command, "arguments": arguments}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()
        while True:
            message = self.read()
            if message.get("type") == "response" and message.get("request_seq") == self.seq:
                assert message["success"], message
                return message.get("body") or {}

    def wait_event(self, event):
        for message in self.seen:
            if message.get("event") == event and not message.get("_taken"):
                message["_taken"] = True
                return message.get("body") or {}
        while True:
            message = self.read()
            if message.get("event") == event:
                message["_taken"] = True
                return message.get("body") or {}

    def close(self):
        try:
            self.process.stdin.close()
            self.process.wait(timeout=10)
        except Exception:  # noqa: BLE001 - the adapter may be gone already
            self.process.kill()


def test_rename_a_local_across_the_script(editor: Editor):
    path = editor.workspace / SCRIPT
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    line = line_of(path, "local spec")
    editor.nvim.current.window.cursor = (line + 1, len("local s"))
    # Neovim's own rename: prepareRename, then rename, then the edit applied to the buffer.
    editor.lua("vim.lsp.buf.rename('routing')")
    editor.wait(
        lambda: "local routing = obj.data.spec" in editor.buffer_lines(bufnr),
        what="the renamed declaration",
    )
    lines = editor.buffer_lines(bufnr)
    assert any("ipairs(routing.backends)" in l for l in lines), lines
    assert not any("spec.backends" in l for l in lines), lines
    # `obj` is refused with the server's reason.
    editor.nvim.current.window.cursor = (line + 1, lines[line].index("obj") + 1)
    editor.lua("vim.lsp.buf.rename('input')")
    editor.wait(lambda: any("`obj`" in m for m in editor.messages()), what="the refusal")
    assert "obj.data.spec" in editor.buffer_lines(bufnr)[line]


def test_format_the_buffer_with_stylua(editor: Editor):
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    editor.lua("vim.lsp.buf.format({bufnr = ..., timeout_ms = 10000})", bufnr)
    lines = editor.buffer_lines(bufnr)
    # StyLua's defaults: tab indentation, double quotes; the comment and code kept.
    assert lines[0].startswith("-- Test fixture"), lines
    assert "\tif backend.name == obj.canaryService then" in lines, lines
    # A syntax error: the buffer is left as it is.
    editor.lua("vim.api.nvim_buf_set_lines(..., 1, 1, false, {'local broken = = 1'})", bufnr)
    before = editor.buffer_lines(bufnr)
    editor.lua("vim.lsp.buf.format({bufnr = ..., timeout_ms = 10000})", bufnr)
    assert editor.buffer_lines(bufnr) == before


def test_semantic_tokens_mark_obj_fields_and_the_library(editor: Editor):
    path = editor.workspace / SCRIPT
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    line = line_of(path, "math.max(obj.canaryWeight")
    text = path.read_text().splitlines()[line]

    def tokens_at(column: int):
        return editor.lua(
            "local bufnr, row, col = ..."
            " local out = {}"
            " for _, t in ipairs(vim.lsp.semantic_tokens.get_at_pos(bufnr, row, col) or {}) do"
            "   local mods = {} for m, on in pairs(t.modifiers or {}) do if on then mods[#mods + 1] = m end end"
            "   table.sort(mods) out[#out + 1] = {type = t.type, modifiers = mods}"
            " end return out",
            bufnr,
            line,
            column,
        )

    field = editor.wait(lambda: tokens_at(text.index("canaryWeight") + 1), what="semantic tokens")
    assert {"type": "property", "modifiers": []} in field, field
    library = tokens_at(text.index("max") + 1)
    assert {"type": "function", "modifiers": ["defaultLibrary"]} in library, library
    loop_var = tokens_at(text.index("backend") + 1)
    assert loop_var and loop_var[0]["type"] == "variable", loop_var


def test_signature_help_for_a_library_function(editor: Editor):
    path = editor.workspace / SCRIPT
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    line = line_of(path, "math.max(obj.canaryWeight")
    character = path.read_text().splitlines()[line].index("0)")
    help = editor.request(bufnr, "textDocument/signatureHelp", line, character)
    assert help["signatures"][0]["label"].startswith("math.max("), help
    assert help["activeParameter"] == 1, help


def test_workspace_symbols_span_scripts_and_configmaps(editor: Editor):
    # The manifest sits outside the client's root (lua_configuration/): open, it is searched too.
    editor.wait_attached(editor.edit(CONFIGMAP))
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    symbols = editor.lua(
        "local results = vim.lsp.buf_request_sync(..., 'workspace/symbol', {query = ''}, 10000) or {}"
        " for _, r in pairs(results) do if r.result then return r.result end end return {}",
        bufnr,
    )
    where = {(s["name"], pathlib.Path(vim_path(s["location"]["uri"])).name) for s in symbols}
    assert ("spec", "trafficRouting.lua") in where, where
    assert any(name == "rollout-configuration.yaml" for _, name in where), where


def vim_path(uri: str) -> str:
    return uri.removeprefix("file://")


def test_utf8_positions_are_negotiated(editor: Editor):
    """Neovim offers UTF-8 positions: columns after non-ASCII text are byte columns."""
    bufnr = editor.edit(SCRIPT)
    client = editor.wait_attached(bufnr)
    encoding = editor.lua("return vim.lsp.get_client_by_id(...).offset_encoding", client["id"])
    assert encoding == "utf-8", encoding
    line = 'local s = "héllo 😀" local w = obj.canaryweight'
    editor.lua("vim.api.nvim_buf_set_lines(..., 1, 1, false, {select(2, ...)})", bufnr, line)
    editor.wait_diagnostic(bufnr, "KL001")
    cols = editor.lua(
        "local out = {} for _, d in ipairs(vim.diagnostic.get(...)) do"
        " if d.code == 'KL001' then out[#out + 1] = {d.col, d.end_col} end end return out",
        bufnr,
    )
    start = line.encode().index(b"canaryweight")
    assert cols == [[start, start + len("canaryweight")]], (cols, start)
    # Rename after the emoji lands on the right bytes.
    editor.nvim.current.window.cursor = (2, line.encode().index(b"w =") )
    editor.lua("vim.lsp.buf.rename('weight')")
    editor.wait(
        lambda: editor.buffer_lines(bufnr)[1] == line.replace("local w =", "local weight ="),
        what="the rename after non-ASCII text",
    )


def inlay_labels(editor: Editor, bufnr: int) -> dict:
    """0-based line → the label of the kruise-lua inlay hint there."""
    hints = editor.lua(
        "local out = {}"
        " for _, h in ipairs(vim.lsp.inlay_hint.get({bufnr = ...})) do"
        "   local label = h.inlay_hint.label"
        "   if type(label) == 'table' then"
        "     local parts = {} for _, p in ipairs(label) do parts[#parts + 1] = p.value end"
        "     label = table.concat(parts)"
        "   end"
        "   out[#out + 1] = {line = h.inlay_hint.position.line, label = label}"
        " end return out",
        bufnr,
    )
    return {h["line"]: h["label"] for h in hints}


def test_step_values_show_as_inlay_hints_and_hide(editor: Editor):
    script = editor.workspace / SCRIPT
    case_buf = editor.edit(FAILING_CASE)
    editor.wait_attached(case_buf)
    editor.wait_diagnostic(case_buf, "step-fails")
    for command in ("KruiseLuaShowValues", "KruiseLuaHideValues"):
        assert editor.lua("return vim.fn.exists(':' .. ...)", command) == 2, command
    # Off by default: the script has no hints until asked.
    editor.nvim.command("KruiseLuaShowValues 2")
    script_buf = editor.wait(
        lambda: editor.lua(
            "for _, b in ipairs(vim.api.nvim_list_bufs()) do"
            "  if vim.api.nvim_buf_get_name(b) == ... then return b end"
            " end return false",
            str(script),
        ),
        what="the script's buffer",
    )
    editor.wait_attached(script_buf)
    labels = editor.wait(
        lambda: (lambda found: found if line_of(script, "obj.canaryWeight") in found else None)(
            inlay_labels(editor, script_buf)
        ),
        what="inlay hints in the script",
    )
    assert "obj.canaryWeight = 40" in labels[line_of(script, "obj.canaryWeight")], labels
    assert "unused_limit = 3" in labels[line_of(script, "local unused_limit")], labels
    # The loop line: the loop variable's last value and how many times it was set.
    assert "(×2)" in labels[line_of(script, "for _, backend")], labels
    editor.nvim.command("KruiseLuaHideValues")
    editor.wait(lambda: inlay_labels(editor, script_buf) == {}, what="the hints to go")


def test_hover_on_a_loop_variable_shows_its_shape(editor: Editor):
    path = editor.workspace / SCRIPT
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    editor.wait_diagnostic(bufnr, "summary")
    line = line_of(path, "if backend.name")
    character = path.read_text().splitlines()[line].index("backend") + 1
    hover = editor.wait(
        lambda: (lambda h: h if h and "backend: {" in h["contents"]["value"] else None)(
            editor.request(bufnr, "textDocument/hover", line, character)
        ),
        what="a hover with the loop variable's shape",
    )
    assert "backend: { name: string, weight: number }" in hover["contents"]["value"], hover


def test_show_values_brings_a_loaded_but_hidden_script_into_a_window(editor: Editor):
    """Issue 23, defect 5: the script loaded in a buffer no window shows got its hints unseen."""
    script = editor.workspace / SCRIPT
    script_buf = editor.edit(SCRIPT)
    editor.wait_attached(script_buf)
    case_buf = editor.edit(FAILING_CASE)  # same window: the script's buffer stays loaded, hidden
    assert editor.lua("return vim.api.nvim_buf_is_loaded(...)", script_buf)
    assert editor.lua("return vim.fn.bufwinid(...)", script_buf) == -1
    editor.wait_attached(case_buf)
    editor.wait_diagnostic(case_buf, "step-fails")
    editor.nvim.command("KruiseLuaShowValues 2")
    editor.wait(lambda: editor.lua("return vim.fn.bufwinid(...)", script_buf) != -1, what="a window on the script")
    labels = editor.wait(lambda: inlay_labels(editor, script_buf), what="inlay hints in the script")
    assert line_of(script, "obj.canaryWeight") in labels, labels


def test_library_script_opened_cold_shows_its_lens(editor: Editor, tmp_path: pathlib.Path):
    """The bundled library's Istio script opened with no server running: the lens comes from
    the server's first run of that script (defect 10 compares this with VS Code's cold open; the
    time is printed, docs/BENCHMARKS.md has the figures)."""
    library = tmp_path / "library" / "lua_configuration"
    shutil.copytree(REPO / "lua_configuration", library)
    script = library / "networking.istio.io" / "VirtualService" / "trafficRouting.lua"
    cases = len(list((script.parent / "testdata").glob("*.yaml")))
    started = time.monotonic()
    editor.nvim.command(f"edit {script}")
    bufnr = editor.nvim.current.buffer.number
    titles = editor.wait(
        lambda: [t for t in editor.lens_titles(bufnr) if "cases pass" in t],
        what="the script's lens",
    )
    elapsed = time.monotonic() - started
    assert titles == [f"✓ {cases}/{cases} cases pass"], titles
    # Defect 7: line 1 does not say it twice (the summary came before the lens, in the same run).
    summaries = [d for d in editor.diagnostics(bufnr) if d["code"] == "summary"]
    assert summaries == [], summaries
    print(f"\n# cold open (Neovim {editor.mode}): lens {elapsed:.2f} s after :edit")


def test_type_definition_of_obj_reads_and_links_to_cases(editor: Editor):
    """Go to type definition on `obj.data.spec` lists `spec:` under each case's `original:`; a
    comment naming a case links to it (issue 23)."""
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    editor.wait_diagnostic(bufnr, "summary")
    line = line_of(editor.workspace / SCRIPT, "local spec = obj.data.spec")
    found = editor.request(bufnr, "textDocument/typeDefinition", line, len("local spec = obj.data.s"))
    places = []
    for loc in found:
        case = pathlib.Path(loc["uri"].removeprefix("file://"))
        places.append((case.name, case.read_text().split("\n")[loc["range"]["start"]["line"]].strip()))
    places.sort()
    assert places == [("passing.yaml", "spec:"), ("wrong_weight.yaml", "spec:")], places
    editor.nvim.current.buffer[0:0] = ["-- see testdata/wrong_weight.yaml"]
    links = editor.wait(
        lambda: editor.lua(
            "local r = vim.lsp.buf_request_sync(..., 'textDocument/documentLink',"
            " {textDocument = {uri = vim.uri_from_bufnr(...)}}, 10000) or {}"
            " for _, x in pairs(r) do if x.result and #x.result > 0 then return x.result end end return nil",
            bufnr,
        ),
        what="the comment's link",
    )
    assert [l["target"] for l in links] == [(editor.workspace / FAILING_CASE).as_uri()], links


# --- Issue 23: the standard editing features and the defects, in the real client. -------------

HELPERS = [
    "local function half(w)",
    "  return w / 2",
    "end",
    "local h = half(obj.canaryWeight)",
]


def add_helpers(editor: Editor, bufnr: int) -> int:
    """Inserts HELPERS after the script's `local spec` line; returns the 0-based line of the first."""
    at = line_of(editor.workspace / SCRIPT, "local spec") + 1
    editor.lua("vim.api.nvim_buf_set_lines(..., select(2, ...), select(2, ...), false, select(3, ...))", bufnr, at, HELPERS)
    return at


def request_with(editor: Editor, bufnr: int, method: str, params: dict):
    """A synchronous request with `params` (the buffer's textDocument added); the first result."""
    return editor.lua(
        "local bufnr, method, params = ..."
        " params.textDocument = {uri = vim.uri_from_bufnr(bufnr)}"
        " local results = vim.lsp.buf_request_sync(bufnr, method, params, 10000) or {}"
        " for _, r in pairs(results) do if r.result then return r.result end end"
        " return vim.NIL",
        bufnr,
        method,
        params,
    )


def test_lsp_folds_close_the_loop_and_its_branch(editor: Editor):
    """Folding ranges drive Neovim's folds through vim.lsp.foldexpr (0.11+)."""
    path = editor.workspace / SCRIPT
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    editor.nvim.command("setlocal foldmethod=expr foldexpr=v:lua.vim.lsp.foldexpr() foldlevel=99")
    loop = line_of(path, "for _, backend") + 1  # 1-based, as Vim counts
    branch = line_of(path, "if backend.name") + 1
    editor.wait(
        lambda: editor.lua("return vim.fn.foldlevel(...)", branch + 1) == 2,
        what="the loop and the `if` to fold (the server's ranges)",
    )
    editor.nvim.command("normal! zM")
    assert editor.lua("return vim.fn.foldclosed(...)", branch + 1) == loop
    # The loop's `end` stays visible below the closed fold.
    assert editor.lua("return vim.fn.foldclosed(...)", line_of(path, "return obj.data") + 1) == -1


def test_document_highlight_marks_the_write_and_the_reads(editor: Editor):
    path = editor.workspace / SCRIPT
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    line = line_of(path, "local spec")
    editor.nvim.current.window.cursor = (line + 1, len("local s"))
    editor.lua("vim.lsp.buf.document_highlight()")
    marks = editor.wait(
        lambda: editor.lua(
            "local out = {}"
            " for _, m in ipairs(vim.api.nvim_buf_get_extmarks(..., -1, 0, -1, {details = true})) do"
            "   local group = m[4].hl_group"
            "   if type(group) == 'string' and group:find('^LspReference') then out[#out + 1] = {m[2], group} end"
            " end"
            " table.sort(out, function(a, b) return a[1] < b[1] end) return out",
            bufnr,
        ),
        what="the highlighted references",
    )
    assert marks == [[line, "LspReferenceWrite"], [line_of(path, "spec.backends"), "LspReferenceRead"]], marks


def test_selection_range_grows_through_the_chain(editor: Editor):
    path = editor.workspace / SCRIPT
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    line = line_of(path, "local spec = obj.data.spec")
    text = path.read_text().splitlines()[line]
    if editor.lua("return vim.lsp.buf.selection_range ~= nil"):
        # Neovim 0.12: the real command, in visual mode, from the cursor in `data`.
        editor.nvim.current.window.cursor = (line + 1, text.index("data") + 1)

        def selected():
            return editor.lua(
                "if vim.fn.mode() ~= 'v' then return vim.NIL end"
                " return table.concat(vim.fn.getregion(vim.fn.getpos('v'), vim.fn.getpos('.')), '\\n')"
            )

        seen = []
        for _ in range(3):
            before = selected()
            editor.lua("vim.lsp.buf.selection_range(1)")
            seen.append(editor.wait(lambda: (lambda s: s if s and s != before else None)(selected()), what="a wider selection"))
        assert seen == ["data", "obj.data", "obj.data.spec"], seen
        editor.nvim.input("<Esc>")
        return
    # Neovim 0.11 has no command for it: the request, as a plugin would send it.
    result = request_with(
        editor, bufnr, "textDocument/selectionRange", {"positions": [{"line": line, "character": text.index("data") + 1}]}
    )
    texts, node = [], result[0]
    while node:
        r = node["range"]
        if r["start"]["line"] == r["end"]["line"] == line:
            texts.append(text[r["start"]["character"] : r["end"]["character"]])
        node = node.get("parent")
    assert texts[:4] == ["data", "obj.data", "obj.data.spec", "local spec = obj.data.spec"], texts


def test_incoming_calls_fill_the_quickfix_list(editor: Editor):
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    first = add_helpers(editor, bufnr)
    editor.wait_diagnostic(bufnr, "summary")
    editor.nvim.current.window.cursor = (first + 1, len("local function h"))
    editor.lua("vim.lsp.buf.incoming_calls()")
    items = editor.wait(
        lambda: editor.lua(
            "local out = {} for _, i in ipairs(vim.fn.getqflist()) do out[#out + 1] = {i.lnum, i.text} end return out"
        ),
        what="the callers in the quickfix list",
    )
    # The script's top level calls `half` on the helpers' last line.
    assert [lnum for lnum, _ in items] == [first + 4], items
    assert "trafficRouting.lua" in items[0][1], items


def test_kl006_quick_fix_and_disable_comment(editor: Editor):
    path = editor.workspace / SCRIPT
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    editor.lua("vim.api.nvim_buf_set_lines(..., 2, 2, false, {'counter = 1', 'total = 2'})", bufnr)
    editor.wait(lambda: len(editor.wait_diagnostic(bufnr, "KL006")) == 2, what="two KL006 findings")

    def apply(line: int, title: str):
        editor.nvim.current.window.cursor = (line + 1, 0)
        editor.lua(
            "local title = ... vim.lsp.buf.code_action({apply = true,"
            " filter = function(a) return a.title == title end})",
            title,
        )

    apply(2, "Declare `counter` with `local`")
    editor.wait(lambda: editor.buffer_lines(bufnr)[2] == "local counter = 1", what="the declared local")
    apply(3, "Disable KL006 on this line")
    editor.wait(
        lambda: editor.buffer_lines(bufnr)[3:5] == ["-- kruise-lua: disable-next-line KL006", "total = 2"],
        what="the disable comment",
    )
    editor.wait(lambda: not [d for d in editor.diagnostics(bufnr) if d["code"] == "KL006"], what="KL006 to go")
    # Saved, `kruise-lua lint` honours the comment too.
    editor.nvim.command("write")
    import subprocess

    lint = subprocess.run(
        [str(editor.server), "lint", "--format", "json", str(path)], capture_output=True, text=True, check=False
    )
    assert "KL006" not in lint.stdout, lint.stdout
    assert "total" in path.read_text()


def test_document_links_of_a_case_and_a_configmap(editor: Editor):
    """Neovim draws no document links; the request, as `gx`-style plugins send it."""
    case = editor.workspace / FAILING_CASE
    bufnr = editor.edit(FAILING_CASE)
    editor.wait_attached(bufnr)
    editor.wait_diagnostic(bufnr, "step-fails")
    lines = case.read_text().splitlines()
    links = editor.wait(
        lambda: (lambda r: r if r and len(r) >= 5 else None)(request_with(editor, bufnr, "textDocument/documentLink", {})),
        what="the case's links",
    )
    by_line = {link["range"]["start"]["line"]: link["target"] for link in links}
    assert by_line[line_of(case, "expected:")] == (editor.workspace / SCRIPT).as_uri(), by_line
    steps = [i for i, l in enumerate(lines) if l.lstrip().startswith("- traffic:")]
    entries = [i for i, l in enumerate(lines) if l.startswith("- apiVersion") or l.startswith("  - apiVersion")]
    assert by_line[steps[1]].endswith(f"#L{entries[-1] + 1}"), (by_line, entries)
    map_buf = editor.edit(CONFIGMAP)
    editor.wait_attached(map_buf)
    targets = [
        link["target"] for link in editor.wait(
            lambda: request_with(editor, map_buf, "textDocument/documentLink", {}), what="the ConfigMap's links"
        )
    ]
    assert (editor.workspace / SCRIPT).as_uri() in targets, targets


def test_hover_gives_types_of_a_function_and_a_local(editor: Editor):
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    first = add_helpers(editor, bufnr)
    editor.wait_diagnostic(bufnr, "summary")
    hover = editor.request(bufnr, "textDocument/hover", first, len("local function ha"))
    assert "local function half(w) -> number" in hover["contents"]["value"], hover
    hover = editor.request(bufnr, "textDocument/hover", first + 3, len("local h"))
    assert "h: number" in hover["contents"]["value"], hover


def test_parameter_names_show_only_when_turned_on(editor: Editor):
    def parameter_labels(bufnr: int):
        return editor.lua(
            "local out = {}"
            " for _, h in ipairs(vim.lsp.inlay_hint.get({bufnr = ...})) do"
            "   if h.inlay_hint.kind == 2 then out[#out + 1] = {h.inlay_hint.position.line, h.inlay_hint.label} end"
            " end return out",
            bufnr,
        )

    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    first = add_helpers(editor, bufnr)
    editor.lua("vim.lsp.inlay_hint.enable(true, {bufnr = ...})", bufnr)
    editor.wait_diagnostic(bufnr, "summary")
    # Off by default: the call has no `w:` (and hints of other kinds may come).
    editor.wait(
        lambda: editor.lua(
            "local r = vim.lsp.buf_request_sync(..., 'textDocument/inlayHint', {textDocument = {uri = vim.uri_from_bufnr(...)},"
            " range = {start = {line = 0, character = 0}, ['end'] = {line = 40, character = 0}}}, 10000)"
            " return r ~= nil",
            bufnr,
        ),
        what="an inlay hint answer",
    )
    assert parameter_labels(bufnr) == [], parameter_labels(bufnr)
    # The setting turned on (what a settings change sends): the server asks Neovim to fetch the
    # hints again (workspace/inlayHint/refresh), which draws the parameter's name.
    editor.lua(
        "vim.lsp.get_clients({name = 'kruise_lua', bufnr = ...})[1]:notify('workspace/didChangeConfiguration',"
        " {settings = {kruiseLua = {debounceMs = 20, inlayHints = {parameterNames = true}}}})",
        bufnr,
    )
    hints = editor.wait(lambda: parameter_labels(bufnr), what="the parameter name hint")
    assert [first + 3, "w:"] in hints, hints


def test_snippet_completion_expands_a_route_loop(editor: Editor):
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    editor.lua("vim.api.nvim_buf_set_lines(..., 2, 2, false, {'forr'})", bufnr)
    result = editor.request(bufnr, "textDocument/completion", 2, len("forr"))
    items = result["items"] if isinstance(result, dict) else result
    snippet = next(i for i in items if i["label"] == "forroutes")
    assert snippet["insertTextFormat"] == 2, snippet
    body = snippet.get("textEdit", {}).get("newText") or snippet.get("insertText")
    # Neovim's own snippet engine expands it where the word was.
    editor.lua("vim.api.nvim_buf_set_lines(..., 2, 3, false, {''})", bufnr)
    editor.nvim.current.window.cursor = (3, 0)
    editor.nvim.command("startinsert")
    # `startinsert` takes effect once Neovim is back in its loop, and the snippet engine feeds
    # keys to select the first placeholder that depend on the mode it finds: expanding before
    # insert mode began typed them into the buffer (a flake under load).
    editor.wait(lambda: editor.lua("return vim.fn.mode()") == "i", what="insert mode")
    editor.lua("vim.snippet.expand(...)", body)
    expected = "for _, route in ipairs(spec.http or {}) do"
    editor.wait(lambda: editor.buffer_lines(bufnr)[2] == expected, what="the expanded loop")
    lines = editor.buffer_lines(bufnr)
    assert lines[4] == "end", lines
    editor.nvim.input("<Esc>")


def test_dap_configuration_debugs_the_current_script(editor: Editor):
    """Neovim's counterpart of VS Code's Run and Debug provider: nvim-dap's configurations get
    one that debugs a step of the current script (nvim-dap itself is a stand-in, as above)."""
    editor.lua("package.loaded['dap'] = {adapters = {}, configurations = {}, run = function() end}")
    assert editor.lua("return require('kruise_lua.dap').setup()")
    configs = editor.lua(
        "local out = {} for _, c in ipairs(require('dap').configurations.lua or {}) do"
        " out[#out + 1] = {type = c.type, request = c.request, script = c.script, mode = c.mode} end return out"
    )
    assert configs == [{"type": "kruise-lua", "request": "launch", "script": "${file}", "mode": "harness"}], configs


def test_step_value_of_a_field_assignment_is_the_assigned_value(editor: Editor):
    """Defect 4: `backend.weight = …` showed the table (`backend = {…}`), not the weight."""
    script = editor.workspace / SCRIPT
    case_buf = editor.edit(FAILING_CASE)
    editor.wait_attached(case_buf)
    editor.wait_diagnostic(case_buf, "step-fails")
    editor.nvim.command("KruiseLuaShowValues 2")
    script_buf = editor.wait(
        lambda: editor.lua(
            "for _, b in ipairs(vim.api.nvim_list_bufs()) do"
            "  if vim.api.nvim_buf_get_name(b) == ... then return b end"
            " end return false",
            str(script),
        ),
        what="the script's buffer",
    )
    line = line_of(script, "backend.weight = math.max")
    labels = editor.wait(
        lambda: (lambda found: found if line in found else None)(inlay_labels(editor, script_buf)),
        what="the hint of the assignment",
    )
    assert "backend.weight = 40" in labels[line], labels


def test_hover_of_a_broken_script_keeps_the_angle_brackets(editor: Editor):
    """Defect 1: `'<name>' expected` with the script's path, escaped for Markdown."""
    path = editor.workspace / SCRIPT
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    editor.lua("vim.api.nvim_buf_set_lines(..., 2, 2, false, {'local x = obj.', 'local y = 1'})", bufnr)
    case = editor.workspace / FAILING_CASE
    case_buf = editor.edit(FAILING_CASE)
    editor.wait_diagnostic(case_buf, "script-does-not-compile")
    line = line_of(case, 'traffic: "10%"')
    hover = editor.wait(
        lambda: (lambda h: h if h and "expected" in str(h["contents"]) else None)(
            editor.request(case_buf, "textDocument/hover", line, case.read_text().splitlines()[line].index("traffic") + 2)
        ),
        what="the step's hover with the syntax error",
    )
    value = hover["contents"]["value"]
    # Markdown-escaped: an entity Neovim's markdown highlighting conceals as `<` (and VS Code
    # renders as `<`); `<string>` is the script's path (its `_` escaped too).
    assert "'&lt;name&gt;' expected near 'local'" in value, value
    assert f"{path.parent.name}/trafficRouting.lua:4:" in value.replace("\\_", "_"), value
    assert "<string>" not in value and "''" not in value, value


def test_no_diagnostic_is_listed_twice(editor: Editor):
    """Defect 9: a client offered both push and pull got each diagnostic twice."""
    bufnr = editor.edit(SCRIPT)
    editor.wait_attached(bufnr)
    editor.wait_diagnostic(bufnr, "KL007")
    editor.wait_diagnostic(bufnr, "summary")
    seen = [(d["lnum"], d["code"], d["message"]) for d in editor.diagnostics(bufnr)]
    assert len(seen) == len(set(seen)), seen
    namespaces = editor.lua(
        "local out = {} for _, d in ipairs(vim.diagnostic.get(...)) do out[d.namespace] = true end"
        " return vim.tbl_count(out)",
        bufnr,
    )
    assert namespaces == 1, namespaces


def test_formatting_a_library_script_changes_nothing(editor: Editor, tmp_path: pathlib.Path):
    """Defect 13: the library ships the stylua.toml it is written in."""
    library = tmp_path / "library" / "lua_configuration"
    shutil.copytree(REPO / "lua_configuration", library)
    script = library / "kuma.io" / "MeshHTTPRoute" / "trafficRouting.lua"
    editor.nvim.command(f"edit {script}")
    bufnr = editor.nvim.current.buffer.number
    editor.wait_attached(bufnr)
    original = editor.buffer_lines(bufnr)
    # One line spaced out of shape: formatting puts it back and changes nothing else.
    at = next(i for i, l in enumerate(original) if l.startswith("local ") and " = " in l)
    editor.lua(
        "vim.api.nvim_buf_set_lines(..., select(2, ...), select(2, ...) + 1, false, {select(3, ...)})",
        bufnr,
        at,
        original[at].replace(" = ", "   =   ", 1),
    )
    editor.lua("vim.lsp.buf.format({bufnr = ..., timeout_ms = 20000})", bufnr)
    assert editor.buffer_lines(bufnr) == original
