// The bundled extension (dist/extension.js) activated against a stub of the `vscode` module
// (./vscode-stub):
// the commands it registers match package.json, and a missing server binary gives the install
// message instead of an exception. Also checks package.json against the source.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

import { ROOT, extensionContext, loadExtension, newRecorded, stubVscode } from "./vscode-stub";

const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
const source = fs.readFileSync(path.join(ROOT, "src", "extension.ts"), "utf8");

describe("activation with a stubbed VS Code", () => {
  it("registers the contributed commands and explains a missing binary", async () => {
    const recorded = newRecorded();
    const stub = stubVscode({ "kruiseLua.server.path": "/nonexistent/kruise-lua" }, "/nonexistent-ws", recorded);
    const extension = loadExtension(stub);
    const context = extensionContext();
    await extension.activate(context);
    const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual([...recorded.commands.keys()].sort(), contributed);
    assert.equal(recorded.errors.length, 1, recorded.errors.join("\n"));
    assert.match(recorded.errors[0], /cargo install --locked --path server/);
    assert.match(recorded.errors[0], /\/nonexistent\/kruise-lua/);
    await extension.deactivate();
  });
});

describe("debugging", () => {
  it("starts a debug session from the lens and runs `kruise-lua dap`", async () => {
    const recorded = newRecorded();
    // Any executable stands in for the binary: the factory only resolves it.
    const stub = stubVscode({ "kruiseLua.server.path": process.execPath }, "/nonexistent-ws", recorded);
    // No scripts in the workspace: the language server is not started (the stand-in binary
    // is no server); debugging needs none.
    (stub as any).workspace.findFiles = async () => [];
    const extension = loadExtension(stub);
    await extension.activate(extensionContext());
    const lens = { script: "/ws/Route/trafficRouting.lua", case: "/ws/Route/testdata/a.yaml", step: 2, mode: "production" };
    await recorded.commands.get("kruise-lua.debugStep")!(lens);
    assert.deepEqual(recorded.debugStarts, [
      {
        type: "kruise-lua",
        request: "launch",
        name: "Debug step 2 of a.yaml",
        script: lens.script,
        case: lens.case,
        step: 2,
        mode: "production",
      },
    ]);
    await recorded.commands.get("kruise-lua.debugStep")!({ script: "x.lua" });
    assert.equal(recorded.debugStarts.length, 1);
    assert.match(recorded.errors.at(-1)!, /needs a script and a case/);
    const adapter = (await recorded.debugAdapters.get("kruise-lua")!.createDebugAdapterDescriptor()) as {
      command: string;
      args: string[];
    };
    assert.deepEqual([adapter.command, adapter.args], [process.execPath, ["dap"]]);
    await extension.deactivate();
  });
});

describe("Run and Debug without a launch.json", () => {
  it("debugs step 1 of the case open, or of the script's first case", async () => {
    const recorded = newRecorded();
    const stub = stubVscode({ "kruiseLua.server.path": process.execPath }, "/nonexistent-ws", recorded);
    const route = "/ws/lua_configuration/example.io/Route";
    // The workspace-wide search (start the server?) finds nothing: the stand-in binary is no
    // server. The search in a script's testdata folder finds its cases.
    (stub as any).workspace.findFiles = async (pattern: unknown) =>
      typeof pattern === "string"
        ? []
        : [(stub as any).Uri.file(`${route}/testdata/b.yaml`), (stub as any).Uri.file(`${route}/testdata/a.yaml`)];
    (stub as any).RelativePattern = class {
      constructor(
        readonly base: unknown,
        readonly pattern: string,
      ) {}
    };
    const extension = loadExtension(stub);
    await extension.activate(extensionContext());
    const [provider] = recorded.debugConfigurationProviders.get("kruise-lua") ?? [];
    assert.ok(provider, "a debug configuration provider for kruise-lua");
    const active = (file: string) => {
      (stub as any).window.activeTextEditor = { document: { uri: (stub as any).Uri.file(file) } };
    };
    active(`${route}/testdata/c.yaml`);
    const fromCase = await provider.resolveDebugConfiguration(undefined, {});
    assert.deepEqual(
      [fromCase.script, fromCase.case, fromCase.step],
      [`${route}/trafficRouting.lua`, `${route}/testdata/c.yaml`, 1],
    );
    active(`${route}/trafficRouting.lua`);
    const fromScript = await provider.resolveDebugConfiguration(undefined, {});
    assert.equal(fromScript.case, `${route}/testdata/a.yaml`, "the first case by name");
    assert.deepEqual(await provider.provideDebugConfigurations(undefined), [fromScript]);
    // A launch configuration of its own is left as written.
    const own = { type: "kruise-lua", request: "launch", name: "mine", script: "/x.lua", case: "/y.yaml" };
    assert.equal(await provider.resolveDebugConfiguration(undefined, own), own);
    active("/ws/README.md");
    assert.equal(await provider.resolveDebugConfiguration(undefined, {}), undefined);
    assert.match(recorded.errors.at(-1)!, /open a traffic-routing script/);
    assert.ok(recorded.contentProviders.has("kruise-lua"), "the obj documents' scheme");
    await extension.deactivate();
  });
});

describe("package.json", () => {
  it("contributes the kruise-lua debugger with its launch attributes and snippets", () => {
    const debuggers = manifest.contributes.debuggers;
    assert.equal(debuggers.length, 1);
    assert.equal(debuggers[0].type, "kruise-lua");
    const launch = debuggers[0].configurationAttributes.launch;
    assert.deepEqual(launch.required, ["script", "case"]);
    for (const attribute of ["script", "case", "step", "mode", "stopOnEntry"]) {
      assert.ok(attribute in launch.properties, attribute);
    }
    assert.equal(debuggers[0].initialConfigurations[0].type, "kruise-lua");
    assert.equal(debuggers[0].configurationSnippets[0].body.type, "kruise-lua");
    assert.ok(manifest.activationEvents.includes("onDebugResolve:kruise-lua"));
    assert.ok(manifest.activationEvents.includes("onDebugDynamicConfigurations:kruise-lua"));
    assert.deepEqual(manifest.contributes.breakpoints, [{ language: "lua" }]);
  });

  it("declares every setting the extension reads", () => {
    const declared = new Set(Object.keys(manifest.contributes.configuration.properties));
    const read = new Set<string>();
    for (const m of source.matchAll(/config\.get(?:<[^>]+>)?\("([\w.]+)"\)/g)) {
      read.add(`kruiseLua.${m[1]}`);
    }
    assert.ok(read.size >= 5, [...read].join(", "));
    for (const key of read) {
      assert.ok(declared.has(key), `${key} is read but not declared`);
    }
    // The trace setting is read by vscode-languageclient from the client id.
    assert.ok(declared.has("kruiseLua.trace.server"));
    assert.match(source, /const CLIENT_ID = "kruiseLua";/);
  });

  it("packages the bundle only, with the metadata vsce needs", () => {
    assert.equal(manifest.main, "./dist/extension.js");
    assert.ok(manifest.publisher && manifest.license && manifest.engines.vscode);
    assert.match(manifest.scripts.package, /--no-dependencies/);
    const ignore = fs.readFileSync(path.join(ROOT, ".vscodeignore"), "utf8");
    assert.match(ignore, /!dist\/extension\.js/);
  });
});
