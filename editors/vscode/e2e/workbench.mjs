//! Driving VS Code's workbench (code-server in Chromium) the way a person does: keyboard for
//! commands and navigation, the workbench's own DOM classes to read what is shown. Tests use
//! only these helpers, so a change of VS Code's DOM is fixed here once.

import * as fs from "node:fs";
import * as path from "node:path";

/** Default wait for something to appear; the suite's global limit bounds the sum. */
export const WAIT_MS = 30_000;

/** What the workbench shows, by VS Code's stable class names. */
export const SELECTORS = {
  workbench: ".monaco-workbench",
  statusBar: ".part.statusbar",
  statusItem: ".statusbar-item",
  quickInput: ".quick-input-widget",
  quickInputBox: ".quick-input-widget .quick-input-box input",
  quickInputRow: ".quick-input-widget .quick-input-list .monaco-list-row",
  // (Not the rename box: Monaco draws it as an editor of its own inside the editor.)
  activeEditor: ".editor-group-container.active .editor-instance .monaco-editor:not(.rename-box)",
  codeLens: ".codelens-decoration",
  markersPanel: ".markers-panel",
  markerRow: ".markers-panel .monaco-list-row",
  problemsFilter: ".panel .viewpane-filter input",
  suggestRow: ".suggest-widget.visible .monaco-list-row",
  hover: ".monaco-hover:not(.hidden) .monaco-hover-content",
  actionItem: ".action-widget .monaco-list-row.action",
  activeTab: ".editor-group-container.active .tab.active",
  // The debugger: the floating toolbar, the Run and Debug views, the debug console, the editor's
  // breakpoint glyphs and the current line's decoration.
  debugToolbar: ".debug-toolbar",
  callStackRow: ".debug-call-stack .monaco-list-row",
  variablesRow: ".debug-variables .monaco-list-row",
  replRow: ".repl .monaco-list-row",
  breakpointGlyph: ".codicon-debug-breakpoint",
  currentLine: ".debug-top-stack-frame-line",
  // Editing features: the rename box (F2), signature help, the token inspector.
  renameInput: ".rename-box .rename-input",
  parameterHints: ".parameter-hints-widget.visible",
  tokenInspector: ".token-inspect-widget",
  // The peek view of several locations (go to type definition, references): its file list.
  peekRow: ".peekview-widget .monaco-list-row",
  // Document highlights: a write (declaration, assignment) and a read of the symbol.
  highlightWrite: ".wordHighlightStrong",
  highlightRead: ".wordHighlight",
  // The side bar's lists (the call hierarchy of the References view, Run and Debug).
  sideBarRow: ".part.sidebar .monaco-list-row",
  notification: ".notifications-toasts .notification-toast",
  // The Settings editor: its search box and a boolean setting's checkbox.
  settingsSearch: ".settings-editor .settings-header .suggest-input-container",
  settingRow: ".settings-editor .setting-item-bool",
  settingCheckbox: ".setting-value-checkbox",
};

export class Workbench {
  /**
   * @param {import("playwright-core").Page} page
   * @param {{workspace: string, screenshots: string}} dirs
   */
  constructor(page, dirs) {
    this.page = page;
    this.workspace = dirs.workspace;
    this.screenshots = dirs.screenshots;
  }

  /** Waits until the workbench is up and the extension shows its status bar item. */
  async ready() {
    await this.page.locator(SELECTORS.workbench).waitFor({ timeout: 120_000 });
    await this.page.locator(SELECTORS.statusBar).waitFor({ timeout: WAIT_MS });
  }

  /** A PNG of the whole window, kept as a test artifact; returns its path. */
  async screenshot(name) {
    fs.mkdirSync(this.screenshots, { recursive: true });
    const file = path.join(this.screenshots, `${name.replace(/[^A-Za-z0-9_.-]+/g, "-")}.png`);
    // Animations finished first: a hover caught while fading in looks greyed out.
    await this.page.screenshot({ path: file, animations: "disabled" });
    return file;
  }

  /** The path of a workspace file on disk. */
  file(relative) {
    return path.join(this.workspace, relative);
  }

