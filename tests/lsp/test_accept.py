"""End-to-end tests of `kruise-lua.acceptExpected`: nothing the user wrote is ever lost or
damaged (issue 15, section 3)."""

import copy
import pathlib

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from conftest import SERVER, diagnostics_of, open_file, wait_for

CASE = pathlib.Path("lua_configuration/example.io/Route/testdata/wrong_weight.yaml")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[SERVER, "lsp"]))
async def plain_client(lsp_client: LanguageClient, workspace: pathlib.Path):
    """A client that cannot apply workspace edits (no `workspace.applyEdit`)."""
    capabilities = copy.deepcopy(client_capabilities("visual-studio-code"))
    capabilities.workspace.apply_edit = False

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def code_lens_refresh(params):
        return None

    lsp_client.workspace_root = workspace
    await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=workspace.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
        )
    )
    yield
    await lsp_client.shutdown_session()


async def failing(client: LanguageClient, case: pathlib.Path):
    await wait_for(
        lambda: [d for d in diagnostics_of(client, case) or [] if d.code == "step-fails"],
        what="the failing step",
    )


def accept(client: LanguageClient, case: pathlib.Path, **extra):
    return client.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="kruise-lua.acceptExpected", arguments=[{"uri": case.as_uri(), **extra}]
        )
    )


async def test_an_external_change_is_never_overwritten(plain_client: LanguageClient):
    case = plain_client.workspace_root / CASE
    await failing(plain_client, case)
    text = case.read_text()
    open_file(plain_client, case, text)
    # Changed on disk behind the editor's back: the buffer is stale.
    external = text + "# added outside the editor\n"
    case.write_text(external)
    with pytest.raises(JsonRpcException, match="differs from the open buffer"):
        await accept(plain_client, case)
    assert case.read_text() == external


async def test_without_apply_edit_the_disk_is_written_when_it_holds_the_buffer(
    plain_client: LanguageClient,
):
    case = plain_client.workspace_root / CASE
    await failing(plain_client, case)
    text = case.read_text()
    open_file(plain_client, case, text)
    result = await accept(plain_client, case, step=1)
    assert result["written"] and result["steps"] == 1
    after = case.read_text()
    # One value changed, one line.
    changed = [(a, b) for a, b in zip(text.split("\n"), after.split("\n")) if a != b]
    assert changed == [("      weight: 45", "      weight: 50")], changed


async def test_the_edit_carries_the_document_version(client: LanguageClient):
    case = client.workspace_root / CASE
    await failing(client, case)
    open_file(client, case, case.read_text())
    result = await accept(client, case, step=1)
    assert result == {"applied": True, "steps": 1}
    edit = client.applied_edits[-1]
    versioned = client.capabilities.workspace.workspace_edit.document_changes
    if versioned:
        # The client refuses the edit if the buffer moved on from the version it was made for.
        document = edit.document_changes[0]
        assert document.text_document.uri == case.as_uri()
        assert document.text_document.version == 1
        edits = document.edits
    else:
        edits = edit.changes[case.as_uri()]
    assert [e.new_text for e in edits] == ["50"]


@pytest.mark.parametrize("step", ["1", -1, 1.0, True])
async def test_a_step_that_is_not_an_index_is_refused(client: LanguageClient, step):
    case = client.workspace_root / CASE
    await failing(client, case)
    before = case.read_bytes()
    with pytest.raises(JsonRpcException, match="must be a step index"):
        await accept(client, case, step=step)
    with pytest.raises(JsonRpcException, match="no step 7"):
        await accept(client, case, step=7)
    assert case.read_bytes() == before


async def test_a_latin1_case_is_left_as_it_is(client: LanguageClient):
    case = client.workspace_root / CASE
    latin1 = case.read_bytes().replace(b"# Fixture:", b"# Caf\xe9 fixture:")
    case.write_bytes(latin1)
    # A case error, as `check` reads it (it ran, lossily, before), and nothing to rewrite.
    await wait_for(
        lambda: [d for d in diagnostics_of(client, case) or [] if "not valid UTF-8" in d.message],
        what="the case error",
    )
    with pytest.raises(JsonRpcException, match="not valid UTF-8"):
        await accept(client, case)
    assert case.read_bytes() == latin1


async def test_a_symlinked_case_is_written_through_the_link(client: LanguageClient):
    case = client.workspace_root / CASE
    elsewhere = client.workspace_root / "shared-cases" / "wrong_weight.yaml"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(case.read_bytes())
    elsewhere.chmod(0o640)
    case.unlink()
    case.symlink_to(elsewhere)
    await failing(client, case)
    result = await accept(client, case, step=1)
    assert result["written"]
    assert case.is_symlink()
    assert "weight: 50" in elsewhere.read_text() and "weight: 45" not in elsewhere.read_text()
    assert elsewhere.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in elsewhere.parent.iterdir()) == ["wrong_weight.yaml"]
