"""CRD schemas in the language server (issue 11): a CRD written into the workspace's
`lua_configuration/crds/` is loaded (and reloaded) by the server; a step whose output and
expectation break it gets a schema diagnostic on the field and counts as invalid in the
script's summary; `obj.data.spec` completion offers the schema's fields with the CRD's
description; KL014 flags a field the CRD does not declare."""

import pathlib

from lsprotocol import types
from pytest_lsp import LanguageClient

from conftest import diagnostics_of, open_file, wait_for

ROUTE = pathlib.Path("lua_configuration/example.io/Route")

# A CRD of our own for the fixture's made-up Route: weights in steps of 20 only, so the
# fixture's 50% step is one the API server would reject.
ROUTE_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: routes.example.io}
spec:
  group: example.io
  names: {kind: Route, plural: routes}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                host: {type: string, description: The host name clients use.}
                routes:
                  type: array
                  items:
                    type: object
                    properties:
                      service: {type: string, description: The Service that gets this share.}
                      weight:
                        type: integer
                        multipleOf: 20
                        description: Share of the traffic, in percent.
"""


def schema_diagnostics(client: LanguageClient, path: pathlib.Path):
    return [d for d in diagnostics_of(client, path) or [] if d.code == "schema"]


async def test_schema_diagnostic_completion_and_lint_from_a_crd(client: LanguageClient):
    folder = client.workspace_root / ROUTE
    script = folder / "trafficRouting.lua"
    case = folder / "testdata" / "weights.yaml"
    await wait_for(lambda: diagnostics_of(client, script), what="first run")
    assert not schema_diagnostics(client, case)

    crds = client.workspace_root / "lua_configuration" / "crds"
    crds.mkdir()
    (crds / "route.yaml").write_text(ROUTE_CRD)

    found = await wait_for(lambda: schema_diagnostics(client, case), what="schema diagnostic")
    lines = case.read_text().split("\n")
    assert len(found) == 1, found
    assert found[0].severity == types.DiagnosticSeverity.Error
    assert found[0].range.start.line == lines.index("      weight: 50"), found[0]
    assert "step 2: output and expected[1] spec.routes[1].weight: 50 must be a multiple of 20 (multipleOf)" in found[0].message, found[0].message
    summary = await wait_for(
        lambda: [d for d in diagnostics_of(client, script) or [] if d.code == "summary" and "invalid" in d.message],
        what="summary counting the invalid case",
    )
    assert "1 invalid" in summary[0].message, summary[0].message

    # Completion below obj.data.spec from the schema, with the CRD's description.
    text = "local spec = obj.data.spec\nlocal r = spec.routes[1].\nreturn obj.data\n"
    open_file(client, script, text)
    result = await client.text_document_completion_async(
        types.CompletionParams(
            text_document=types.TextDocumentIdentifier(uri=script.as_uri()),
            position=types.Position(line=1, character=len("local r = spec.routes[1].")),
        )
    )
    items = {item.label: item for item in (result.items if hasattr(result, "items") else result)}
    assert {"service", "weight"} <= set(items), list(items)
    weight = items["weight"]
    assert weight.detail == "integer", weight
    docs = weight.documentation.value if hasattr(weight.documentation, "value") else weight.documentation
    assert "Share of the traffic, in percent." in docs, docs

    # A field the CRD does not declare: KL014, a warning with the suggestion.
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=script.as_uri(), version=2),
            content_changes=[
                types.TextDocumentContentChangeWholeDocument(
                    text="local spec = obj.data.spec\nspec.routes[1].wieght = obj.canaryWeight\nreturn obj.data\n"
                )
            ],
        )
    )
    kl014 = await wait_for(
        lambda: [d for d in diagnostics_of(client, script) or [] if d.code == "KL014"],
        what="KL014",
    )
    assert kl014[0].severity == types.DiagnosticSeverity.Warning
    assert "did you mean `weight`?" in kl014[0].message, kl014[0].message
