// Unit tests of the extension's decisions, under node's test runner (no VS Code needed).

import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";

import * as logic from "../logic";

/** `exists` over a fixed set of files. */
function filesAt(...files: string[]): (file: string) => boolean {
  const set = new Set(files.map((f) => path.normalize(f)));
  return (file) => set.has(path.normalize(file));
}

const ROUTE = "/ws/lua_configuration/example.io/Route";
const CONFIGMAP = [
  "apiVersion: v1",
  "kind: ConfigMap",
  "metadata:",
  "  name: kruise-rollout-configuration",
  "data:",
  "  lua.traffic.routing.Route.example.io: |",
  "    return obj.data",
  "",
].join("\n");

describe("classify", () => {
  const exists = filesAt(`${ROUTE}/trafficRouting.lua`, "/ws/lua_configuration/trafficrouting_ingress/demo.lua");

  it("knows scripts by name, tree and ingress folder", () => {
    assert.equal(logic.classify(`${ROUTE}/trafficRouting.lua`, undefined, exists), "script");
    assert.equal(logic.classify("/elsewhere/a/b/trafficRouting.lua", undefined, exists), "script");
    assert.equal(logic.classify("/ws/lua_configuration/helpers/util.lua", undefined, exists), "script");
    assert.equal(logic.classify("/x/trafficrouting_ingress/nginx.lua", undefined, exists), "script");
  });

  it("leaves other Lua files to other extensions", () => {
    assert.equal(logic.classify("/home/me/.config/nvim/init.lua", undefined, exists), "other");
    assert.equal(logic.classify("/ws/plugin/lua_configuration.lua", undefined, exists), "other");
    assert.equal(logic.classify("/x/trafficrouting_ingress/sub/nginx.lua", undefined, exists), "other");
  });

  it("knows test cases next to an existing script", () => {
    assert.equal(logic.classify(`${ROUTE}/testdata/weights.yaml`, undefined, exists), "testdata");
    assert.equal(logic.classify(`${ROUTE}/testdata/deeper/weights.yml`, undefined, exists), "testdata");
    assert.equal(
      logic.classify("/ws/lua_configuration/trafficrouting_ingress/testdata/demo/a.yaml", undefined, exists),
      "testdata",
    );
  });

  it("does not take testdata of scripts that are not there", () => {
    assert.equal(logic.classify("/go/pkg/testdata/fixture.yaml", "a: 1\n", exists), "other");
    assert.equal(
      logic.classify("/ws/lua_configuration/trafficrouting_ingress/testdata/nginx/a.yaml", undefined, exists),
      "other",
    );
    // A YAML file directly in the ingress testdata folder names no class.
    assert.equal(
      logic.classify("/ws/lua_configuration/trafficrouting_ingress/testdata/demo.yaml", undefined, exists),
      "other",
    );
  });

  it("recognises ConfigMaps with scripts by their text only", () => {
    assert.equal(logic.classify("/ws/deploy/rollout-config.yaml", CONFIGMAP, exists), "configmap");
    assert.equal(logic.classify("/ws/deploy/rollout-config.yaml", undefined, exists), "other");
    const plain = CONFIGMAP.replace("lua.traffic.routing.Route.example.io", "config.json");
    assert.equal(logic.classify("/ws/deploy/other.yaml", plain, exists), "other");
    const deployment = CONFIGMAP.replace("kind: ConfigMap", "kind: Deployment");
    assert.equal(logic.classify("/ws/deploy/other.yaml", deployment, exists), "other");
    assert.equal(logic.classify("/ws/deploy/notes.txt", CONFIGMAP, exists), "other");
  });

  it("finds cases on a real file system", () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "kruise-lua-classify-"));
    try {
      const dir = path.join(root, "lua_configuration", "g.io", "K");
      fs.mkdirSync(path.join(dir, "testdata"), { recursive: true });
      const caseFile = path.join(dir, "testdata", "c.yaml");
      assert.equal(logic.classify(caseFile, ""), "other");
      fs.writeFileSync(path.join(dir, "trafficRouting.lua"), "return obj.data\n");
      assert.equal(logic.classify(caseFile, ""), "testdata");
      assert.equal(logic.caseOwner(caseFile), path.join(dir, "trafficRouting.lua"));
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("holdsScriptTree (start the server without a workspace-wide search)", () => {
  const dirs = (...present: string[]) => (dir: string) => present.includes(dir);

  it("finds lua_configuration or trafficrouting_ingress at the folder's top, or the folder itself", () => {
    assert.equal(logic.holdsScriptTree("/repo", dirs("/repo/lua_configuration")), true);
    assert.equal(logic.holdsScriptTree("/repo", dirs("/repo/trafficrouting_ingress")), true);
    assert.equal(logic.holdsScriptTree("/repo/lua_configuration", dirs("/repo/lua_configuration")), true);
  });

  it("says no when neither is there (the file search decides then)", () => {
    assert.equal(logic.holdsScriptTree("/repo", dirs("/repo/src", "/repo/deep/lua_configuration")), false);
    assert.equal(logic.holdsScriptTree("/repo/lua_configuration", dirs()), false);
  });
});

describe("resolveServerPath", () => {
  const env = (overrides: Partial<logic.ResolveEnv>, executables: string[]): logic.ResolveEnv => ({
    pathVariable: "/usr/local/bin:/usr/bin",
    platform: "linux",
    home: "/home/me",
    workspaceFolder: "/ws",
    isExecutable: filesAt(...executables),
    ...overrides,
  });

  it("looks a bare name up on PATH, in order", () => {
    const r = logic.resolveServerPath("kruise-lua", env({}, ["/usr/bin/kruise-lua", "/home/me/.cargo/bin/kruise-lua"]));
    assert.deepEqual(r, { ok: true, command: "/usr/bin/kruise-lua", source: "PATH" });
  });

  it("falls back to ~/.cargo/bin, where cargo install puts it", () => {
    const r = logic.resolveServerPath(undefined, env({ pathVariable: "/usr/bin" }, ["/home/me/.cargo/bin/kruise-lua"]));
    assert.deepEqual(r, { ok: true, command: "/home/me/.cargo/bin/kruise-lua", source: "~/.cargo/bin" });
  });

  it("looks in order at the setting, the bundled binary, PATH, then ~/.cargo/bin", () => {
    const bundled = "/ext/server/kruise-lua";
    const all = ["/opt/kl", bundled, "/usr/bin/kruise-lua", "/home/me/.cargo/bin/kruise-lua"];
    assert.deepEqual(logic.resolveServerPath("/opt/kl", env({ bundled }, all)), {
      ok: true,
      command: "/opt/kl",
      source: "setting",
    });
    for (const setting of [undefined, "", "  ", "kruise-lua"]) {
      assert.deepEqual(logic.resolveServerPath(setting, env({ bundled }, all.slice(1))), {
        ok: true,
        command: bundled,
        source: "bundled",
      });
    }
    assert.deepEqual(logic.resolveServerPath(undefined, env({ bundled }, all.slice(2))), {
      ok: true,
      command: "/usr/bin/kruise-lua",
      source: "PATH",
    });
    assert.deepEqual(logic.resolveServerPath(undefined, env({ bundled }, all.slice(3))), {
      ok: true,
      command: "/home/me/.cargo/bin/kruise-lua",
      source: "~/.cargo/bin",
    });
  });

  it("looks a named binary up on PATH and ~/.cargo/bin, not in the bundle", () => {
    const bundled = "/ext/server/kruise-lua";
    assert.deepEqual(logic.resolveServerPath("kl-dev", env({ bundled }, [bundled, "/home/me/.cargo/bin/kl-dev"])), {
      ok: true,
      command: "/home/me/.cargo/bin/kl-dev",
      source: "setting",
    });
    const missing = logic.resolveServerPath("kl-dev", env({ bundled }, [bundled]));
    assert.equal(missing.ok, false);
  });

  it("names the binary it uses and why, for the output channel", () => {
    assert.equal(
      logic.serverChoiceLine({ command: "/ext/server/kruise-lua", source: "bundled" }),
      "using kruise-lua bundled with the extension: /ext/server/kruise-lua",
    );
    assert.equal(
      logic.serverChoiceLine({ command: "/home/me/.cargo/bin/kruise-lua", source: "~/.cargo/bin" }),
      "using kruise-lua found in ~/.cargo/bin: /home/me/.cargo/bin/kruise-lua",
    );
  });

  it("expands ~ and ${workspaceFolder}, and resolves relative paths in the workspace", () => {
    assert.deepEqual(logic.resolveServerPath("~/bin/kl", env({}, ["/home/me/bin/kl"])), {
      ok: true,
      command: "/home/me/bin/kl",
      source: "setting",
    });
    assert.deepEqual(logic.resolveServerPath("${workspaceFolder}/target/debug/kruise-lua", env({}, ["/ws/target/debug/kruise-lua"])), {
      ok: true,
      command: "/ws/target/debug/kruise-lua",
      source: "setting",
    });
    assert.deepEqual(logic.resolveServerPath("target/release/kruise-lua", env({}, ["/ws/target/release/kruise-lua"])), {
      ok: true,
      command: "/ws/target/release/kruise-lua",
      source: "setting",
    });
  });

  it("says where it looked, how to set kruiseLua.server.path and how to install when missing", () => {
    const r = logic.resolveServerPath("kruise-lua", env({ bundled: "/ext/server/kruise-lua" }, []));
    assert.equal(r.ok, false);
    if (!r.ok) {
      assert.match(r.message, /looked at: \/ext\/server\/kruise-lua, PATH, \/home\/me\/\.cargo\/bin\)/);
      assert.match(r.message, /PATH can differ from your shell's/);
      assert.match(r.message, /command -v kruise-lua/);
      assert.match(r.message, /set `kruiseLua\.server\.path` to the absolute path/);
      assert.match(r.message, /"kruiseLua\.server\.path": "\/path\/to\/kruise-lua"/);
      assert.match(r.message, /pipx install kruise-lua/);
      assert.match(r.message, /cargo install --locked --path server/);
    }
    const explicit = logic.resolveServerPath("/opt/kl", env({}, []));
    assert.equal(explicit.ok, false);
    if (!explicit.ok) {
      assert.match(explicit.message, /\/opt\/kl/);
    }
  });

  it("tries PATHEXT on Windows", () => {
    const r = logic.resolveServerPath(
      "kruise-lua",
      env({ platform: "win32", pathVariable: "C:\\tools;C:\\bin", home: "C:\\Users\\me", pathExt: ".EXE;.CMD" }, [
        "C:\\bin\\kruise-lua.EXE",
      ]),
    );
    assert.deepEqual(r, { ok: true, command: "C:\\bin\\kruise-lua.EXE", source: "PATH" });
  });
});

describe("settings", () => {
  it("maps VS Code settings to the server's, under kruiseLua", () => {
    const options = logic.initializationOptions({
      lints: { KL007: "off", KL002: "error" },
      mode: "production",
      debounceMs: 200,
      timeoutMs: 500,
    });
    assert.deepEqual(options, {
      kruiseLua: { lints: { KL007: "off", KL002: "error" }, mode: "production", debounceMs: 200, timeoutMs: 500 },
    });
  });

  it("uses the defaults for what is unset", () => {
    assert.deepEqual(logic.initializationOptions({}), { kruiseLua: { lints: {}, mode: "harness" } });
  });

  it("drops invalid values with a message and keeps the rest", () => {
    const { settings, problems } = logic.serverSettings({
      lints: { KL001: "loud", KL003: "hint", nope: "off" },
      mode: "strict",
      debounceMs: -1,
    });
    assert.deepEqual(settings, { lints: { KL003: "hint" }, mode: "harness" });
    assert.equal(problems.length, 4);
    assert.ok(problems.some((p) => p.includes("KL001")));
    assert.ok(problems.some((p) => p.includes("nope")));
    assert.ok(problems.some((p) => p.includes("strict")));
    assert.ok(problems.some((p) => p.includes("debounceMs")));
  });
});

describe("status bar", () => {
  it("totals the per-script summaries", () => {
    const counts = logic.countsFromSummaries([
      "3/3 cases pass",
      "1/2 cases pass — wrong_weight step 2 fails",
      "no test cases: testdata is missing",
      "unrelated",
    ]);
    assert.deepEqual(counts, { scripts: 2, cases: 5, passed: 4 });
  });

  it("totals steps when every summary gives them (defect 12)", () => {
    const counts = logic.countsFromSummaries([
      "3/3 cases pass (7/7 steps)",
      "1/2 cases pass (3/4 steps) — wrong_weight step 2 fails",
    ]);
    assert.deepEqual(counts, { scripts: 2, cases: 5, passed: 4, steps: 11, stepsPassed: 10 });
  });

  it("reads runAll's result", () => {
    assert.deepEqual(logic.parseRunAll({ scripts: 2, cases: 5, passed: 4 }), { scripts: 2, cases: 5, passed: 4 });
    assert.equal(logic.parseRunAll(null), undefined);
    assert.equal(logic.parseRunAll({ scripts: 2, cases: "5", passed: 4 }), undefined);
  });

  it("shows pass/fail counts, saying cases and steps (defect 12)", () => {
    const ok = logic.statusView({ scripts: 1, cases: 3, passed: 3, steps: 7, stepsPassed: 7 });
    assert.equal(ok.text, "$(pass) kruise-lua 3 cases, 7 steps");
    assert.equal(ok.level, "ok");
    assert.match(ok.tooltip, /all 3 cases \(7 steps\) of 1 script pass/);
    const bad = logic.statusView({ scripts: 2, cases: 5, passed: 4, steps: 11, stepsPassed: 10 });
    assert.equal(bad.text, "$(error) kruise-lua 4/5 cases, 10/11 steps");
    assert.equal(bad.level, "error");
    assert.match(bad.tooltip, /1 of 5 cases \(1 of 11 steps\) of 2 scripts fail/);
    assert.equal(logic.statusView({ scripts: 1, cases: 1, passed: 1 }).text, "$(pass) kruise-lua 1 case");
    assert.equal(logic.statusView(undefined).level, "idle");
    assert.equal(logic.statusView({ scripts: 1, cases: 0, passed: 0 }).level, "idle");
  });
});

describe("command arguments", () => {
  it("builds the server's argument lists", () => {
    assert.deepEqual(logic.objArguments("file:///c.yaml", 1), [{ uri: "file:///c.yaml", step: 1 }]);
    assert.deepEqual(logic.acceptArguments("file:///c.yaml", 0), [{ uri: "file:///c.yaml", step: 0 }]);
    const all = logic.acceptArguments("file:///c.yaml", undefined);
    assert.deepEqual(all, [{ uri: "file:///c.yaml" }]);
    assert.equal("step" in all[0], false);
  });

  it("reads the script whose step values are shown", () => {
    assert.equal(logic.shownScript({ script: "/w/trafficRouting.lua", step: 1 }), "/w/trafficRouting.lua");
    assert.equal(logic.shownScript({ step: 1 }), undefined);
    assert.equal(logic.shownScript(null), undefined);
  });

  it("explains the result of accepting", () => {
    assert.equal(logic.acceptMessage({ applied: true, steps: 2 }).text, "kruise-lua: accepted the actual output of 2 steps as expected.");
    assert.equal(logic.acceptMessage({ applied: false, steps: 0 }).level, "info");
    assert.match(logic.acceptMessage({ applied: false, steps: 0 }).text, /nothing to accept/);
    assert.equal(logic.acceptMessage({ applied: false, steps: 1 }).level, "warning");
  });
});

describe("steps of a case", () => {
  const CASE = [
    "rollout:", //                 0
    "  spec:", //                  1
    "    strategy:", //            2
    "      canary:", //            3
    "        steps:", //           4
    '        - traffic: "20%"', // 5
    "          pause: {}", //      6
    '        - traffic: "50%"', // 7
    "original:", //                8
    "  spec: {}", //               9
    "expected:", //                10
    "- spec:", //                  11
    "    weight: 20", //           12
    "", //                         13
    "# second", //                 14
    "- spec:", //                  15
    "    weight: 50", //           16
    "other: 1", //                 17
  ].join("\n");

  it("finds the step under a line in expected and in the rollout's steps", () => {
    assert.equal(logic.stepAtLine(CASE, 11), 0);
    assert.equal(logic.stepAtLine(CASE, 12), 0);
    assert.equal(logic.stepAtLine(CASE, 14), 0);
    assert.equal(logic.stepAtLine(CASE, 15), 1);
    assert.equal(logic.stepAtLine(CASE, 16), 1);
    assert.equal(logic.stepAtLine(CASE, 5), 0);
    assert.equal(logic.stepAtLine(CASE, 6), 0);
    assert.equal(logic.stepAtLine(CASE, 7), 1);
  });

  it("is undefined outside the lists", () => {
    for (const line of [0, 4, 8, 9, 10, 17]) {
      assert.equal(logic.stepAtLine(CASE, line), undefined, `line ${line}`);
    }
  });

  it("counts steps, with indented expected items too", () => {
    assert.equal(logic.stepCount(CASE), 2);
    const indented = "expected:\n  - a: 1\n  - a: 2\n  - a: 3\nnext: 1\n";
    assert.equal(logic.stepCount(indented), 3);
    assert.equal(logic.stepAtLine(indented, 3), 2);
    assert.equal(logic.stepCount("original: {}\n"), 0);
  });
});

describe("debugConfiguration", () => {
  it("turns the lens argument into a launch configuration", () => {
    const made = logic.debugConfiguration({ script: "/s.lua", case: "/t/c.yaml", step: 3 });
    assert.deepEqual(made, {
      ok: true,
      config: { type: "kruise-lua", request: "launch", name: "Debug step 3 of c.yaml", script: "/s.lua", case: "/t/c.yaml", step: 3, mode: "harness" },
    });
  });

  it("refuses what is not a step of a case", () => {
    for (const bad of [undefined, {}, { script: "/s.lua", case: "/c.yaml", step: 0 }, { script: "/s.lua", case: "/c.yaml", step: 1.5 }, { script: "/s.lua", case: "/c.yaml", step: 1, mode: "fast" }]) {
      assert.equal(logic.debugConfiguration(bad).ok, false, JSON.stringify(bad));
    }
  });
});

describe("objDocument (issue 23, defect 11: one read-only document per step)", () => {
  it("names the case and the step, and keeps the case's URI apart", () => {
    const case1 = "file:///ws/lua_configuration/example.io/Route/testdata/weights.yaml";
    const case2 = "file:///ws/other/testdata/weights.yaml";
    const a = logic.objDocument([{ uri: case1, step: 1 }]);
    assert.deepEqual(a, { path: "/weights/obj-step-2.lua", query: case1 });
    assert.deepEqual(logic.objDocument([{ uri: case1, step: 1 }]), a, "the same step: the same document");
    assert.notDeepEqual(logic.objDocument([{ uri: case1, step: 0 }]), a);
    assert.notDeepEqual(logic.objDocument([{ uri: case2, step: 1 }]), a);
  });
  it("is undefined for arguments that name no step", () => {
    for (const bad of [undefined, [], [{}], [{ uri: "file:///c.yaml" }], [{ uri: "file:///c.yaml", step: -1 }]]) {
      assert.equal(logic.objDocument(bad), undefined, JSON.stringify(bad));
    }
  });
});

describe("debugTargets (Run and Debug without a launch.json)", () => {
  it("a custom script and its testdata folder, and a case and its script", () => {
    assert.deepEqual(logic.debugTargets(`${ROUTE}/trafficRouting.lua`), {
      script: `${ROUTE}/trafficRouting.lua`,
      testdata: `${ROUTE}/testdata`,
    });
    assert.deepEqual(logic.debugTargets(`${ROUTE}/testdata/sub/weights.yaml`), {
      script: `${ROUTE}/trafficRouting.lua`,
      case: `${ROUTE}/testdata/sub/weights.yaml`,
    });
  });
  it("an ingress class and its cases", () => {
    const ingress = "/ws/lua_configuration/trafficrouting_ingress";
    assert.deepEqual(logic.debugTargets(`${ingress}/nginx.lua`), {
      script: `${ingress}/nginx.lua`,
      testdata: `${ingress}/testdata/nginx`,
    });
    assert.deepEqual(logic.debugTargets(`${ingress}/testdata/nginx/canary.yml`), {
      script: `${ingress}/nginx.lua`,
      case: `${ingress}/testdata/nginx/canary.yml`,
    });
  });
  it("nothing for other files", () => {
    assert.equal(logic.debugTargets("/ws/README.md"), undefined);
    assert.equal(logic.debugTargets("/ws/deploy/cm.yaml"), undefined);
  });
  it("an empty launch is the one VS Code passes without launch.json", () => {
    assert.equal(logic.isEmptyLaunch({}), true);
    assert.equal(logic.isEmptyLaunch({ type: "kruise-lua", request: "launch", name: "x" }), false);
  });
});

describe("serverSettings: parameter hints", () => {
  it("passes inlayHints.parameterNames through, and flags a non-boolean", () => {
    assert.deepEqual(logic.serverSettings({ parameterHints: true }).settings.inlayHints, { parameterNames: true });
    assert.equal(logic.serverSettings({}).settings.inlayHints, undefined);
    assert.equal(logic.serverSettings({ parameterHints: "yes" }).problems.length, 1);
  });
});
