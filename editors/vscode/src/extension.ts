// The VS Code edge: starts `kruise-lua lsp` for the documents it concerns, wires the commands
// and the status bar, and runs `kruise-lua dap` for debug sessions. Every decision lives in ./logic (tested without VS Code).

import * as path from "path";
import * as os from "os";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  DidOpenTextDocumentNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  Middleware,
  RevealOutputChannelOn,
  ServerOptions,
  State,
} from "vscode-languageclient/node";

import * as logic from "./logic";

const CLIENT_ID = "kruiseLua";
const CLIENT_NAME = "kruise-lua";

let client: LanguageClient | undefined;
/** The client being started or running (the middleware may run before `start()` returns). */
let current: LanguageClient | undefined;
let starting: Promise<LanguageClient | undefined> | undefined;
let output: vscode.OutputChannel;
/** Where a platform-specific package carries the server (absent in the universal package). */
let bundledServer: string | undefined;
let status: vscode.StatusBarItem;
/** Documents the server was told about (`didOpen` sent and not closed). */
const forwarded = new Set<string>();
let missingReported = false;
/** When this module was loaded (VS Code loads it just before calling `activate`). */
const loadedAt = Date.now();
/** When `activate` began: the output channel says how long the server took to be ready. */
let activatedAt = 0;

/** An output channel line with the time (cold-start figures come from these). */
function note(line: string): void {
  output.appendLine(`[${new Date().toISOString().slice(11, 23)}] ${line}`);
}

function rawSettings(): logic.RawSettings {
  const config = vscode.workspace.getConfiguration("kruiseLua");
  return {
    lints: config.get("lints"),
    mode: config.get("mode"),
    debounceMs: config.get("debounceMs"),
    timeoutMs: config.get("timeoutMs"),
    parameterHints: config.get("inlayHints.parameterNames"),
  };
}

function reportSettingProblems(): void {
  const { problems } = logic.serverSettings(rawSettings());
  if (problems.length > 0) {
    void vscode.window.showWarningMessage(`kruise-lua settings ignored: ${problems.join("; ")}`);
  }
}

function kindOf(document: vscode.TextDocument): logic.FileKind {
  if (document.uri.scheme !== "file") {
    return "other";
  }
  return logic.classify(document.uri.fsPath, document.getText());
}

function isRelevant(document: vscode.TextDocument): boolean {
  return kindOf(document) !== "other";
}

/** The documents the client syncs; YAML is then gated by its content (see `middleware`). */
function documentSelector(): LanguageClientOptions["documentSelector"] {
  return [
    ...[...logic.SCRIPT_PATTERNS, ...logic.TESTDATA_PATTERNS].map((pattern) => ({ scheme: "file", pattern })),
    { scheme: "file", language: "yaml" },
  ];
}

function openParams(document: vscode.TextDocument) {
  return {
    textDocument: {
      uri: document.uri.toString(),
      languageId: document.languageId,
      version: document.version,
      text: document.getText(),
    },
  };
}

/**
 * Keeps YAML that is neither a test case nor a ConfigMap with scripts away from the server, so
 * its requests and diagnostics never mix with those of the YAML extension; a YAML file that
 * becomes such a ConfigMap while edited is opened on the server then.
 */
const middleware: Middleware = {
  didOpen: async (document, next) => {
    if (!isRelevant(document)) {
      return;
    }
    forwarded.add(document.uri.toString());
    return next(document);
  },
  didChange: async (event, next) => {
    const uri = event.document.uri.toString();
    if (forwarded.has(uri)) {
      return next(event);
    }
    if (current !== undefined && isRelevant(event.document)) {
      forwarded.add(uri);
      await current.sendNotification(DidOpenTextDocumentNotification.type, openParams(event.document));
    }
  },
  didSave: async (document, next) => (forwarded.has(document.uri.toString()) ? next(document) : undefined),
  didClose: async (document, next) => {
    if (forwarded.delete(document.uri.toString())) {
      return next(document);
    }
  },
  provideHover: (document, position, token, next) =>
    forwarded.has(document.uri.toString()) ? next(document, position, token) : undefined,
  provideCompletionItem: (document, position, context, token, next) =>
    forwarded.has(document.uri.toString()) ? next(document, position, context, token) : undefined,
  provideCodeLenses: (document, token, next) =>
    forwarded.has(document.uri.toString()) ? next(document, token) : undefined,
  provideCodeActions: (document, range, context, token, next) =>
    forwarded.has(document.uri.toString()) ? next(document, range, context, token) : undefined,
  provideDocumentSymbols: (document, token, next) =>
    forwarded.has(document.uri.toString()) ? next(document, token) : undefined,
  provideDefinition: (document, position, token, next) =>
    forwarded.has(document.uri.toString()) ? next(document, position, token) : undefined,
  provideReferences: (document, position, options, token, next) =>
    forwarded.has(document.uri.toString()) ? next(document, position, options, token) : undefined,
  // The server's own commands, as the code lenses invoke them: show what they return.
  executeCommand: async (command, args, next) => {
    const result = await next(command, args);
    await presentCommandResult(command, result, args);
    return result;
  },
};

