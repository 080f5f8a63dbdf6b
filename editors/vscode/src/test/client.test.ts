// The bundled extension with the real `kruise-lua lsp` (through vscode-languageclient, with a
// stubbed `vscode` module): run all, the status bar, show obj, accept. Needs the binary:
// $KRUISE_LUA_BIN or the debug build in $CARGO_TARGET_DIR or the workspace's target/ (test.sh builds it).

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";

import { ROOT, editorOn, extensionContext, loadExtension, newRecorded, stubVscode } from "./vscode-stub";

const REPO = path.resolve(ROOT, "..", "..");
const SERVER =
  process.env.KRUISE_LUA_BIN ?? path.join(path.resolve(REPO, process.env.CARGO_TARGET_DIR ?? "target"), "debug", "kruise-lua");
const FIXTURE = path.join(REPO, "tests", "nvim", "fixtures", "workspace");

async function waitFor<T>(what: string, f: () => T | undefined | false, timeoutMs = 15000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = f();
    if (value) {
      return value;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function lineOf(file: string, text: string): number {
  const line = fs.readFileSync(file, "utf8").split("\n").findIndex((l) => l.includes(text));
  assert.ok(line >= 0, `${text} not in ${file}`);
  return line;
}

describe("with the real server", { skip: fs.existsSync(SERVER) ? false : `no server binary at ${SERVER}` }, () => {
  it("runs all, counts in the status bar, shows obj and accepts a step", async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), "kruise-lua-vscode-"));
    fs.cpSync(FIXTURE, ws, { recursive: true });
    const root = path.join(ws, "lua_configuration");
    const caseFile = path.join(root, "gateway.example.io", "Gateway", "testdata", "wrong_weight.yaml");
    const recorded = newRecorded();
    const stub: any = stubVscode({ "kruiseLua.server.path": SERVER, "kruiseLua.debounceMs": 20 }, root, recorded);
    const extension = loadExtension(stub);
    try {
      await extension.activate(extensionContext());
      assert.deepEqual(recorded.errors, []);
      // The server's own commands are registered by the client once it runs.
      assert.ok(recorded.commands.has("kruise-lua.objAsLua"), [...recorded.commands.keys()].join(", "));

      await recorded.commands.get("kruiseLua.runAll")!();
      assert.equal(recorded.status.at(-1), "$(error) kruise-lua 1/2 cases, 3/4 steps");

      // Diagnostics of the run, on the failing case.
      const caseUri = `file://${caseFile}`;
      const fails = await waitFor("the step-fails diagnostic", () =>
        recorded.diagnostics.get(caseUri)?.filter((d) => d.code === "step-fails"),
      );
      assert.equal(fails.length, 1);
      assert.equal(fails[0].source, "kruise-lua");

      // Show obj of step 2 (cursor on its expected entry).
      stub.window.activeTextEditor = editorOn(caseFile, lineOf(caseFile, "weight: 35"));
      await recorded.commands.get("kruiseLua.showObj")!();
      const obj = recorded.opened.at(-1);
      assert.equal(obj?.language, "lua");
      assert.match(obj!.content, /canaryWeight = 40/);
      // Issue 23, defect 11: the same step again is the same read-only document, not a new one.
      assert.equal(obj?.uri?.scheme, "kruise-lua");
      await recorded.commands.get("kruiseLua.showObj")!();
      assert.equal(recorded.opened.at(-1)?.uri?.toString(), obj?.uri?.toString());

      // Accept: the case is not open on the server, so it writes the file; the case reruns.
      await recorded.commands.get("kruiseLua.acceptStep")!();
      assert.ok(recorded.infos.some((m) => /accepted the actual output of 1 step/.test(m)), recorded.infos.join("\n"));
      assert.match(fs.readFileSync(caseFile, "utf8"), /weight: 40/);
      await waitFor("the failure to clear", () => !recorded.diagnostics.get(caseUri)?.some((d) => d.code === "step-fails"));
      await waitFor("the status bar to show 2 cases, 4 steps", () => recorded.status.at(-1) === "$(pass) kruise-lua 2 cases, 4 steps");
    } finally {
      await extension.deactivate();
      fs.rmSync(ws, { recursive: true, force: true });
    }
  });

  it("starts the binary bundled in the package when the setting is left at its default, and says so", async () => {
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), "kruise-lua-vscode-"));
    fs.cpSync(FIXTURE, ws, { recursive: true });
    const root = path.join(ws, "lua_configuration");
    // A platform-specific package's layout: <extension>/server/kruise-lua.
    const extensionDir = fs.mkdtempSync(path.join(os.tmpdir(), "kruise-lua-extension-"));
    fs.mkdirSync(path.join(extensionDir, "server"));
    const bundled = path.join(extensionDir, "server", "kruise-lua");
    fs.symlinkSync(SERVER, bundled);
    const recorded = newRecorded();
    const stub: any = stubVscode({ "kruiseLua.debounceMs": 20 }, root, recorded);
    const extension = loadExtension(stub);
    // Nothing on PATH: the bundled binary is the only one.
    const savedPath = process.env.PATH;
    process.env.PATH = "";
    try {
      await extension.activate(extensionContext(extensionDir));
      assert.deepEqual(recorded.errors, []);
      assert.ok(
        recorded.outputs.includes(`using kruise-lua bundled with the extension: ${bundled}`),
        recorded.outputs.join("\n"),
      );
      await recorded.commands.get("kruiseLua.runAll")!();
      assert.equal(recorded.status.at(-1), "$(error) kruise-lua 1/2 cases, 3/4 steps");
    } finally {
      process.env.PATH = savedPath;
      await extension.deactivate();
      fs.rmSync(ws, { recursive: true, force: true });
      fs.rmSync(extensionDir, { recursive: true, force: true });
    }
  });
});
