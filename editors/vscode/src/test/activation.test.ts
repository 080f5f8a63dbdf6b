// The bundled extension (dist/extension.js) activated against a stub of the `vscode` module:
// the commands it registers match package.json, and a missing server binary gives the install
// message instead of an exception. Also checks package.json against the source.

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const Module = require("node:module");

const ROOT = path.resolve(__dirname, "..", "..");
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8"));
const source = fs.readFileSync(path.join(ROOT, "src", "extension.ts"), "utf8");

interface Recorded {
  commands: string[];
  errors: string[];
  outputs: string[];
}

/** A `vscode` module good enough to load vscode-languageclient and run `activate`. */
function stubVscode(settings: Record<string, unknown>, recorded: Recorded) {
  const disposable = { dispose() {} };
  const event = () => disposable;
  // Anything not modelled is a class/function whose results are inert.
  const inert: any = new Proxy(function () {}, {
    get: (_t, prop) => (prop === "then" ? undefined : inert),
    apply: () => inert,
    construct: () => inert,
  });
  const namespace = (members: Record<string, unknown>) =>
    new Proxy(members, {
      get: (target, prop) => (prop in target ? (target as any)[prop] : prop === "then" ? undefined : inert),
    });
  const stub = {
    workspace: namespace({
      getConfiguration: (section: string) => ({
        get: (key: string, fallback?: unknown) => {
          const full = `${section}.${key}`;
          return full in settings ? settings[full] : fallback;
        },
      }),
      workspaceFolders: [{ uri: { fsPath: "/nonexistent-ws", scheme: "file" }, name: "ws", index: 0 }],
      textDocuments: [],
      findFiles: async () => [{ fsPath: "/nonexistent-ws/lua_configuration/a.io/K/trafficRouting.lua" }],
      onDidOpenTextDocument: event,
      onDidChangeConfiguration: event,
      onDidCloseTextDocument: event,
      onDidChangeTextDocument: event,
      onDidSaveTextDocument: event,
    }),
    window: namespace({
      createOutputChannel: () => ({ appendLine: (s: string) => recorded.outputs.push(s), show() {}, dispose() {} }),
      createStatusBarItem: () => ({ show() {}, hide() {}, dispose() {} }),
      showErrorMessage: async (message: string) => {
        recorded.errors.push(message);
        return undefined;
      },
      showWarningMessage: async () => undefined,
      showInformationMessage: async () => undefined,
    }),
    commands: namespace({
      registerCommand: (id: string) => {
        recorded.commands.push(id);
        return disposable;
      },
    }),
    languages: namespace({ onDidChangeDiagnostics: event, getDiagnostics: () => [] }),
    StatusBarAlignment: { Left: 1, Right: 2 },
    ViewColumn: { Beside: -2 },
  };
  return namespace(stub);
}

function loadExtension(settings: Record<string, unknown>, recorded: Recorded) {
  const bundle = path.join(ROOT, "dist", "extension.js");
  assert.ok(fs.existsSync(bundle), "dist/extension.js is missing: run `npm run build` first");
  const vscode = stubVscode(settings, recorded);
  const originalLoad = Module._load;
  Module._load = function (request: string, ...rest: unknown[]) {
    if (request === "vscode") {
      return vscode;
    }
    return originalLoad.call(this, request, ...rest);
  };
  try {
    delete require.cache[bundle];
    return require(bundle);
  } finally {
    Module._load = originalLoad;
  }
}

describe("activation with a stubbed VS Code", () => {
  it("registers the contributed commands and explains a missing binary", async () => {
    const recorded: Recorded = { commands: [], errors: [], outputs: [] };
    const extension = loadExtension({ "kruiseLua.server.path": "/nonexistent/kruise-lua" }, recorded);
    const context = { subscriptions: [] as unknown[] };
    await extension.activate(context);
    const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual([...recorded.commands].sort(), contributed);
    assert.equal(recorded.errors.length, 1, recorded.errors.join("\n"));
    assert.match(recorded.errors[0], /cargo install --locked --path server/);
    assert.match(recorded.errors[0], /\/nonexistent\/kruise-lua/);
    await extension.deactivate();
  });
});

describe("package.json", () => {
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
