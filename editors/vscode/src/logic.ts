// The extension's decisions, free of any `vscode` import so that they run under plain node
// in the unit tests: which files belong to the server, where the binary is, what the server is
// told at start, what the status bar says, and the arguments of the server's commands.

import * as fs from "fs";
import * as path from "path";

/** The commands the server executes (`workspace/executeCommand`). */
export const SERVER_COMMANDS = {
  runAll: "kruise-lua.runAll",
  objAsLua: "kruise-lua.objAsLua",
  acceptExpected: "kruise-lua.acceptExpected",
  showStepValues: "kruise-lua.showStepValues",
  hideStepValues: "kruise-lua.hideStepValues",
} as const;

/** Diagnostics the server publishes carry this source. */
export const DIAGNOSTIC_SOURCE = "kruise-lua";

/** Shown when the binary cannot be found. */
export const INSTALL_COMMAND = "cargo install --locked --path server";
/** Installs the Python wheel, which carries the binary (no Rust toolchain needed). */
export const INSTALL_WHEEL_COMMAND = "pipx install kruise-lua";

export const CUSTOM_SCRIPT_NAME = "trafficRouting.lua";
export const INGRESS_FOLDER = "trafficrouting_ingress";
export const TREE_FOLDER = "lua_configuration";

/**
 * Glob patterns of the files the server always gets (matched against the whole path). YAML
 * outside `testdata` is offered to the server only when its text holds a ConfigMap with
 * `lua.traffic.routing.*` keys (see `looksLikeConfigMap`), and Lua files elsewhere are left to
 * other Lua extensions.
 */
export const SCRIPT_PATTERNS = [
  `**/${CUSTOM_SCRIPT_NAME}`,
  `**/${TREE_FOLDER}/**/*.lua`,
  `**/${INGRESS_FOLDER}/*.lua`,
];
export const TESTDATA_PATTERNS = ["**/testdata/**/*.yaml", "**/testdata/**/*.yml"];

export type FileKind = "script" | "testdata" | "configmap" | "other";

function segments(p: string): string[] {
  return p.split(/[\\/]+/).filter((s) => s.length > 0);
}

function isYamlName(name: string): boolean {
  return /\.ya?ml$/i.test(name);
}

/** A Lua file the server analyses and runs: `trafficRouting.lua`, any Lua file in a
 * `lua_configuration` tree, or an ingress-class script in `trafficrouting_ingress/`. */
export function isScriptPath(p: string): boolean {
  const parts = segments(p);
  const name = parts[parts.length - 1] ?? "";
  if (!name.endsWith(".lua")) {
    return false;
  }
  if (name === CUSTOM_SCRIPT_NAME) {
    return true;
  }
  if (parts.slice(0, -1).includes(TREE_FOLDER)) {
    return true;
  }
  return parts[parts.length - 2] === INGRESS_FOLDER;
}

/**
 * Whether a workspace folder is or holds a script tree at its top (`lua_configuration/`, or an
 * ingress `trafficrouting_ingress/`): a stat or two, where a workspace-wide file search takes
 * seconds on a cold start (it was most of the time from opening the folder to the first lens).
 */
export function holdsScriptTree(folder: string, isDirectory: (dir: string) => boolean = isDirectoryOnDisk): boolean {
  const name = path.basename(folder);
  if (name === TREE_FOLDER || name === INGRESS_FOLDER) {
    return isDirectory(folder);
  }
  return [TREE_FOLDER, INGRESS_FOLDER].some((dir) => isDirectory(path.join(folder, dir)));
}