  /** Runs a command from the palette by its title (as a person types it after F1). */
  async runCommand(title) {
    await this.page.keyboard.press("F1");
    const box = this.page.locator(SELECTORS.quickInputBox);
    await box.waitFor({ timeout: WAIT_MS });
    await box.fill(`>${title}`);
    await this.waitForText(SELECTORS.quickInputRow, title, { exact: false });
    await this.page.keyboard.press("Enter");
    await this.page.locator(SELECTORS.quickInput).waitFor({ state: "hidden", timeout: WAIT_MS });
  }

  /** Opens a workspace file through Quick Open and waits for its editor to be the active one. */
  async openFile(relative) {
    await this.page.keyboard.press("F1");
    const box = this.page.locator(SELECTORS.quickInputBox);
    await box.waitFor({ timeout: WAIT_MS });
    // Without the leading ">" the palette is Quick Open (files).
    await box.fill(relative);
    const name = path.basename(relative);
    const dir = path.dirname(relative);
    const row = this.page.locator(SELECTORS.quickInputRow).filter({ hasText: name }).filter({ hasText: dir }).first();
    await row.waitFor({ timeout: WAIT_MS });
    await row.click();
    await this.page.locator(SELECTORS.quickInput).waitFor({ state: "hidden", timeout: WAIT_MS });
    await this.page
      .locator(SELECTORS.activeTab)
      .filter({ hasText: name })
      .waitFor({ timeout: WAIT_MS });
    await this.page.locator(SELECTORS.activeEditor).waitFor({ timeout: WAIT_MS });
    await this.focusEditor();
  }

  /** Puts the keyboard focus in the active editor's text. */
  async focusEditor() {
    await this.page.keyboard.press("Escape");
    await this.runCommandById("workbench.action.focusActiveEditorGroup");
  }

  /** Runs a command by its id through the palette's own "run by id" behaviour (a title search). */
  async runCommandById(id) {
    // The palette matches command ids too; the first row for an exact id is that command.
    await this.page.keyboard.press("F1");
    const box = this.page.locator(SELECTORS.quickInputBox);
    await box.waitFor({ timeout: WAIT_MS });
    await box.fill(`>${id}`);
    await this.page.locator(SELECTORS.quickInputRow).first().waitFor({ timeout: WAIT_MS });
    await this.page.keyboard.press("Enter");
    await this.page.locator(SELECTORS.quickInput).waitFor({ state: "hidden", timeout: WAIT_MS });
  }

  /** Moves the cursor of the active editor to a 1-based line and column (Ctrl+G). */
  async gotoLine(line, column = 1) {
    await this.focusEditor();
    await this.page.keyboard.press("Control+g");
    const box = this.page.locator(SELECTORS.quickInputBox);
    await box.waitFor({ timeout: WAIT_MS });
    await box.fill(`:${line}:${column}`);
    await this.page.keyboard.press("Enter");
    await this.page.locator(SELECTORS.quickInput).waitFor({ state: "hidden", timeout: WAIT_MS });
  }

  /**
   * Opens an empty line below the first line of a workspace file holding `needle`, the cursor on
   * it; returns where `needle` is (as `positionOf`).
   */
  async openLineBelow(relative, needle) {
    const at = this.positionOf(relative, needle);
    await this.gotoLine(at.line, 1);
    await this.page.keyboard.press("End");
    await this.page.keyboard.press("Enter");
    return at;
  }

  /** The 1-based line and column of the first occurrence of `needle` in a workspace file. */
  positionOf(relative, needle) {
    const lines = fs.readFileSync(this.file(relative), "utf8").split("\n");
    for (let i = 0; i < lines.length; i++) {
      const column = lines[i].indexOf(needle);
      if (column >= 0) {
        return { line: i + 1, column: column + 1 };
      }
    }
    throw new Error(`${relative}: no "${needle}"`);
  }

  /** Replaces the rest of the cursor's line with `text` (typed, as a person would). */
  async replaceToEndOfLine(text) {
    await this.page.keyboard.press("Shift+End");
    await this.page.keyboard.type(text);
  }

  /**
   * Waits until some element matching `selector` shows `text` (a string, contained, or a
   * RegExp) and returns that element's text.
   */
  async waitForText(selector, text, { timeout = WAIT_MS } = {}) {
    // The first *visible* match: a list can hold rows in the DOM that are out of sight, and
    // waiting on the first match in document order would wait on such a row.
    const locator = this.page.locator(selector).filter({ hasText: text }).filter({ visible: true }).first();
    try {
      await locator.waitFor({ timeout });
    } catch (error) {
      const texts = (l) => l.allInnerTexts().catch(() => []);
      const visible = await texts(this.page.locator(selector).filter({ visible: true }));
      const all = await texts(this.page.locator(selector));
      throw new Error(
        `no ${selector} showing ${text} within ${timeout} ms; visible: ${JSON.stringify(visible.slice(0, 20))}` +
          `; in the DOM: ${JSON.stringify(all.slice(0, 20))}`,
        { cause: error },
      );
    }
    return locator.innerText();
  }