async function presentCommandResult(command: string, result: unknown, args?: unknown): Promise<void> {
  switch (command) {
    case logic.SERVER_COMMANDS.objAsLua:
      if (typeof result === "string") {
        await openObjDocument(result, args);
      }
      break;
    case logic.SERVER_COMMANDS.showStepValues: {
      // The values show as inlay hints in the script: bring it up beside the case.
      const script = logic.shownScript(result);
      if (script !== undefined) {
        const document = await vscode.workspace.openTextDocument(vscode.Uri.file(script));
        await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true });
      }
      break;
    }
    case logic.SERVER_COMMANDS.runAll: {
      const counts = logic.parseRunAll(result);
      if (counts !== undefined) {
        const view = showCounts(counts);
        void vscode.window.setStatusBarMessage(view.tooltip.replace(/ Click.*$/, ""), 5000);
      }
      break;
    }
    case logic.SERVER_COMMANDS.acceptExpected: {
      const message = logic.acceptMessage(result);
      if (message.level === "warning") {
        void vscode.window.showWarningMessage(message.text);
      } else {
        void vscode.window.showInformationMessage(message.text);
      }
      break;
    }
  }
}

/** The text of each open `kruise-lua:` document (read-only: a content provider serves it). */
const objDocuments = new Map<string, string>();
const objChanged = new vscode.EventEmitter<vscode.Uri>();
const objProvider: vscode.TextDocumentContentProvider = {
  onDidChange: objChanged.event,
  provideTextDocumentContent: (uri) => objDocuments.get(uri.toString()) ?? "",
};

/** Shows a step's obj in its one read-only document (refreshed, not duplicated, on each click). */
async function openObjDocument(source: string, args: unknown): Promise<void> {
  const where = logic.objDocument(args);
  if (where === undefined) {
    const untitled = await vscode.workspace.openTextDocument({ language: "lua", content: source });
    await vscode.window.showTextDocument(untitled, { viewColumn: vscode.ViewColumn.Beside, preview: true });
    return;
  }
  const uri = vscode.Uri.from({ scheme: logic.OBJ_SCHEME, path: where.path, query: where.query });
  const key = uri.toString();
  const changed = objDocuments.has(key) && objDocuments.get(key) !== source;
  objDocuments.set(key, source);
  if (changed) {
    objChanged.fire(uri);
  }
  let document = await vscode.workspace.openTextDocument(uri);
  if (document.languageId !== "lua") {
    document = await vscode.languages.setTextDocumentLanguage(document, "lua");
  }
  await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preview: true });
}

function showCounts(counts: logic.Counts | undefined): logic.StatusView {
  const view = logic.statusView(counts);
  status.text = view.text;
  status.tooltip = view.tooltip;
  status.backgroundColor =
    view.level === "error" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
  status.show();
  return view;
}

function diagnosticCode(diagnostic: vscode.Diagnostic): string | undefined {
  const code = diagnostic.code;
  if (typeof code === "object" && code !== null) {
    return String(code.value);
  }
  return code === undefined ? undefined : String(code);
}

let refreshTimer: ReturnType<typeof setTimeout> | undefined;

/** Diagnostics arrive in bursts (one publish per file of a run): count once the burst is over. */
function scheduleCountRefresh(): void {
  if (refreshTimer !== undefined) {
    clearTimeout(refreshTimer);
  }
  refreshTimer = setTimeout(() => {
    refreshTimer = undefined;
    refreshCountsFromDiagnostics();
  }, 150);
}

