// A stand-in for the `vscode` module, enough to load the bundled extension (and
// vscode-languageclient inside it) under plain node and record what it shows the user.

import * as fs from "node:fs";
import * as path from "node:path";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const Module = require("node:module");

export const ROOT = path.resolve(__dirname, "..", "..");
export const BUNDLE = path.join(ROOT, "dist", "extension.js");

export interface Recorded {
  commands: Map<string, (...args: unknown[]) => unknown>;
  errors: string[];
  warnings: string[];
  infos: string[];
  outputs: string[];
  /** Every text the status-bar item was shown with. */
  status: string[];
  /** Documents opened (untitled, or `kruise-lua:` ones with their `uri`): language and content. */
  opened: { language: string; content: string; uri?: Uri }[];
  /** Diagnostics the client set, by URI string. */
  diagnostics: Map<string, { message: string; code?: unknown; source?: string }[]>;
  /** Debug adapter factories registered, by debugger type. */
  debugAdapters: Map<string, { createDebugAdapterDescriptor: (...args: unknown[]) => unknown }>;
  /** Configurations `debug.startDebugging` was called with. */
  debugStarts: unknown[];
  /** Debug configuration providers registered, by debugger type. */
  debugConfigurationProviders: Map<string, any[]>;
  /** Text document content providers registered, by scheme. */
  contentProviders: Map<string, any>;
}