  /** The texts of every element matching `selector` now. */
  async texts(selector) {
    return this.page.locator(selector).allInnerTexts();
  }

  /**
   * Opens the Problems view, showing only problems whose file or text matches `filter` (its
   * list draws only the rows in sight, so a test filters rather than scrolls).
   */
  async showProblems(filter = "") {
    // The view's focus command, not "View: Toggle Problems" (workbench.actions.view.problems):
    // that one hides the panel when VS Code counts the Problems view as focused, which made
    // the panel vanish under a test once (CI, stop 32).
    await this.runCommandById("workbench.panel.markers.view.focus");
    await this.page.locator(SELECTORS.markersPanel).waitFor({ timeout: WAIT_MS });
    const box = this.page.locator(SELECTORS.problemsFilter).first();
    await box.waitFor({ timeout: WAIT_MS });
    await box.fill(filter);
  }

  /**
   * Opens the Problems view filtered by `filter` and waits for a row showing `text`; returns
   * its text. The filter is typed again while no such row shows: VS Code can keep a problem
   * hidden that the filter matches when the problem's message changes under it (a finding
   * on a word still being typed, then on the whole word: the view said "Showing 0 of 1").
   */
  async waitForProblem(filter, text, { timeout = WAIT_MS } = {}) {
    const until = Date.now() + timeout;
    for (;;) {
      await this.showProblems(filter);
      const left = until - Date.now();
      try {
        return await this.waitForText(SELECTORS.markerRow, text, { timeout: Math.min(5_000, Math.max(left, 1)) });
      } catch (error) {
        if (Date.now() >= until) throw error;
        await this.page.locator(SELECTORS.problemsFilter).first().fill("");
      }
    }
  }

  /**
   * Clicks the code lens whose title matches `title` (a string, contained, or a RegExp); the
   * first lens a session asks for waits for the server to start (a longer `timeout`).
   */
  async clickCodeLens(title, { timeout = WAIT_MS } = {}) {
    const lens = this.page.locator(`${SELECTORS.codeLens} a`).filter({ hasText: title }).first();
    try {
      await lens.waitFor({ timeout });
    } catch (error) {
      const shown = await this.texts(SELECTORS.codeLens).catch(() => []);
      throw new Error(`no code lens ${title}; shown: ${JSON.stringify(shown)}`, { cause: error });
    }
    await lens.click();
  }

  /** The lines of the active editor in sight, as text (Monaco draws spaces as U+00A0). */
  async editorText() {
    const text = await this.page.locator(`${SELECTORS.activeEditor} .view-lines`).innerText();
    return text.replace(/\u00a0/g, " ");
  }

  /**
   * The lines of the active editor in sight, one string each (each line's own text: Monaco
   * draws inlay hints inside it, and `editorText`'s innerText does not keep them on their line).
   */
  async editorLines() {
    const lines = await this.page.locator(`${SELECTORS.activeEditor} .view-line`).allTextContents();
    return lines.map((l) => l.replace(/\u00a0/g, " "));
  }

  /** The status bar's cursor item, e.g. "Ln 50, Col 19 (8 selected)". */
  async cursorStatus() {
    const items = await this.texts(SELECTORS.statusItem);
    const found = items.find((t) => /Ln \d+, Col \d+/.test(t));
    if (found === undefined) {
      throw new Error(`no cursor position in the status bar: ${JSON.stringify(items)}`);
    }
    return found;
  }