/** Follows every run: the totals of the per-script summary diagnostics. */
function refreshCountsFromDiagnostics(): void {
  if (client === undefined) {
    return;
  }
  const messages: string[] = [];
  for (const [, diagnostics] of vscode.languages.getDiagnostics()) {
    for (const d of diagnostics) {
      if (d.source === logic.DIAGNOSTIC_SOURCE && diagnosticCode(d) === "summary") {
        messages.push(d.message);
      }
    }
  }
  const counts = logic.countsFromSummaries(messages);
  showCounts(counts.scripts > 0 ? counts : undefined);
}

function resolveEnv(): logic.ResolveEnv {
  return {
    pathVariable: process.env.PATH ?? process.env.Path,
    platform: process.platform,
    home: os.homedir(),
    workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
    pathExt: process.env.PATHEXT,
    bundled: bundledServer,
    isExecutable: logic.defaultIsExecutable,
  };
}

async function reportMissingServer(message: string): Promise<void> {
  output.appendLine(message);
  if (missingReported) {
    return;
  }
  missingReported = true;
  const copy = "Copy install command";
  const settings = "Open settings";
  const choice = await vscode.window.showErrorMessage(message, copy, settings);
  if (choice === copy) {
    await vscode.env.clipboard.writeText(logic.INSTALL_COMMAND);
  } else if (choice === settings) {
    await vscode.commands.executeCommand("workbench.action.openSettings", "kruiseLua.server.path");
  }
}

async function start(): Promise<LanguageClient | undefined> {
  const config = vscode.workspace.getConfiguration("kruiseLua");
  const resolved = logic.resolveServerPath(config.get<string>("server.path"), resolveEnv());
  if (!resolved.ok) {
    await reportMissingServer(resolved.message);
    return undefined;
  }
  const extraArgs = config.get<string[]>("server.extraArgs") ?? [];
  const serverOptions: ServerOptions = {
    command: resolved.command,
    args: ["lsp", ...extraArgs],
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: documentSelector(),
    initializationOptions: logic.initializationOptions(rawSettings()),
    outputChannel: output,
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    middleware,
  };
  const created = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
  current = created;
  created.onDidChangeState((event) => {
    if (event.newState === State.Stopped) {
      forwarded.clear();
      showCounts(undefined);
    }
  });
  output.appendLine(logic.serverChoiceLine(resolved));
  note(`starting ${resolved.command} lsp`);
  try {
    await created.start();
    note(`language server ready, ${Date.now() - activatedAt} ms after the extension's activation`);
  } catch (error) {
    current = undefined;
    void vscode.window.showErrorMessage(`kruise-lua: the language server did not start: ${String(error)}`);
    return undefined;
  }
  reportSettingProblems();
  showCounts(undefined);
  return created;
}

/** Starts the client once (concurrent callers share the start). */
function ensureStarted(): Promise<LanguageClient | undefined> {
  if (client !== undefined) {
    return Promise.resolve(client);
  }
  if (starting === undefined) {
    starting = start().then((started) => {
      client = started;
      starting = undefined;
      return started;
    });
  }
  return starting;
}

async function stop(): Promise<void> {
  const running = client;
  client = undefined;
  current = undefined;
  forwarded.clear();
  if (running !== undefined) {
    await running.stop();
  }
}

async function execute(command: string, args: unknown[]): Promise<unknown> {
  if (client === undefined) {
    missingReported = false; // an explicit command says again why nothing happens
  }
  const running = await ensureStarted();
  if (running === undefined) {
    return undefined;
  }
  try {
    return await running.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    void vscode.window.showErrorMessage(`kruise-lua: ${message}`);
    return undefined;
  }
}

/** The test case in the active editor, or a message saying why there is none. */
function activeCase(): vscode.TextEditor | undefined {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || kindOf(editor.document) !== "testdata") {
    void vscode.window.showWarningMessage("kruise-lua: open a test case (a YAML file in a script's testdata folder) first.");
    return undefined;
  }
  return editor;
}

