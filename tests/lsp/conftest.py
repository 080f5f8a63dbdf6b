"""End-to-end fixtures: the real `kruise-lua lsp` binary over stdio, driven by pytest-lsp with
the capability sets of VS Code and Neovim, on a fresh copy of the fixture workspace."""

import asyncio
import os
import pathlib
import shutil

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

HERE = pathlib.Path(__file__).parent
# The binary run.sh builds: $KRUISE_LUA_BIN, else the debug build in $CARGO_TARGET_DIR or target/.
SERVER = os.environ.get(
    "KRUISE_LUA_BIN",
    str(
        (HERE.parent.parent / os.environ.get("CARGO_TARGET_DIR", "target"))
        / "debug"
        / "kruise-lua"
    ),
)
CLIENTS = ["visual-studio-code", "neovim"]


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "ws"
    shutil.copytree(HERE / "fixtures" / "workspace", root)
    return root


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=[SERVER, "lsp"]),
    params=CLIENTS,
)
async def client(request, lsp_client: LanguageClient, workspace: pathlib.Path):
    applied: list = []

    @lsp_client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams):
        applied.append(params.edit)
        return types.ApplyWorkspaceEditResult(applied=True)

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def code_lens_refresh(params):
        return None

    @lsp_client.feature(types.WORKSPACE_INLAY_HINT_REFRESH)
    def inlay_hint_refresh(params):
        return None

    lsp_client.applied_edits = applied
    lsp_client.workspace_root = workspace
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities(request.param),
            root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
        )
    )
    yield
    await lsp_client.shutdown_session()


async def wait_for(predicate, timeout: float = 10.0, what: str = "condition"):
    """Polls `predicate` until it returns something truthy."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


def diagnostics_of(client: LanguageClient, path: pathlib.Path):
    return client.diagnostics.get(path.as_uri(), None)


def codes(diagnostics) -> list:
    return [d.code for d in diagnostics or []]


def open_file(client: LanguageClient, path: pathlib.Path, text: str | None = None, language: str | None = None):
    if text is None:
        text = path.read_text()
    language = language or ("lua" if path.suffix == ".lua" else "yaml")
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=path.as_uri(), language_id=language, version=1, text=text
            )
        )
    )


def change(client: LanguageClient, path: pathlib.Path, start: types.Position, end: types.Position, text: str, version: int):
    """Sends an incremental change replacing the range `start`..`end` by `text`."""
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=version),
            content_changes=[
                types.TextDocumentContentChangePartial(range=types.Range(start=start, end=end), text=text)
            ],
        )
    )


def replace_all(client: LanguageClient, path: pathlib.Path, old_text: str, new_text: str, version: int):
    """Sends an incremental change replacing the whole of `old_text` by `new_text`."""
    lines = old_text.split("\n")
    end = types.Position(line=len(lines) - 1, character=len(lines[-1]))
    change(client, path, types.Position(line=0, character=0), end, new_text, version)


def edit(client: LanguageClient, path: pathlib.Path, line: int, start: int, end: int, text: str, version: int):
    change(client, path, types.Position(line=line, character=start), types.Position(line=line, character=end), text, version)


async def completion_labels(client: LanguageClient, path: pathlib.Path, line: int, character: int) -> set:
    """The labels of the completion items at a position (a list or a CompletionList)."""
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=path.as_uri()),
            position=types.Position(line=line, character=character),
        )
    )
    return {item.label for item in (result.items if hasattr(result, "items") else result)}