function isDirectoryOnDisk(dir: string): boolean {
  try {
    return fs.statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The script whose test case a YAML file is, when `exists` says that script is there:
 * `<dir>/testdata/**` next to `<dir>/trafficRouting.lua`, or
 * `trafficrouting_ingress/testdata/<class>/**` for `trafficrouting_ingress/<class>.lua`.
 */
export function caseOwner(p: string, exists: (file: string) => boolean = fs.existsSync): string | undefined {
  if (!isYamlName(p)) {
    return undefined;
  }
  let dir = path.dirname(p);
  let child = path.basename(p);
  while (true) {
    const parent = path.dirname(dir);
    if (path.basename(dir) === "testdata") {
      const custom = path.join(parent, CUSTOM_SCRIPT_NAME);
      if (exists(custom)) {
        return custom;
      }
      if (path.basename(parent) === INGRESS_FOLDER && dir !== path.dirname(p)) {
        const ingress = path.join(parent, `${child}.lua`);
        if (exists(ingress)) {
          return ingress;
        }
      }
    }
    if (parent === dir) {
      return undefined;
    }
    child = path.basename(dir);
    dir = parent;
  }
}

/** Whether YAML text is a manifest holding scripts (a ConfigMap with `lua.traffic.routing.*` keys). */
export function looksLikeConfigMap(text: string): boolean {
  return /^\s*kind:\s*["']?ConfigMap["']?\s*$/m.test(text) && /^\s*["']?lua\.traffic\.routing\./m.test(text);
}

/** What a file is to the server; `text` is needed only to recognise ConfigMaps. */
export function classify(p: string, text: string | undefined, exists: (file: string) => boolean = fs.existsSync): FileKind {
  if (isScriptPath(p)) {
    return "script";
  }
  if (!isYamlName(p)) {
    return "other";
  }
  if (caseOwner(p, exists) !== undefined) {
    return "testdata";
  }
  if (text !== undefined && looksLikeConfigMap(text)) {
    return "configmap";
  }
  return "other";
}

export interface ResolveEnv {
  /** `PATH`-style search list (the extension host's, which may differ from a shell's). */
  pathVariable: string | undefined;
  platform: NodeJS.Platform;
  home: string | undefined;
  /** The first workspace folder (for relative paths and `${workspaceFolder}`). */
  workspaceFolder: string | undefined;
  /** Windows executable extensions (`PATHEXT`). */
  pathExt?: string;
  /** Where a platform-specific package carries the binary (`<extension>/server/kruise-lua`). */
  bundled?: string;
  isExecutable: (file: string) => boolean;
}

/** Where the binary was found, in lookup order; the output channel names it. */
export type ServerSource = "setting" | "bundled" | "PATH" | "~/.cargo/bin";

export type Resolved = { ok: true; command: string; source: ServerSource } | { ok: false; message: string };

/** The setting's default: look the binary up (bundled, PATH, ~/.cargo/bin) rather than name one. */
export const DEFAULT_SERVER_NAME = "kruise-lua";

export function defaultIsExecutable(file: string): boolean {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile()) {
      return false;
    }
    if (process.platform === "win32") {
      return true;
    }
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * The message shown when the binary is missing: where it was looked for, that an editor started
 * from a desktop menu has another PATH than a shell, and how to point `kruiseLua.server.path` at
 * the binary (or install it).
 */
export function missingServerMessage(setting: string, lookedAt: string[]): string {
  const where = lookedAt.length > 0 ? ` (looked at: ${lookedAt.join(", ")})` : "";
  return (
    `kruise-lua: the language server \`${setting}\` was not found${where}. ` +
    "The editor's PATH can differ from your shell's: run `command -v kruise-lua` (Windows: `where kruise-lua`) " +
    "in a terminal and set `kruiseLua.server.path` to the absolute path it prints (Settings, search " +
    "\"kruiseLua.server.path\", or `\"kruiseLua.server.path\": \"/path/to/kruise-lua\"` in settings.json). " +
    `To install it: \`${INSTALL_WHEEL_COMMAND}\`, or \`${INSTALL_COMMAND}\` from a kruise-lua checkout.`
  );
}

/**
 * Finds the server binary. The `kruiseLua.server.path` setting comes first: a path (may use `~`
 * and `${workspaceFolder}`, relative ones are in the workspace) is used as it is, a bare name
 * other than the default is looked up on PATH and in `~/.cargo/bin`. Left at its default, the
 * binary bundled in a platform-specific package comes next, then PATH, then `~/.cargo/bin`
 * (where `cargo install` puts it, often missing from the PATH of an editor started from a
 * desktop menu).
 */
export function resolveServerPath(setting: string | undefined, env: ResolveEnv): Resolved {
  const raw = (setting ?? "").trim() || DEFAULT_SERVER_NAME;
  const windows = env.platform === "win32";
  const pathApi = windows ? path.win32 : path.posix;
  let value = raw;
  if (env.workspaceFolder !== undefined) {
    value = value.split("${workspaceFolder}").join(env.workspaceFolder);
  }
  if (env.home !== undefined && (value === "~" || value.startsWith("~/") || value.startsWith("~\\"))) {
    value = pathApi.join(env.home, value.slice(1));
  }
  const extensions = windows
    ? ["", ...(env.pathExt ?? ".EXE;.CMD;.BAT;.COM").split(";").filter((e) => e.length > 0)]
    : [""];
  const candidates = (file: string) => extensions.map((ext) => file + ext);
  const hasSeparator = value.includes("/") || (windows && value.includes("\\"));
  if (hasSeparator) {
    const absolute = pathApi.isAbsolute(value)
      ? value
      : env.workspaceFolder !== undefined
        ? pathApi.join(env.workspaceFolder, value)
        : value;
    const found = candidates(absolute).find((file) => env.isExecutable(file));
    return found !== undefined
      ? { ok: true, command: found, source: "setting" }
      : { ok: false, message: missingServerMessage(raw, [absolute]) };
  }
  const lookedAt: string[] = [];
  if (raw === DEFAULT_SERVER_NAME && env.bundled !== undefined) {
    lookedAt.push(env.bundled);
    if (env.isExecutable(env.bundled)) {
      return { ok: true, command: env.bundled, source: "bundled" };
    }
  }
  const pathDirs = (env.pathVariable ?? "").split(windows ? ";" : ":").filter((d) => d.length > 0);
  const cargoBin = env.home !== undefined ? pathApi.join(env.home, ".cargo", "bin") : undefined;
  const searched: [string, ServerSource][] = [
    ...pathDirs.map((dir): [string, ServerSource] => [dir, "PATH"]),
    ...(cargoBin !== undefined ? [[cargoBin, "~/.cargo/bin"] as [string, ServerSource]] : []),
  ];
  for (const [dir, source] of searched) {
    const found = candidates(pathApi.join(dir, value)).find((file) => env.isExecutable(file));
    if (found !== undefined) {
      return { ok: true, command: found, source: raw === DEFAULT_SERVER_NAME ? source : "setting" };
    }
  }
  lookedAt.push("PATH", ...(cargoBin !== undefined ? [cargoBin] : []));
  return { ok: false, message: missingServerMessage(raw, lookedAt) };
}

/** The output channel's line saying which binary runs and why that one. */
export function serverChoiceLine(resolved: { command: string; source: ServerSource }): string {
  const why: Record<ServerSource, string> = {
    setting: "from the kruiseLua.server.path setting",
    bundled: "bundled with the extension",
    PATH: "found on PATH",
    "~/.cargo/bin": "found in ~/.cargo/bin",
  };
  return `using kruise-lua ${why[resolved.source]}: ${resolved.command}`;
}

export type Severity = "off" | "hint" | "info" | "warning" | "error";
const SEVERITIES: readonly string[] = ["off", "hint", "info", "warning", "error"];

/** The `kruiseLua` settings as VS Code hands them over (any shape: users edit JSON). */
export interface RawSettings {
  lints?: unknown;
  mode?: unknown;
  debounceMs?: unknown;
  timeoutMs?: unknown;
  parameterHints?: unknown;
}

export interface ServerSettings {
  lints: Record<string, Severity>;
  mode: "harness" | "production";
  debounceMs?: number;
  timeoutMs?: number;
  inlayHints?: { parameterNames: boolean };
}

/**
 * The settings the server reads (`initializationOptions` and
 * `workspace/didChangeConfiguration`, under a `kruiseLua` key). Values the server would reject
 * are dropped here with a message, so one typo does not undo the rest.
 */
export function serverSettings(raw: RawSettings): { settings: ServerSettings; problems: string[] } {
  const problems: string[] = [];
  const lints: Record<string, Severity> = {};
  if (raw.lints !== undefined && raw.lints !== null) {
    if (typeof raw.lints !== "object" || Array.isArray(raw.lints)) {
      problems.push("kruiseLua.lints must be an object of code → severity");
    } else {
      for (const [code, severity] of Object.entries(raw.lints as Record<string, unknown>)) {
        if (!/^KL\d{3}$/.test(code)) {
          problems.push(`kruiseLua.lints: unknown lint code \`${code}\``);
        } else if (typeof severity !== "string" || !SEVERITIES.includes(severity)) {
          problems.push(`kruiseLua.lints.${code}: \`${String(severity)}\` is not one of ${SEVERITIES.join(", ")}`);
        } else {
          lints[code] = severity as Severity;
        }
      }
    }
  }
  let mode: ServerSettings["mode"] = "harness";
  if (raw.mode === "production" || raw.mode === "harness") {
    mode = raw.mode;
  } else if (raw.mode !== undefined && raw.mode !== null) {
    problems.push(`kruiseLua.mode: \`${String(raw.mode)}\` is not harness or production`);
  }
  const settings: ServerSettings = { lints, mode };
  const number = (value: unknown, name: string): number | undefined => {
    if (value === undefined || value === null) {
      return undefined;
    }
    if (typeof value === "number" && Number.isFinite(value) && value >= 0) {
      return Math.round(value);
    }
    problems.push(`kruiseLua.${name} must be a non-negative number of milliseconds`);
    return undefined;
  };
  const debounce = number(raw.debounceMs, "debounceMs");
  if (debounce !== undefined) {
    settings.debounceMs = debounce;
  }
  const timeout = number(raw.timeoutMs, "timeoutMs");
  if (timeout !== undefined) {
    settings.timeoutMs = timeout;
  }
  if (typeof raw.parameterHints === "boolean") {
    settings.inlayHints = { parameterNames: raw.parameterHints };
  } else if (raw.parameterHints !== undefined && raw.parameterHints !== null) {
    problems.push("kruiseLua.inlayHints.parameterNames must be true or false");
  }
  return { settings, problems };
}

export function initializationOptions(raw: RawSettings): { kruiseLua: ServerSettings } {
  return { kruiseLua: serverSettings(raw).settings };
}

export interface Counts {
  scripts: number;
  cases: number;
  passed: number;
  /** Steps of those cases (what `kruise-lua check` counts), when the server said. */
  steps?: number;
  stepsPassed?: number;
}

/** Reads a `runAll` result; anything else is `undefined`. */
export function parseRunAll(result: unknown): Counts | undefined {
  if (typeof result !== "object" || result === null) {
    return undefined;
  }
  const r = result as Record<string, unknown>;
  const ok = (v: unknown) => typeof v === "number" && Number.isInteger(v) && v >= 0;
  if (!ok(r.scripts) || !ok(r.cases) || !ok(r.passed)) {
    return undefined;
  }
  const counts: Counts = { scripts: r.scripts as number, cases: r.cases as number, passed: r.passed as number };
  if (ok(r.steps) && ok(r.stepsPassed)) {
    counts.steps = r.steps as number;
    counts.stepsPassed = r.stepsPassed as number;
  }
  return counts;
}

/**
 * Totals from the per-script summary diagnostics (`code: "summary"`, message
 * `"P/T cases pass (S/U steps)…"`, one on the first line of each script that has cases), so the
 * status bar follows every run without asking the server to run anything. Steps are totalled
 * only when every summary gives them.
 */
export function countsFromSummaries(messages: Iterable<string>): Counts {
  const counts: Counts = { scripts: 0, cases: 0, passed: 0, steps: 0, stepsPassed: 0 };
  let allSteps = true;
  for (const message of messages) {
    const m = /^(\d+)\/(\d+) cases? pass(?: \((\d+)\/(\d+) steps?\))?/.exec(message);
    if (m === null) {
      continue;
    }
    counts.scripts += 1;
    counts.passed += Number(m[1]);
    counts.cases += Number(m[2]);
    if (m[3] === undefined) {
      allSteps = false;
    } else {
      counts.stepsPassed = (counts.stepsPassed ?? 0) + Number(m[3]);
      counts.steps = (counts.steps ?? 0) + Number(m[4]);
    }
  }
  if (!allSteps) {
    delete counts.steps;
    delete counts.stepsPassed;
  }
  return counts;
}

function plural(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}

export interface StatusView {
  text: string;
  tooltip: string;
  /** `error` when a case fails, for the item's background. */
  level: "ok" | "error" | "idle";
}

/** The status-bar item for some totals (`$(…)` are VS Code codicons). */
export function statusView(counts: Counts | undefined): StatusView {
  if (counts === undefined || counts.cases === 0) {
    return {
      text: "$(beaker) kruise-lua",
      tooltip: "kruise-lua: no test cases found yet. Click to run all cases.",
      level: "idle",
    };
  }
  const failing = counts.cases - counts.passed;
  const scripts = plural(counts.scripts, "script");
  // Cases and steps both named: `kruise-lua check` counts steps, a lens counts cases.
  const steps = counts.steps === undefined ? undefined : plural(counts.steps, "step");
  if (failing === 0) {
    return {
      text: `$(pass) kruise-lua ${plural(counts.cases, "case")}${steps === undefined ? "" : `, ${steps}`}`,
      tooltip:
        `kruise-lua: all ${plural(counts.cases, "case")}${steps === undefined ? "" : ` (${steps})`} of ${scripts} pass. ` +
        "Click to run all cases.",
      level: "ok",
    };
  }
  const failingSteps =
    counts.steps === undefined || counts.stepsPassed === undefined ? undefined : counts.steps - counts.stepsPassed;
  return {
    text:
      `$(error) kruise-lua ${counts.passed}/${plural(counts.cases, "case")}` +
      (steps === undefined ? "" : `, ${counts.stepsPassed}/${steps}`),
    tooltip:
      `kruise-lua: ${failing} of ${plural(counts.cases, "case")}` +
      (failingSteps === undefined ? "" : ` (${failingSteps} of ${steps})`) +
      ` of ${scripts} fail. Click to run all cases.`,
    level: "error",
  };
}

/** The argument list of `kruise-lua.objAsLua` (step 0-based). */
export function objArguments(uri: string, step: number): [{ uri: string; step: number }] {
  return [{ uri, step }];
}

/** The script whose values `kruise-lua.showStepValues` shows (its result's `script`). */
export function shownScript(result: unknown): string | undefined {
  const r = (typeof result === "object" && result !== null ? result : {}) as Record<string, unknown>;
  return typeof r.script === "string" ? r.script : undefined;
}

/** The argument list of `kruise-lua.acceptExpected`: one step, or every failing step. */
export function acceptArguments(uri: string, step: number | undefined): [{ uri: string; step?: number }] {
  return step === undefined ? [{ uri }] : [{ uri, step }];
}

/** What to tell the user after `acceptExpected`. */
export function acceptMessage(result: unknown): { level: "info" | "warning"; text: string } {
  const r = (typeof result === "object" && result !== null ? result : {}) as Record<string, unknown>;
  const steps = typeof r.steps === "number" ? r.steps : 0;
  if (steps === 0) {
    return { level: "info", text: "kruise-lua: nothing to accept, no step of this case fails." };
  }
  if (r.applied !== true) {
    return { level: "warning", text: "kruise-lua: the edit accepting the actual output was not applied." };
  }
  const plural = steps === 1 ? "step" : "steps";
  return { level: "info", text: `kruise-lua: accepted the actual output of ${steps} ${plural} as expected.` };
}

interface ListBlock {
  /** 0-based first line of each item. */
  items: number[];
  /** 0-based line after the block. */
  end: number;
}

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

function isBlank(line: string): boolean {
  const t = line.trim();
  return t === "" || t.startsWith("#");
}

/** The items of the block list under the first key line matching `key` (e.g. `expected:`). */
function listUnder(lines: string[], key: RegExp, topLevel: boolean): ListBlock | undefined {
  for (let i = 0; i < lines.length; i++) {
    const m = key.exec(lines[i]);
    if (m === null || (topLevel && indentOf(lines[i]) !== 0)) {
      continue;
    }
    const keyIndent = indentOf(lines[i]);
    const items: number[] = [];
    let itemIndent: number | undefined;
    let j = i + 1;
    for (; j < lines.length; j++) {
      const line = lines[j];
      if (isBlank(line)) {
        continue;
      }
      const indent = indentOf(line);
      const isItem = line.trimStart().startsWith("- ") || line.trim() === "-";
      if (itemIndent === undefined) {
        if (!isItem || indent < keyIndent) {
          break;
        }
        itemIndent = indent;
      }
      if (indent < itemIndent || (indent === itemIndent && !isItem)) {
        break;
      }
      if (indent === itemIndent && isItem) {
        items.push(j);
      }
    }
    return { items, end: j };
  }
  return undefined;
}

/** A case's top-level `expected` list and its rollout's `steps` list, in that order. */
function stepLists(text: string): [ListBlock | undefined, ListBlock | undefined] {
  const lines = text.split(/\r?\n/);
  return [listUnder(lines, /^\s*expected:\s*(#.*)?$/, true), listUnder(lines, /^\s*steps:\s*(#.*)?$/, false)];
}

/**
 * The 0-based step a line of a test case is in: inside `expected[i]` or the rollout's
 * `steps[i]`; `undefined` elsewhere.
 */
export function stepAtLine(text: string, line: number): number | undefined {
  for (const block of stepLists(text)) {
    if (block === undefined || block.items.length === 0 || line < block.items[0] || line >= block.end) {
      continue;
    }
    let step = 0;
    for (let i = 0; i < block.items.length; i++) {
      if (block.items[i] <= line) {
        step = i;
      }
    }
    return step;
  }
  return undefined;
}

/** How many steps a case has, judging by its `expected` list (else the rollout's `steps`). */
export function stepCount(text: string): number {
  const [expected, steps] = stepLists(text);
  if (expected !== undefined && expected.items.length > 0) {
    return expected.items.length;
  }
  return steps?.items.length ?? 0;
}

/** The debugger type the extension contributes (`kruise-lua dap`). */
export const DEBUG_TYPE = "kruise-lua";

/** The "▶ debug step N" lens's command (the server's lens, bound here). */
export const DEBUG_STEP_COMMAND = "kruise-lua.debugStep";

/** A `kruise-lua` launch configuration. */
export interface DebugConfiguration {
  type: string;
  request: "launch";
  name: string;
  script: string;
  case: string;
  step: number;
  mode: "harness" | "production";
  stopOnEntry?: boolean;
  [key: string]: unknown;
}

/**
 * The launch configuration for the lens argument `{script, case, step (from 1), mode}`,
 * or why the argument is not one.
 */
export function debugConfiguration(
  arg: unknown,
): { ok: true; config: DebugConfiguration } | { ok: false; message: string } {
  const a = (typeof arg === "object" && arg !== null ? arg : {}) as Record<string, unknown>;
  const { script, case: casePath, step } = a;
  const mode = a.mode ?? "harness";
  if (typeof script !== "string" || script === "" || typeof casePath !== "string" || casePath === "") {
    return { ok: false, message: "kruise-lua: debug step needs a script and a case path." };
  }
  if (typeof step !== "number" || !Number.isInteger(step) || step < 1) {
    return { ok: false, message: `kruise-lua: debug step needs a step number from 1, not ${JSON.stringify(step)}.` };
  }
  if (mode !== "harness" && mode !== "production") {
    return { ok: false, message: `kruise-lua: mode is harness or production, not ${JSON.stringify(mode)}.` };
  }
  return {
    ok: true,
    config: {
      type: DEBUG_TYPE,
      request: "launch",
      name: `Debug step ${step} of ${path.basename(casePath)}`,
      script,
      case: casePath,
      step,
      mode,
    },
  };
}

/** The debug adapter's arguments after the binary. */
export const DAP_ARGS = ["dap"];

/** The scheme of the read-only documents the extension shows ("show obj as Lua"). */
export const OBJ_SCHEME = "kruise-lua";

/**
 * Where the obj of a step shows: one virtual document per case and step (`kruise-lua:` URI), so
 * clicking the lens again refreshes the same tab instead of opening another `Untitled-N`. The
 * path names the step for the tab title; the query is the case's URI (two cases with one name
 * in different folders stay apart). Undefined when the arguments name no case and step.
 */
export function objDocument(args: unknown): { path: string; query: string } | undefined {
  const first = Array.isArray(args) ? args[0] : undefined;
  const a = (typeof first === "object" && first !== null ? first : {}) as Record<string, unknown>;
  if (typeof a.uri !== "string" || a.uri === "" || typeof a.step !== "number" || !Number.isInteger(a.step) || a.step < 0) {
    return undefined;
  }
  const name = path.posix.basename(a.uri.replace(/[?#].*$/, "")).replace(/\.ya?ml$/, "");
  return { path: `/${decodeURIComponent(name)}/obj-step-${a.step + 1}.lua`, query: a.uri };
}

/**
 * What a file is, for starting a debug session from it without a launch configuration: the
 * script it is or tests, and where that script's cases are (a case file names itself).
 * Follows the library layout: `<Kind>/trafficRouting.lua` with `<Kind>/testdata/*.yaml`, and
 * `trafficrouting_ingress/<class>.lua` with `trafficrouting_ingress/testdata/<class>/*.yaml`.
 */
export function debugTargets(file: string): { script: string; testdata?: string; case?: string } | undefined {
  const normalized = path.normalize(file);
  const base = path.basename(normalized);
  const dir = path.dirname(normalized);
  if (base.endsWith(".lua")) {
    if (base === "trafficRouting.lua") {
      return { script: normalized, testdata: path.join(dir, "testdata") };
    }
    if (path.basename(dir) === "trafficrouting_ingress") {
      return { script: normalized, testdata: path.join(dir, "testdata", base.replace(/\.lua$/, "")) };
    }
    return { script: normalized };
  }
  if (!/\.ya?ml$/.test(base)) {
    return undefined;
  }
  const parts = normalized.split(path.sep);
  const at = parts.lastIndexOf("testdata");
  if (at <= 0) {
    return undefined;
  }
  const owner = parts.slice(0, at).join(path.sep) || path.sep;
  if (path.basename(owner) === "trafficrouting_ingress" && at + 2 < parts.length) {
    return { script: path.join(owner, `${parts[at + 1]}.lua`), case: normalized };
  }
  return { script: path.join(owner, "trafficRouting.lua"), case: normalized };
}

/** Whether a launch configuration is the empty one VS Code passes when there is no launch.json. */
export function isEmptyLaunch(config: Record<string, unknown>): boolean {
  return config.type === undefined && config.request === undefined && config.name === undefined;
}