/** The step under the cursor, else one the user picks (0-based). */
async function pickStep(editor: vscode.TextEditor): Promise<number | undefined> {
  const text = editor.document.getText();
  const atCursor = logic.stepAtLine(text, editor.selection.active.line);
  if (atCursor !== undefined) {
    return atCursor;
  }
  const count = logic.stepCount(text);
  if (count <= 1) {
    return 0;
  }
  const items = Array.from({ length: count }, (_, i) => ({ label: `step ${i + 1}`, step: i }));
  const picked = await vscode.window.showQuickPick(items, { placeHolder: "Which step?" });
  return picked?.step;
}

async function runAllCommand(): Promise<void> {
  const result = await execute(logic.SERVER_COMMANDS.runAll, []);
  await presentCommandResult(logic.SERVER_COMMANDS.runAll, result);
}

async function showObjCommand(): Promise<void> {
  const editor = activeCase();
  if (editor === undefined) {
    return;
  }
  const step = await pickStep(editor);
  if (step === undefined) {
    return;
  }
  const args = logic.objArguments(editor.document.uri.toString(), step);
  const result = await execute(logic.SERVER_COMMANDS.objAsLua, args);
  await presentCommandResult(logic.SERVER_COMMANDS.objAsLua, result, args);
}

async function showStepValuesCommand(): Promise<void> {
  const editor = activeCase();
  if (editor === undefined) {
    return;
  }
  const step = await pickStep(editor);
  if (step === undefined) {
    return;
  }
  const args = logic.objArguments(editor.document.uri.toString(), step);
  const result = await execute(logic.SERVER_COMMANDS.showStepValues, args);
  await presentCommandResult(logic.SERVER_COMMANDS.showStepValues, result);
}

async function acceptCommand(all: boolean): Promise<void> {
  const editor = activeCase();
  if (editor === undefined) {
    return;
  }
  const step = all ? undefined : await pickStep(editor);
  if (!all && step === undefined) {
    return;
  }
  const args = logic.acceptArguments(editor.document.uri.toString(), step);
  const result = await execute(logic.SERVER_COMMANDS.acceptExpected, args);
  if (result !== undefined) {
    await presentCommandResult(logic.SERVER_COMMANDS.acceptExpected, result);
  }
}

/** Starts debugging the step a "▶ debug step N" lens names. */
async function debugStepCommand(arg: unknown): Promise<void> {
  const made = logic.debugConfiguration(arg);
  if (!made.ok) {
    void vscode.window.showErrorMessage(made.message);
    return;
  }
  await vscode.debug.startDebugging(vscode.workspace.workspaceFolders?.[0], made.config);
}

/** Debug sessions of type `kruise-lua` run `kruise-lua dap` (the same binary as the server). */
const debugAdapters: vscode.DebugAdapterDescriptorFactory = {
  createDebugAdapterDescriptor: async () => {
    const config = vscode.workspace.getConfiguration("kruiseLua");
    const resolved = logic.resolveServerPath(config.get<string>("server.path"), resolveEnv());
    if (!resolved.ok) {
      missingReported = false;
      await reportMissingServer(resolved.message);
      return undefined;
    }
    return new vscode.DebugAdapterExecutable(resolved.command, logic.DAP_ARGS);
  },
};

/**
 * Run and Debug without a launch.json: F5 on a script or a case debugs step 1 of the case (the
 * script's first case, or the case open); "create a launch.json" offers the same, filled in.
 */
const debugConfigurations: vscode.DebugConfigurationProvider = {
  provideDebugConfigurations: async () => {
    const made = await launchForActiveFile();
    return made !== undefined ? [made] : [];
  },
  resolveDebugConfiguration: async (_folder, config) => {
    if (!logic.isEmptyLaunch(config)) {
      return config;
    }
    const made = await launchForActiveFile();
    if (made === undefined) {
      void vscode.window.showErrorMessage(
        "kruise-lua: open a traffic-routing script or one of its test cases to debug a step (or add a launch configuration).",
      );
      return undefined;
    }
    return made;
  },
};