  /**
   * Sets a boolean user setting through the Settings editor (search, click its checkbox), waits
   * until VS Code wrote it to `userData`'s settings.json, and closes the editor (a modal in
   * newer code-servers: Escape).
   */
  async setBooleanSetting(id, value, userData) {
    await this.page.keyboard.press("F1");
    await this.page.locator(SELECTORS.quickInputBox).fill(">Preferences: Open Settings (UI)");
    await this.waitForText(SELECTORS.quickInputRow, "Open Settings (UI)");
    await this.page.keyboard.press("Enter");
    await this.page.locator(SELECTORS.quickInput).waitFor({ state: "hidden", timeout: WAIT_MS });
    await this.page.locator(SELECTORS.settingsSearch).waitFor({ timeout: WAIT_MS });
    await this.page.locator(SELECTORS.settingsSearch).click();
    await this.page.keyboard.type(id);
    // The row of that setting (its title is the id's last part in words, "Parameter Names"):
    // until the search applies, the editor lists other settings.
    const words = id
      .split(".")
      .pop()
      .replace(/([a-z])([A-Z])/g, "$1 $2");
    const box = this.page
      .locator(SELECTORS.settingRow)
      .filter({ hasText: new RegExp(words, "i") })
      .locator(SELECTORS.settingCheckbox)
      .first();
    await box.waitFor({ timeout: WAIT_MS });
    await box.click();
    // Written by VS Code to the user's (or the remote machine's) settings file.
    const files = ["User", "Machine"].map((scope) => path.join(userData, scope, "settings.json"));
    const read = (file) => {
      try {
        return JSON.parse(fs.readFileSync(file, "utf8"))[id];
      } catch {
        return undefined;
      }
    };
    // Back to the default, VS Code may drop the key instead of writing `false`.
    const done = () => (value ? files.some((f) => read(f) === true) : files.every((f) => read(f) !== true));
    try {
      await this.until(`${id} = ${value} in the settings files`, done);
    } catch (error) {
      const shown = files.map((f) => (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : "(none)")).join("\n");
      throw new Error(`${error.message}; the settings files:\n${shown}`);
    }
    await this.page.keyboard.press("Escape");
    await this.page.locator(".settings-editor").first().waitFor({ state: "hidden", timeout: 5_000 }).catch(async () => {
      await this.runCommandById("workbench.action.closeActiveEditor");
    });
  }

  /** Opens the quick fix menu at the cursor (Ctrl+.) and picks the action whose title matches. */
  async quickFix(title) {
    const item = this.page.locator(SELECTORS.actionItem).filter({ hasText: title }).first();
    // The menu lists what the server answered when it opened; on a busy machine the answer can
    // come late ("no code actions"), so the menu is reopened until the action is there.
    const end = Date.now() + 2 * WAIT_MS;
    for (;;) {
      await this.page.keyboard.press("Control+.");
      try {
        await item.waitFor({ timeout: 5_000 });
        break;
      } catch (error) {
        if (Date.now() > end) {
          const shown = await this.texts(SELECTORS.actionItem).catch(() => []);
          throw new Error(`no quick fix "${title}"; offered: ${JSON.stringify(shown)}`, { cause: error });
        }
        await this.page.keyboard.press("Escape");
      }
    }
    await item.click();
    await this.page.locator(SELECTORS.actionItem).first().waitFor({ state: "hidden", timeout: WAIT_MS });
  }

  /** Discards the active editor's unsaved changes. */
  async revertActive() {
    await this.runCommandById("workbench.action.files.revert");
  }

  /** Waits until the active editor has unsaved changes (an edit, e.g. a quick fix's, landed). */
  async waitDirty() {
    await this.page.locator(`${SELECTORS.activeTab}.dirty`).waitFor({ timeout: WAIT_MS });
  }

  /** Saves the active editor (Ctrl+S in its text) and waits until the save is done. */
  async save() {
    await this.focusEditor();
    await this.page.keyboard.press("Control+s");
    await this.page.locator(`${SELECTORS.activeTab}:not(.dirty)`).waitFor({ timeout: WAIT_MS });
  }

  /** Closes the active editor, discarding an untitled one's text (it is the test's own). */
  async closeActive() {
    await this.runCommandById("workbench.action.revertAndCloseActiveEditor");
  }

  /** Polls `check` (sync or async, returns truthy when done) until it holds or time runs out. */
  async until(what, check, { timeout = WAIT_MS, interval = 200 } = {}) {
    const end = Date.now() + timeout;
    let last;
    for (;;) {
      try {
        const value = await check();
        if (value) {
          return value;
        }
      } catch (error) {
        last = error;
      }
      if (Date.now() > end) {
        throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? `: ${last.message}` : ""}`);
      }
      await this.page.waitForTimeout(interval);
    }
  }
}