export class Uri {
  constructor(
    readonly fsPath: string,
    readonly scheme = "file",
    readonly query = "",
  ) {}
  get path() {
    return this.fsPath;
  }
  toString() {
    return this.scheme === "file" ? `file://${this.fsPath}` : `${this.scheme}:${this.fsPath}?${encodeURIComponent(this.query)}`;
  }
  static file(p: string) {
    return new Uri(p);
  }
  static from(c: { scheme: string; path: string; query?: string }) {
    return new Uri(c.path, c.scheme, c.query ?? "");
  }
  static parse(s: string) {
    return new Uri(decodeURIComponent(s.replace(/^file:\/\//, "")));
  }
}

/** A text editor on a file, with the cursor on `line` (0-based). */
export function editorOn(file: string, line: number) {
  const text = fs.readFileSync(file, "utf8");
  return {
    document: {
      uri: Uri.file(file),
      fileName: file,
      languageId: file.endsWith(".lua") ? "lua" : "yaml",
      version: 1,
      getText: () => text,
    },
    selection: { active: { line, character: 0 } },
  };
}

export function stubVscode(settings: Record<string, unknown>, workspaceFolder: string, recorded: Recorded) {
  const disposable = { dispose() {} };
  const event = () => disposable;
  // Whatever is not modelled is an inert function/class.
  const inert: any = new Proxy(function () {}, {
    get: (_t, prop) => (prop === "then" ? undefined : inert),
    apply: () => inert,
    construct: () => inert,
  });
  const namespace = (members: Record<string, unknown>) =>
    new Proxy(members, {
      get: (target, prop) => (prop in target ? (target as any)[prop] : prop === "then" ? undefined : inert),
    });
  class Disposable {
    constructor(private readonly f: () => void = () => {}) {}
    dispose() {
      this.f();
    }
    static from() {
      return disposable;
    }
  }
  class EventEmitter {
    event = event;
    fire() {}
    dispose() {}
  }
  class ThemeColor {
    constructor(readonly id: string) {}
  }
  class CancellationTokenSource {
    token = { isCancellationRequested: false, onCancellationRequested: event };
    cancel() {
      this.token.isCancellationRequested = true;
    }
    dispose() {}
  }
  // What vscode-languageclient builds diagnostics from.
  class Position {
    constructor(
      readonly line: number,
      readonly character: number,
    ) {}
  }
  class Range {
    constructor(
      readonly start: Position,
      readonly end: Position,
    ) {}
  }
  class Diagnostic {
    code?: unknown;
    source?: string;
    constructor(
      readonly range: Range,
      readonly message: string,
      readonly severity?: number,
    ) {}
  }
  class DebugAdapterExecutable {
    constructor(
      readonly command: string,
      readonly args: string[],
    ) {}
  }
  const window: Record<string, unknown> = {
    activeTextEditor: undefined,
    visibleTextEditors: [],
    createOutputChannel: () => ({
      appendLine: (s: string) => recorded.outputs.push(s),
      append: (s: string) => recorded.outputs.push(s),
      show() {},
      clear() {},
      replace() {},
      dispose() {},
    }),
    createStatusBarItem: () => {
      const item: Record<string, unknown> = {
        show() {
          recorded.status.push(String(item.text));
        },
        hide() {},
        dispose() {},
      };
      return item;
    },
    showErrorMessage: async (m: string) => void recorded.errors.push(m),
    showWarningMessage: async (m: string) => void recorded.warnings.push(m),
    showInformationMessage: async (m: string) => void recorded.infos.push(m),
    setStatusBarMessage: (m: string) => {
      recorded.infos.push(m);
      return disposable;
    },
    showTextDocument: async () => undefined,
    showQuickPick: async () => undefined,
    onDidChangeActiveTextEditor: event,
    onDidChangeVisibleTextEditors: event,
  };
  // languages.onDidChangeDiagnostics fires whenever a collection changes, as in VS Code.
  const diagnosticListeners: (() => void)[] = [];
  const changed = () => diagnosticListeners.forEach((listener) => listener());
  const collection = (name: string) =>
    namespace({
      name,
      set: (uri: Uri, diagnostics: any[]) => {
        recorded.diagnostics.set(uri.toString(), diagnostics ?? []);
        changed();
      },
      delete: (uri: Uri) => {
        recorded.diagnostics.delete(uri.toString());
        changed();
      },
      clear: () => {
        recorded.diagnostics.clear();
        changed();
      },
      forEach() {},
      get: (uri: Uri) => recorded.diagnostics.get(uri.toString()),
      has: (uri: Uri) => recorded.diagnostics.has(uri.toString()),
      dispose() {},
    });
  return namespace({
    Uri,
    Position,
    Range,
    Diagnostic,
    DiagnosticSeverity: { Error: 0, Warning: 1, Information: 2, Hint: 3 },
    Disposable,
    DebugAdapterExecutable,
    EventEmitter,
    CancellationTokenSource,
    ThemeColor,
    version: "1.90.0",
    StatusBarAlignment: { Left: 1, Right: 2 },
    DebugConfigurationProviderTriggerKind: { Initial: 1, Dynamic: 2 },
    ViewColumn: { Beside: -2 },
    workspace: namespace({
      getConfiguration: (section?: string) => ({
        get: (key: string, fallback?: unknown) => {
          const full = section ? `${section}.${key}` : key;
          return full in settings ? settings[full] : fallback;
        },
        has: () => false,
        inspect: () => undefined,
        update: async () => undefined,
      }),
      workspaceFolders: [{ uri: Uri.file(workspaceFolder), name: "ws", index: 0 }],
      textDocuments: [],
      notebookDocuments: [],
      findFiles: async () => [Uri.file(path.join(workspaceFolder, "trafficRouting.lua"))],
      registerTextDocumentContentProvider: (scheme: string, provider: any) => {
        recorded.contentProviders.set(scheme, provider);
        return disposable;
      },
      openTextDocument: async (options: { language: string; content: string } | Uri) => {
        if (options instanceof Uri) {
          // A virtual document: its text from the content provider of its scheme.
          const content = recorded.contentProviders.get(options.scheme)?.provideTextDocumentContent(options) ?? "";
          const document = { uri: options, languageId: "lua", language: "lua", content, getText: () => content };
          recorded.opened.push(document);
          return document;
        }
        recorded.opened.push(options);
        return options;
      },
      ...Object.fromEntries(
        [
          "onDidOpenTextDocument",
          "onDidCloseTextDocument",
          "onDidChangeTextDocument",
          "onDidSaveTextDocument",
          "onWillSaveTextDocument",
          "onDidChangeConfiguration",
          "onDidChangeWorkspaceFolders",
          "onDidCreateFiles",
          "onDidRenameFiles",
          "onDidDeleteFiles",
          "onWillCreateFiles",
          "onWillRenameFiles",
          "onWillDeleteFiles",
          "onDidOpenNotebookDocument",
          "onDidChangeNotebookDocument",
          "onDidSaveNotebookDocument",
          "onDidCloseNotebookDocument",
        ].map((name) => [name, event]),
      ),
    }),
    window: namespace(window),
    commands: namespace({
      registerCommand: (id: string, f: (...args: unknown[]) => unknown) => {
        recorded.commands.set(id, f);
        return disposable;
      },
      executeCommand: async () => undefined,
    }),
    languages: namespace({
      onDidChangeDiagnostics: (listener: () => void) => {
        diagnosticListeners.push(listener);
        return disposable;
      },
      getDiagnostics: () => [...recorded.diagnostics.entries()].map(([uri, d]) => [Uri.parse(uri), d]),
      createDiagnosticCollection: collection,
      match: () => 0,
    }),
    debug: namespace({
      registerDebugAdapterDescriptorFactory: (type: string, factory: any) => {
        recorded.debugAdapters.set(type, factory);
        return disposable;
      },
      registerDebugConfigurationProvider: (type: string, provider: any) => {
        recorded.debugConfigurationProviders.set(type, [...(recorded.debugConfigurationProviders.get(type) ?? []), provider]);
        return disposable;
      },
      startDebugging: async (_folder: unknown, config: unknown) => {
        recorded.debugStarts.push(config);
        return true;
      },
    }),
    env: namespace({ language: "en", appName: "stub", machineId: "stub", uiKind: 1, clipboard: { writeText: async () => undefined } }),
  });
}

/** The `ExtensionContext` parts the extension uses; `extensionPath` is where its files are. */
export function extensionContext(extensionPath = "/nonexistent-extension") {
  return {
    subscriptions: [] as unknown[],
    extensionPath,
    asAbsolutePath: (relative: string) => path.join(extensionPath, relative),
  };
}

export function newRecorded(): Recorded {
  return {
    commands: new Map(),
    errors: [],
    warnings: [],
    infos: [],
    outputs: [],
    status: [],
    opened: [],
    diagnostics: new Map(),
    debugAdapters: new Map(),
    debugStarts: [],
    debugConfigurationProviders: new Map(),
    contentProviders: new Map(),
  };
}

/** Loads a fresh copy of the bundle with `vscode` resolved to `stub`. */
export function loadExtension(stub: unknown) {
  if (!fs.existsSync(BUNDLE)) {
    throw new Error("dist/extension.js is missing: run `npm run build` first");
  }
  const originalLoad = Module._load;
  Module._load = function (request: string, ...rest: unknown[]) {
    if (request === "vscode") {
      return stub;
    }
    return originalLoad.call(this, request, ...rest);
  };
  try {
    delete require.cache[BUNDLE];
    return require(BUNDLE);
  } finally {
    Module._load = originalLoad;
  }
}