/** Step 1 of the case open, or of the first case of the script open. */
async function launchForActiveFile(): Promise<vscode.DebugConfiguration | undefined> {
  const file = vscode.window.activeTextEditor?.document.uri;
  if (file === undefined || file.scheme !== "file") {
    return undefined;
  }
  const targets = logic.debugTargets(file.fsPath);
  if (targets === undefined) {
    return undefined;
  }
  let casePath = targets.case;
  if (casePath === undefined && targets.testdata !== undefined) {
    const cases = await vscode.workspace.findFiles(
      new vscode.RelativePattern(vscode.Uri.file(targets.testdata), "**/*.{yaml,yml}"),
      undefined,
      50,
    );
    casePath = cases.map((c) => c.fsPath).sort()[0];
  }
  if (casePath === undefined) {
    return undefined;
  }
  const made = logic.debugConfiguration({ script: targets.script, case: casePath, step: 1 });
  return made.ok ? made.config : undefined;
}

async function workspaceHasScripts(): Promise<boolean> {
  // The usual layout first (a stat); the file search only when it is not there.
  if ((vscode.workspace.workspaceFolders ?? []).some((f) => f.uri.scheme === "file" && logic.holdsScriptTree(f.uri.fsPath))) {
    return true;
  }
  const found = await vscode.workspace.findFiles(
    `{${logic.SCRIPT_PATTERNS.join(",")}}`,
    "**/{node_modules,target,.git}/**",
    1,
  );
  return found.length > 0;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  activatedAt = Date.now();
  output = vscode.window.createOutputChannel(CLIENT_NAME);
  note(`activated (module loaded ${activatedAt - loadedAt} ms before)`);
  bundledServer = context.asAbsolutePath(
    path.join("server", process.platform === "win32" ? "kruise-lua.exe" : "kruise-lua"),
  );
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 10);
  status.name = "kruise-lua test cases";
  status.command = "kruiseLua.runAll";
  context.subscriptions.push(output, status);

  context.subscriptions.push(
    vscode.commands.registerCommand("kruiseLua.runAll", runAllCommand),
    vscode.commands.registerCommand("kruiseLua.showObj", showObjCommand),
    vscode.commands.registerCommand("kruiseLua.showStepValues", showStepValuesCommand),
    vscode.commands.registerCommand("kruiseLua.hideStepValues", async () => {
      await execute(logic.SERVER_COMMANDS.hideStepValues, []);
    }),
    vscode.commands.registerCommand("kruiseLua.acceptStep", () => acceptCommand(false)),
    vscode.commands.registerCommand("kruiseLua.acceptAll", () => acceptCommand(true)),
    vscode.commands.registerCommand("kruiseLua.showOutput", () => output.show(true)),
    vscode.commands.registerCommand(logic.DEBUG_STEP_COMMAND, debugStepCommand),
    vscode.debug.registerDebugAdapterDescriptorFactory(logic.DEBUG_TYPE, debugAdapters),
    vscode.debug.registerDebugConfigurationProvider(logic.DEBUG_TYPE, debugConfigurations),
    vscode.debug.registerDebugConfigurationProvider(
      logic.DEBUG_TYPE,
      debugConfigurations,
      vscode.DebugConfigurationProviderTriggerKind.Dynamic,
    ),
    vscode.workspace.registerTextDocumentContentProvider(logic.OBJ_SCHEME, objProvider),
    objChanged,
    vscode.workspace.onDidCloseTextDocument((document) => {
      if (document.uri.scheme === logic.OBJ_SCHEME) {
        objDocuments.delete(document.uri.toString());
      }
    }),
    vscode.commands.registerCommand("kruiseLua.restartServer", async () => {
      missingReported = false;
      await stop();
      await ensureStarted();
    }),
    vscode.languages.onDidChangeDiagnostics(scheduleCountRefresh),
    vscode.workspace.onDidOpenTextDocument((document) => {
      if (client === undefined && isRelevant(document)) {
        void ensureStarted();
      }
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (!event.affectsConfiguration("kruiseLua")) {
        return;
      }
      if (event.affectsConfiguration("kruiseLua.server")) {
        missingReported = false;
        await stop();
        await ensureStarted();
        return;
      }
      if (client !== undefined) {
        reportSettingProblems();
        await client.sendNotification(DidChangeConfigurationNotification.type, {
          settings: logic.initializationOptions(rawSettings()),
        });
      }
    }),
  );

  if (vscode.workspace.textDocuments.some(isRelevant) || (await workspaceHasScripts())) {
    await ensureStarted();
  }
}

export async function deactivate(): Promise<void> {
  if (refreshTimer !== undefined) {
    clearTimeout(refreshTimer);
  }
  await stop();
}
