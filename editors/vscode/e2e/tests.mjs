//! The end-to-end tests: what a person sees of the extension in VS Code. Each test is
//! `{ name, run(wb, ctx) }`, runs after the previous one on the same window, leaves no editor
//! dirty, and ends with a screenshot; add one by appending to `tests`.

import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

import { SELECTORS, WAIT_MS } from "./workbench.mjs";

const ISTIO = "lua_configuration/networking.istio.io/VirtualService";
const ISTIO_SCRIPT = `${ISTIO}/trafficRouting.lua`;
const WEIGHTS_CASE = `${ISTIO}/testdata/weights.yaml`;

/** How many case files a script has (the lens counts cases, one per file). */
function caseCount(wb, scriptDir) {
  return fs.readdirSync(wb.file(`${scriptDir}/testdata`)).filter((f) => /\.ya?ml$/.test(f)).length;
}

/** Opens weights.yaml at its step 2 (traffic: 50%): Monaco draws the lenses of lines in sight. */
async function showStep2(wb) {
  await wb.openFile(WEIGHTS_CASE);
  const step2 = wb.positionOf(WEIGHTS_CASE, "- traffic: 50%");
  await wb.gotoLine(step2.line, 1);
}

/** The totals `kruise-lua check` reports for the workspace: what the status bar must show. */
function checkTotals(ctx, wb) {
  const out = execFileSync(ctx.serverBin, ["check", "--format", "json", "lua_configuration"], {
    cwd: wb.workspace,
    encoding: "utf8",
  });
  const cases = new Set();
  const failed = new Set();
  let steps = 0;
  for (const line of out.split("\n").filter((l) => l.trim() !== "")) {
    const step = JSON.parse(line);
    steps += 1;
    const id = `${step.script}\u0000${step.case}`;
    cases.add(id);
    if (step.status !== "pass") {
      failed.add(id);
    }
  }
  return { cases: cases.size, passed: cases.size - failed.size, steps };
}

/** The lines the extension wrote to its output channel (VS Code keeps them in a log file). */
function outputChannelLines(ctx) {
  const lines = [];
  const visit = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) {
        visit(file);
      } else if (/kruise-lua\.log$/.test(entry.name)) {
        lines.push(...fs.readFileSync(file, "utf8").split("\n"));
      }
    }
  };
  const logs = path.join(ctx.userData, "logs");
  if (fs.existsSync(logs)) {
    visit(logs);
  }
  return lines;
}

export const tests = [
  {
    name: "lens-and-status-bar",
    async run(wb, ctx) {
      const asked = Date.now();
      await wb.openFile(ISTIO_SCRIPT);
      const opened = Date.now();
      const n = caseCount(wb, ISTIO);
      assert.ok(n >= 2, `the Istio script has ${n} cases`);
      // The first test also waits for the extension to start the server and run every case.
      const lens = await wb.waitForText(SELECTORS.codeLens, `✓ ${n}/${n} cases pass`, { timeout: 90_000 });
      const shown = Date.now();
      // The cold-open figures of docs/BENCHMARKS.md (window asked for -> workbench -> editor -> lens).
      const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
      console.log(
        `# cold open: workbench ready ${s(ctx.workbenchReady - ctx.coldStart)}, ` +
          `script open ${s(opened - asked)} later, lens ${s(shown - opened)} after the editor ` +
          `(${s(shown - ctx.coldStart)} from the window; ${new Date(opened).toISOString()} -> ${new Date(shown).toISOString()})`,
      );
      assert.match(lens, new RegExp(`✓ ${n}/${n} cases pass`));
      const totals = checkTotals(ctx, wb);
      assert.equal(totals.passed, totals.cases, "every bundled case passes (kruise-lua check)");
      // Cases and steps, as `check` counts them (defect 12: "78/78" read as steps).
      const status = await wb.waitForText(SELECTORS.statusItem, `kruise-lua ${totals.cases} cases, ${totals.steps} steps`);
      assert.match(status, /kruise-lua \d+ cases, \d+ steps/);
      await wb.screenshot("lens-and-status-bar");
    },
  },
  {
    // Which binary runs: with a platform package and nothing on PATH, the bundled one; with
    // neither setting nor PATH, the one in ~/.cargo/bin (defect 8); with none, a message saying
    // how to set kruiseLua.server.path.
    name: "server-choice",
    async run(wb, ctx) {
      if (ctx.serverFrom === "missing") {
        const toast = await wb.waitForText(SELECTORS.notification, /was not found/, { timeout: 90_000 });
        assert.match(toast, /kruiseLua\.server\.path/, toast);
        assert.match(toast, /\.cargo[\\/]bin/, `the message names where it looked: ${toast}`);
        await wb.screenshot("server-missing");
        return;
      }
      const expected = {
        bundled: /using kruise-lua bundled with the extension: .*[\\/]server[\\/]kruise-lua(\.exe)?$/,
        setting: /using kruise-lua from the kruiseLua\.server\.path setting: /,
        "cargo-home": /using kruise-lua found in ~\/\.cargo\/bin: .*[\\/]\.cargo[\\/]bin[\\/]kruise-lua$/,
      }[ctx.serverFrom];
      const deadline = Date.now() + WAIT_MS;
      let lines = outputChannelLines(ctx);
      while (!lines.some((l) => expected.test(l)) && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        lines = outputChannelLines(ctx);
      }
      assert.ok(
        lines.some((l) => expected.test(l)),
        `the output channel does not say ${expected}:\n${lines.filter((l) => l.includes("kruise-lua")).join("\n")}`,
      );
      await wb.screenshot("server-choice");
    },
  },
  {
    name: "completion-after-obj",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      await wb.openLineBelow(ISTIO_SCRIPT, "local spec = obj.data.spec");
      // Typed at a person's pace; the suggest widget opens on the trigger character ".".
      await wb.page.keyboard.type("local probe = obj.", { delay: 40 });
      await wb.waitForText(SELECTORS.suggestRow, "canaryWeight", { timeout: 10_000 });
      const labels = await wb.texts(SELECTORS.suggestRow);
      for (const field of ["canaryWeight", "stableService", "data"]) {
        assert.ok(labels.some((l) => l.includes(field)), `completion lists ${field}: ${JSON.stringify(labels)}`);
      }
      await wb.screenshot("completion-after-obj");
      await wb.page.keyboard.press("Escape");
      await wb.revertActive();
    },
  },
  {
    name: "hover-docs",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      const at = wb.positionOf(ISTIO_SCRIPT, "obj.canaryWeight");
      await wb.gotoLine(at.line, at.column + "obj.".length + 2);
      // "Show or Focus Hover" (Ctrl+K Ctrl+I): the hover of the symbol under the cursor.
      await wb.page.keyboard.press("Control+k");
      await wb.page.keyboard.press("Control+i");
      const hover = await wb.waitForText(SELECTORS.hover, "canaryWeight");
      // The field's documentation and its value in each case and step (`weights: 20, 50, …`).
      assert.match(hover, /traffic percentage/, `the hover documents the field: ${hover}`);
      assert.match(hover, /weights: 20, 50, 100/, `the hover gives the values per case: ${hover}`);
      await wb.screenshot("hover-docs");
      await wb.page.keyboard.press("Escape");
    },
  },
  {
    name: "step-lens-shows-obj",
    async run(wb) {
      await wb.openFile(WEIGHTS_CASE);
      // The lens above `steps[1]` (traffic: 50%) opens the obj that step gets, as Lua.
      await wb.clickCodeLens(/step 2 .*show obj as Lua/);
      await wb.until("an editor with the obj of step 2", async () => {
        const text = await wb.editorText();
        return /local obj = \{/.test(text) && /canaryWeight = 50\b/.test(text);
      });
      await wb.screenshot("step-lens-shows-obj");
      // Defect 11: one read-only `kruise-lua:` document per step, not a new Untitled-N per click.
      const objTabs = wb.page.locator(".tab").filter({ hasText: "obj-step-2.lua" });
      assert.equal(await objTabs.count(), 1, "one tab for the obj of step 2");
      const shown = await wb.editorText();
      await wb.page.keyboard.type("x");
      assert.equal(await wb.editorText(), shown, "the obj document is read-only");
      await wb.runCommandById("workbench.action.focusFirstEditorGroup");
      await wb.clickCodeLens(/step 2 .*show obj as Lua/);
      await wb.page.locator(SELECTORS.activeTab).filter({ hasText: "obj-step-2.lua" }).waitFor({ timeout: WAIT_MS });
      assert.equal(await objTabs.count(), 1, "the second click shows the same tab");
      assert.equal(await wb.page.locator(".tab").filter({ hasText: /^Untitled/ }).count(), 0, "no Untitled editor");
      await wb.closeActive();
    },
  },
  {
    name: "debug-step-from-lens",
    async run(wb) {
      // A breakpoint (F9) where the script reads the step's weight, on the line after it.
      await wb.openFile(ISTIO_SCRIPT);
      const read = wb.positionOf(ISTIO_SCRIPT, "local weight = obj.canaryWeight");
      const stop = read.line + 1;
      await wb.gotoLine(stop, 1);
      await wb.page.keyboard.press("F9");
      const glyph = wb.page.locator(`${SELECTORS.activeEditor} ${SELECTORS.breakpointGlyph}`);
      await glyph.first().waitFor({ timeout: WAIT_MS });

      // "▶ debug step 2" of weights.yaml (traffic: 50%): the first lens may wait for the server.
      await showStep2(wb);
      await wb.clickCodeLens(/debug step 2$/, { timeout: 90_000 });
      await wb.page.locator(SELECTORS.debugToolbar).waitFor({ timeout: WAIT_MS });
      // Stopped on the breakpoint: the call stack's frame names the script and the line, and
      // the script's editor draws the current line.
      const frameAt = (line) => new RegExp(`trafficRouting\\.lua\\D*${line}\\b`);
      await wb.waitForText(SELECTORS.callStackRow, frameAt(stop));
      await wb.page.locator(SELECTORS.currentLine).first().waitFor({ timeout: WAIT_MS });

      // The Variables view: the `obj` scope holds the step's obj (canaryWeight 50 at step 2).
      // Locals is folded first: its rows could push `obj` out of the drawn part of the list.
      const locals = wb.page.locator(SELECTORS.variablesRow).filter({ hasText: /^Locals$/ }).first();
      await locals.waitFor({ timeout: WAIT_MS });
      if ((await locals.getAttribute("aria-expanded")) === "true") {
        await locals.click();
      }
      const objScope = wb.page.locator(SELECTORS.variablesRow).filter({ hasText: /^obj$/ }).first();
      await objScope.waitFor({ timeout: WAIT_MS });
      if ((await objScope.getAttribute("aria-expanded")) !== "true") {
        await objScope.click();
      }
      const weight = await wb.waitForText(SELECTORS.variablesRow, /canaryWeight\W*\d+/);
      assert.match(weight, /canaryWeight\W*50$/, `obj.canaryWeight at step 2: ${weight}`);
      await wb.screenshot("debugger-stopped");

      // Step over (F10): the next line; continue (F5): the run ends with the verdict.
      await wb.page.keyboard.press("F10");
      await wb.waitForText(SELECTORS.callStackRow, frameAt(stop + 1));
      await wb.page.keyboard.press("F5");
      await wb.page.locator(SELECTORS.debugToolbar).waitFor({ state: "hidden", timeout: WAIT_MS });
      await wb.runCommandById("workbench.panel.repl.view.focus");
      const verdict = await wb.waitForText(SELECTORS.replRow, /weights\.yaml: step 2: /);
      assert.match(verdict, /weights\.yaml: step 2: PASS \(the result matches expected\[1\]\)/);
      await wb.screenshot("debugger-verdict");

      // No breakpoint nor debug console left for the next tests.
      await wb.runCommandById("workbench.action.closePanel");
      await wb.openFile(ISTIO_SCRIPT);
      await wb.gotoLine(stop, 1);
      await wb.page.keyboard.press("F9");
      await glyph.first().waitFor({ state: "detached", timeout: WAIT_MS });
    },
  },
  {
    name: "inlay-hints-of-a-step",
    async run(wb) {
      await showStep2(wb);
      // The lens runs step 2 and opens the script beside the case, with the values inline.
      await wb.clickCodeLens(/show values of step 2$/, { timeout: 90_000 });
      await wb.openFile(ISTIO_SCRIPT);
      const read = wb.positionOf(ISTIO_SCRIPT, "local weight = obj.canaryWeight");
      await wb.gotoLine(read.line, 1);
      // The hint is text Monaco draws at the end of the line (the line itself has no "= 50").
      const line = await wb.until("the hint `weight = 50` after `local weight = obj.canaryWeight`", async () => {
        const lines = await wb.editorLines();
        const found = lines.find((l) => l.startsWith("local weight = obj.canaryWeight"));
        if (!/\bweight = 50\b/.test(found ?? "")) {
          throw new Error(`the line reads ${JSON.stringify(found)}`);
        }
        return found;
      });
      // The line's hint also gives what it read of obj.
      assert.match(line, /obj\.canaryWeight = 50\b/, `the hint of the line: ${line}`);
      // Defect 4: a field assignment shows the value assigned, not the table (`d = {…}`).
      const write = wb.positionOf(ISTIO_SCRIPT, "d.weight = scaled(total - canaryPart)");
      await wb.gotoLine(write.line, 1);
      const written = await wb.until("the hint of `d.weight = scaled(…)`", async () => {
        const lines = await wb.editorLines();
        const found = lines.find((l) => l.trimStart().startsWith("d.weight = scaled(total - canaryPart)"));
        return /d\.weight = 50\b/.test(found ?? "") ? found : undefined;
      });
      assert.doesNotMatch(written, /\bd = \{/, written);
      await wb.gotoLine(read.line, 1);
      await wb.screenshot("inlay-hints-of-a-step");
      await wb.runCommand("Hide the inline values of a step");
      await wb.until("the hints gone", async () => {
        const lines = await wb.editorLines();
        const shown = lines.find((l) => l.startsWith("local weight = obj.canaryWeight"));
        return shown !== undefined && !/= 50\b/.test(shown);
      });
      await wb.runCommandById("workbench.action.joinAllGroups");
    },
  },
  {
    name: "rename-a-local",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      const at = wb.positionOf(ISTIO_SCRIPT, "local out = {}");
      await wb.gotoLine(at.line, at.column + "local ".length);
      await wb.page.keyboard.press("F2");
      const box = wb.page.locator(SELECTORS.renameInput);
      await box.waitFor({ timeout: WAIT_MS });
      await box.fill("copied");
      await wb.page.keyboard.press("Enter");
      // Every use of the local in the function `copy` reads the new name.
      await wb.until("the renamed local", async () => {
        const text = await wb.editorText();
        return ["local copied = {}", "copied[k] = copy(x)", "return copied"].every((s) => text.includes(s));
      });
      const text = (await wb.editorLines()).join("\n");
      assert.doesNotMatch(text, /\bout\[k\]|return out\b/, "no use keeps the old name");
      await wb.waitDirty();
      await wb.screenshot("rename-a-local");
      await wb.revertActive();
    },
  },
  {
    // "Go to Type Definition" on an obj read: the cases that give it, in a peek view.
    name: "type-definition-opens-the-cases",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      const at = wb.positionOf(ISTIO_SCRIPT, "local spec = obj.data.spec");
      await wb.gotoLine(at.line, at.column + "local spec = obj.data.".length);
      await wb.runCommandById("editor.action.goToTypeDefinition");
      await wb.waitForText(SELECTORS.peekRow, "weights.yaml");
      const rows = await wb.texts(SELECTORS.peekRow);
      for (const name of ["realistic_mesh.yaml", "header_matches.yaml"]) {
        assert.ok(rows.some((r) => r.includes(name)), `the peek view lists ${name}: ${JSON.stringify(rows)}`);
      }
      await wb.screenshot("type-definition-opens-the-cases");
      await wb.page.keyboard.press("Escape");
    },
  },
  {
    name: "format-document",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      const at = wb.positionOf(ISTIO_SCRIPT, "local stable = obj.stableService");
      await wb.gotoLine(at.line, 1);
      const spaced = "local   stable  =   obj.stableService";
      await wb.replaceToEndOfLine(spaced);
      await wb.until("the edit", async () => (await wb.editorLines()).includes(spaced));
      // Format Document (Ctrl+Shift+I on Linux; Shift+Alt+F opens the File menu in a browser):
      // StyLua's spacing comes back.
      await wb.page.keyboard.press("Control+Shift+i");
      await wb.until("the formatted line", async () => {
        const lines = await wb.editorLines();
        return lines.includes("local stable = obj.stableService") && !lines.includes(spaced);
      });
      await wb.screenshot("format-document");
      // Defect 13: formatting with the library's stylua.toml changed nothing else: saved, the
      // file is what it was.
      const original = fs.readFileSync(wb.file(ISTIO_SCRIPT), "utf8");
      await wb.save();
      assert.equal(fs.readFileSync(wb.file(ISTIO_SCRIPT), "utf8"), original, "formatting changed only the spaced line");
    },
  },
  {
    name: "signature-help",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      const at = wb.positionOf(ISTIO_SCRIPT, "local weight = obj.canaryWeight");
      await wb.gotoLine(at.line, 1);
      await wb.page.keyboard.press("End");
      await wb.page.keyboard.press("Enter");
      await wb.page.keyboard.type("local probe = string.format(", { delay: 40 });
      const help = await wb.waitForText(SELECTORS.parameterHints, /format/, { timeout: 10_000 });
      assert.match(help, /string\.format\s*\(/, `the signature of string.format: ${help}`);
      await wb.screenshot("signature-help");
      await wb.page.keyboard.press("Escape");
      await wb.revertActive();
    },
  },
  {
    name: "semantic-tokens",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      // `canaryWeight` in `obj.canaryWeight`: a field of obj, a `property` token.
      const at = wb.positionOf(ISTIO_SCRIPT, "obj.canaryWeight");
      await wb.gotoLine(at.line, at.column + "obj.".length + 2);
      await wb.runCommand("Developer: Inspect Editor Tokens and Scopes");
      const widget = await wb.waitForText(SELECTORS.tokenInspector, /semantic token type/);
      assert.match(widget, /semantic token type\s*property/, `the token under the cursor: ${widget}`);
      await wb.screenshot("semantic-tokens");
      await wb.page.keyboard.press("Escape");
    },
  },
  {
    // The server's folds carry kinds: "Fold All Block Comments" folds the header comment
    // (VS Code's own indentation folding has no kinds, so it would fold nothing here).
    name: "folding-the-header-comment",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      await wb.gotoLine(1, 1);
      const inside = "-- Only routes with a destination";
      const shows = async (prefix) => (await wb.editorLines()).some((l) => l.startsWith(prefix));
      await wb.until("the header comment in sight", () => shows(inside));
      await wb.runCommand("Fold All Block Comments");
      await wb.until("the header folded to its first line", async () => {
        return (await shows("-- Istio VirtualService")) && !(await shows(inside)) && (await shows("local CANARY_SUBSET"));
      });
      await wb.screenshot("folding-the-header-comment");
      await wb.runCommand("Unfold All");
      await wb.until("the header unfolded", () => shows(inside));
    },
  },
  {
    // Document highlight: the declaration drawn as a write, the uses as reads (VS Code's
    // textual fallback draws neither kind).
    name: "document-highlight-writes-and-reads",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      const at = wb.positionOf(ISTIO_SCRIPT, "local stable = obj.stableService");
      await wb.gotoLine(at.line, at.column + "local st".length);
      await wb.page.locator(`${SELECTORS.activeEditor} ${SELECTORS.highlightWrite}`).first().waitFor({ timeout: WAIT_MS });
      await wb.page.locator(`${SELECTORS.activeEditor} ${SELECTORS.highlightRead}`).first().waitFor({ timeout: WAIT_MS });
      await wb.screenshot("document-highlight-writes-and-reads");
    },
  },
  {
    // Expand Selection walks the server's ranges: `data` → `obj.data` → `obj.data.spec` (VS
    // Code's word and bracket ranges alone jump from the word to the line).
    name: "expand-selection-through-the-chain",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      const at = wb.positionOf(ISTIO_SCRIPT, "local spec = obj.data.spec");
      await wb.gotoLine(at.line, at.column + "local spec = obj.da".length);
      const sizes = [];
      for (let i = 0; i < 4; i++) {
        const before = await wb.cursorStatus();
        // Shift+Alt+Right (the palette's "Expand Selection" row can be Expand Line Selection's).
        await wb.page.keyboard.press("Shift+Alt+ArrowRight");
        const now = await wb.until("a wider selection", async () => {
          const shown = await wb.cursorStatus();
          return shown !== before ? shown : undefined;
        });
        sizes.push(Number(/\((\d+) selected\)/.exec(now)?.[1]));
      }
      assert.deepEqual(sizes.slice(0, 3), [4, 8, 13], `selected sizes after each expansion: ${sizes}`);
      await wb.screenshot("expand-selection-through-the-chain");
      await wb.page.keyboard.press("Escape");
    },
  },
  {
    name: "call-hierarchy-incoming-calls",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      const at = wb.positionOf(ISTIO_SCRIPT, "local function stableSuffix");
      await wb.gotoLine(at.line, at.column + "local function stable".length);
      await wb.runCommand("Calls: Show Call Hierarchy");
      // Incoming calls first: `isStable` calls `stableSuffix`.
      await wb.waitForText(SELECTORS.sideBarRow, "stableSuffix");
      await wb.waitForText(SELECTORS.sideBarRow, "isStable");
      await wb.screenshot("call-hierarchy-incoming-calls");
      await wb.runCommandById("workbench.view.explorer");
    },
  },
  {
    // Lint fixes: KL006's "declare it local" and "disable KL001 on this line", whose comment
    // the server honours (the finding leaves Problems). Each finding is listed once (defect
    // 9: a client that pulls diagnostics got the pushed ones as well).
    name: "lint-quick-fix-and-disable-comment",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      const at = await wb.openLineBelow(ISTIO_SCRIPT, "local spec = obj.data.spec");
      await wb.page.keyboard.type("counter = 1", { delay: 40 });
      await wb.page.keyboard.press("Enter");
      await wb.page.keyboard.type("local probe = obj.canaryweight", { delay: 40 });
      await wb.waitForProblem("canaryweight", /KL001/);

      await wb.gotoLine(at.line + 1, 2);
      await wb.quickFix(/Declare `counter` with `local`/);
      await wb.until("the declared local", async () => (await wb.editorLines()).includes("local counter = 1"));
      const rows = (await wb.texts(SELECTORS.markerRow)).filter((r) => /KL001/.test(r));
      assert.equal(rows.length, 1, `the KL001 finding is listed once: ${JSON.stringify(rows)}`);
      await wb.screenshot("lint-quick-fix");

      const typo = wb.positionOf(ISTIO_SCRIPT, "local spec = obj.data.spec");
      await wb.gotoLine(typo.line + 2, "local probe = obj.c".length);
      await wb.quickFix(/Disable KL001 on this line/);
      await wb.until("the disable comment", async () =>
        (await wb.editorLines()).includes("-- kruise-lua: disable-next-line KL001"),
      );
      await wb.until("KL001 gone from Problems", async () =>
        (await wb.texts(SELECTORS.markerRow)).every((r) => !/KL001/.test(r)),
      );
      await wb.screenshot("lint-disable-comment");
      await wb.revertActive();
      await wb.runCommandById("workbench.action.closePanel");
    },
  },
  {
    // Document links: a case's `expected:` opens its script, a step's line goes to its
    // `expected[i]` entry, a ConfigMap key opens the bundled script of its provider.
    name: "document-links-case-script-configmap",
    async run(wb, ctx) {
      await wb.openFile(WEIGHTS_CASE);
      const expected = wb.positionOf(WEIGHTS_CASE, "expected:");
      await wb.gotoLine(expected.line, 3);
      await wb.runCommand("Open Link");
      await wb.page.locator(SELECTORS.activeTab).filter({ hasText: "trafficRouting.lua" }).waitFor({ timeout: WAIT_MS });

      await wb.openFile(WEIGHTS_CASE);
      const step2 = wb.positionOf(WEIGHTS_CASE, "- traffic: 50%");
      await wb.gotoLine(step2.line, step2.column + 4);
      await wb.runCommand("Open Link");
      const lines = fs.readFileSync(wb.file(WEIGHTS_CASE), "utf8").split("\n");
      const entries = lines.flatMap((l, i) => (i > expected.line - 1 && l.startsWith("- ") ? [i + 1] : []));
      await wb.until(`the cursor on expected[1] (line ${entries[1]})`, async () =>
        (await wb.cursorStatus()).startsWith(`Ln ${entries[1]},`),
      );
      await wb.screenshot("document-link-step-to-expected");

      // A ConfigMap shipping the script (its text read from the workspace's own script).
      const manifest = "deploy/rollout-configuration.yaml";
      const script = fs.readFileSync(wb.file(ISTIO_SCRIPT), "utf8");
      fs.mkdirSync(path.dirname(wb.file(manifest)), { recursive: true });
      fs.writeFileSync(
        wb.file(manifest),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kruise-rollout-configuration\n  namespace: kruise-rollout\ndata:\n" +
          "  lua.traffic.routing.VirtualService.networking.istio.io: |\n" +
          script
            .split("\n")
            .map((l) => (l === "" ? "" : `    ${l}`))
            .join("\n"),
      );
      try {
        await wb.openFile(manifest);
        const key = wb.positionOf(manifest, "lua.traffic.routing.VirtualService");
        await wb.gotoLine(key.line, key.column + 4);
        await wb.runCommand("Open Link");
        await wb.page.locator(SELECTORS.activeTab).filter({ hasText: "trafficRouting.lua" }).waitFor({ timeout: WAIT_MS });
        await wb.openFile(manifest);
        await wb.closeActive();
      } finally {
        fs.rmSync(wb.file("deploy"), { recursive: true, force: true });
      }
      // The manifest gone, the totals are the tree's again.
      const totals = checkTotals(ctx, wb);
      await wb.waitForText(SELECTORS.statusItem, `kruise-lua ${totals.cases} cases, ${totals.steps} steps`);
    },
  },
  {
    name: "hover-types-of-user-code",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      const fn = wb.positionOf(ISTIO_SCRIPT, "local function stableSuffix(host)");
      await wb.gotoLine(fn.line, fn.column + "local function stable".length);
      await wb.page.keyboard.press("Control+k");
      await wb.page.keyboard.press("Control+i");
      const hover = await wb.waitForText(SELECTORS.hover, /stableSuffix/);
      assert.match(hover, /local function stableSuffix\(host\) -> \S+/, `the function's type: ${hover}`);
      await wb.screenshot("hover-types-of-user-code");
      await wb.page.keyboard.press("Escape");
      const local = wb.positionOf(ISTIO_SCRIPT, "local useSubset = canary == stable");
      await wb.gotoLine(local.line, local.column + "local use".length);
      await wb.page.keyboard.press("Control+k");
      await wb.page.keyboard.press("Control+i");
      const typed = await wb.waitForText(SELECTORS.hover, /useSubset/);
      assert.match(typed, /useSubset: boolean/, `the local's type: ${typed}`);
      await wb.page.keyboard.press("Escape");
    },
  },
  {
    // Off by default; the setting turns the names of the script's own functions' parameters on.
    name: "parameter-name-hints-from-the-setting",
    async run(wb, ctx) {
      await wb.openFile(ISTIO_SCRIPT);
      const call = wb.positionOf(ISTIO_SCRIPT, 'im.uri = stringMatch("path"');
      await wb.gotoLine(call.line, 1);
      const callLine = async () => (await wb.editorLines()).find((l) => l.trimStart().startsWith("im.uri = stringMatch("));
      const plain = await wb.until("the call's line", callLine);
      assert.doesNotMatch(plain, /what:/, "no parameter names by default");
      // The setting's checkbox in the Settings editor, as a person turns it on.
      await wb.setBooleanSetting("kruiseLua.inlayHints.parameterNames", true, ctx.userData);
      await wb.openFile(ISTIO_SCRIPT);
      try {
        await wb.gotoLine(call.line, 1);
        const hinted = await wb.until("the parameter names", async () => {
          const line = await callLine();
          return /stringMatch\(what:\s*"path", matchType:\s*m\.path\.type/.test(line ?? "") ? line : undefined;
        });
        assert.match(hinted, /value:\s*m\.path\.value/, hinted);
        await wb.screenshot("parameter-name-hints-from-the-setting");
      } finally {
        await wb.setBooleanSetting("kruiseLua.inlayHints.parameterNames", false, ctx.userData);
      }
      await wb.openFile(ISTIO_SCRIPT);
      await wb.gotoLine(call.line, 1);
      await wb.until("the names gone", async () => !/what:/.test((await callLine()) ?? "what:"));
    },
  },
  {
    // Run and Debug without a launch.json: the debugger's dynamic configuration debugs step 1
    // of the script's first case; "create a launch.json file" writes the same configuration.
    name: "run-and-debug-configurations",
    async run(wb) {
      const cases = fs
        .readdirSync(wb.file(`${ISTIO}/testdata`))
        .filter((f) => /\.ya?ml$/.test(f))
        .sort();
      // The Run and Debug view without a launch.json: "create a launch.json file", with the
      // script open, writes the debugger's initial configuration.
      await wb.openFile(ISTIO_SCRIPT);
      await wb.runCommandById("workbench.view.debug");
      const create = wb.page.locator(".part.sidebar a").filter({ hasText: /create a launch\.json file/ }).first();
      await create.waitFor({ timeout: WAIT_MS });
      await wb.screenshot("run-and-debug-view");
      await create.click();
      const debuggerRow = wb.page.locator(SELECTORS.quickInputRow).filter({ hasText: "kruise-lua" }).first();
      try {
        await debuggerRow.waitFor({ timeout: 10_000 });
        await debuggerRow.click();
      } catch {
        // One debugger for Lua files: VS Code does not ask which.
      }
      const launch = wb.file(".vscode/launch.json");
      try {
        const text = await wb.until("launch.json on disk", () => fs.existsSync(launch) && fs.readFileSync(launch, "utf8"));
        assert.match(text, /"type": "kruise-lua"/, text);
        assert.match(text, new RegExp(`testdata/${cases[0].replace(".", "\\.")}`), text);
        await wb.page.locator(SELECTORS.activeTab).filter({ hasText: "launch.json" }).waitFor({ timeout: WAIT_MS });
        await wb.screenshot("run-and-debug-launch-json");
        await wb.closeActive();
      } finally {
        fs.rmSync(wb.file(".vscode"), { recursive: true, force: true });
      }
      await wb.openFile(ISTIO_SCRIPT);
      await wb.page.keyboard.press("F1");
      await wb.page.locator(SELECTORS.quickInputBox).fill(">Debug: Select and Start Debugging");
      await wb.waitForText(SELECTORS.quickInputRow, "Select and Start Debugging");
      await wb.page.keyboard.press("Enter");
      const kind = wb.page.locator(SELECTORS.quickInputRow).filter({ hasText: "kruise-lua" }).first();
      await kind.waitFor({ timeout: WAIT_MS });
      await kind.click();
      const config = wb.page
        .locator(SELECTORS.quickInputRow)
        .filter({ hasText: `Debug step 1 of ${cases[0]}` })
        .first();
      await config.waitFor({ timeout: WAIT_MS });
      await wb.screenshot("run-and-debug-dynamic-configuration");
      await config.click();
      await wb.runCommandById("workbench.panel.repl.view.focus");
      const verdict = await wb.waitForText(SELECTORS.replRow, new RegExp(`${cases[0].replace(".", "\\.")}: step 1: `), {
        timeout: 90_000,
      });
      assert.match(verdict, /step 1: PASS/, verdict);
      await wb.page.locator(SELECTORS.debugToolbar).waitFor({ state: "hidden", timeout: WAIT_MS });
      await wb.runCommandById("workbench.action.closePanel");

      await wb.runCommandById("workbench.view.explorer");
    },
  },
  {
    name: "snippet-completion",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      await wb.openLineBelow(ISTIO_SCRIPT, "local spec = obj.data.spec");
      await wb.page.keyboard.type("forr", { delay: 40 });
      const row = wb.page.locator(SELECTORS.suggestRow).filter({ hasText: "forroutes" }).first();
      try {
        await row.waitFor({ timeout: 10_000 });
      } catch {
        await wb.page.keyboard.press("Control+Space");
        await row.waitFor({ timeout: WAIT_MS });
      }
      await wb.screenshot("snippet-completion");
      await row.click();
      await wb.until("the expanded loop", async () =>
        (await wb.editorLines()).includes("for _, route in ipairs(spec.http or {}) do"),
      );
      await wb.page.keyboard.press("Escape");
      await wb.revertActive();
    },
  },
  {
    // Defect 1: a step's hover quotes the Lua error as written (`'<name>' expected`, which
    // Markdown took for an HTML tag) with the script's path for `<string>`.
    name: "hover-of-a-broken-script-keeps-angle-brackets",
    async run(wb) {
      await wb.openFile(ISTIO_SCRIPT);
      await wb.openLineBelow(ISTIO_SCRIPT, "local spec = obj.data.spec");
      await wb.page.keyboard.type("local broken = obj.", { delay: 40 });
      await wb.page.keyboard.press("Escape");
      await wb.openFile(WEIGHTS_CASE);
      const step2 = wb.positionOf(WEIGHTS_CASE, "- traffic: 50%");
      await wb.gotoLine(step2.line, step2.column + "- tra".length);
      const hover = await wb.until("the step's hover with the syntax error", async () => {
        await wb.page.keyboard.press("Escape");
        await wb.page.keyboard.press("Control+k");
        await wb.page.keyboard.press("Control+i");
        // (The hover has parts: the step's, with the error, and the document link's.)
        return await wb.waitForText(SELECTORS.hover, /expected near/, { timeout: 5_000 });
      });
      assert.match(hover, /'<name>' expected/, hover);
      assert.match(hover, /trafficRouting\.lua/, hover);
      assert.doesNotMatch(hover, /'' expected/, hover);
      await wb.screenshot("hover-of-a-broken-script");
      await wb.page.keyboard.press("Escape");
      await wb.openFile(ISTIO_SCRIPT);
      await wb.revertActive();
    },
  },
  {
    name: "broken-case-problems-and-accept-expected",
    async run(wb, ctx) {
      const before = fs.readFileSync(wb.file(WEIGHTS_CASE), "utf8");
      await wb.openFile(WEIGHTS_CASE);
      await wb.openFile(ISTIO_SCRIPT);
      // Every canary destination gets one more than its share: the weighted steps now fail.
      const at = wb.positionOf(ISTIO_SCRIPT, "c.weight = canaryPart");
      await wb.gotoLine(at.line, at.column);
      await wb.replaceToEndOfLine("c.weight = canaryPart + 1");
      await wb.waitForProblem("weights.yaml", "weights.yaml");
      // The failing step's diff (the broken weights also misroute: that diagnostic is listed too).
      const problem = await wb.waitForText(SELECTORS.markerRow, /step 1 fails/);
      assert.match(problem, /weight/);
      await wb.screenshot("problems-after-edit");
      const totals = checkTotals(ctx, wb);
      await wb.waitForText(SELECTORS.statusItem, new RegExp(`kruise-lua \\d+/${totals.cases}`));
      const failing = await wb.waitForText(SELECTORS.statusItem, /kruise-lua \d+\/\d+/);
      assert.ok(Number(/(\d+)\//.exec(failing)[1]) < totals.cases, `the status bar counts failures: ${failing}`);
      await wb.gotoLine(1, 1);
      await wb.waitForText(SELECTORS.codeLens, /✗ \d+\/\d+ cases pass/);

      // The quick fix on the first failing expected[i] of the case, then save.
      await wb.openFile(WEIGHTS_CASE);
      const entry = wb.positionOf(WEIGHTS_CASE, "expected:");
      await wb.gotoLine(entry.line + 1, 3);
      await wb.quickFix(/Accept actual output as expected for all \d+ failing step/);
      await wb.waitDirty();
      await wb.save();
      const after = await wb.until("the accepted case on disk", () => {
        const text = fs.readFileSync(wb.file(WEIGHTS_CASE), "utf8");
        return text !== before ? text : undefined;
      });
      await wb.screenshot("accepted-expected");
      assertOnlyCanaryWeightsGrew(before, after);

      // The script's edit is dropped; the accepted case alone fails then.
      await wb.openFile(ISTIO_SCRIPT);
      await wb.revertActive();
      await wb.waitForText(SELECTORS.statusItem, `kruise-lua ${totals.cases - 1}/${totals.cases}`);
      await wb.gotoLine(1, 1);
      const n = caseCount(wb, ISTIO);
      await wb.waitForText(SELECTORS.codeLens, `✗ ${n - 1}/${n} cases pass`);
    },
  },
];

/**
 * What accepting `canaryPart + 1` must do to weights.yaml: the same lines, except some
 * `weight: N` lines that became `weight: N+1` (the canary destinations); nothing else moves.
 */
function assertOnlyCanaryWeightsGrew(before, after) {
  const old = before.split("\n");
  const now = after.split("\n");
  assert.equal(now.length, old.length, "the accepted case keeps its line count");
  let changed = 0;
  for (let i = 0; i < old.length; i++) {
    if (old[i] === now[i]) {
      continue;
    }
    const was = /^(\s*(?:- )?weight: )(\d+)$/.exec(old[i]);
    assert.ok(was, `line ${i + 1} changed but is no weight: ${JSON.stringify(old[i])} → ${JSON.stringify(now[i])}`);
    assert.equal(now[i], `${was[1]}${Number(was[2]) + 1}`, `line ${i + 1}`);
    changed++;
  }
  assert.ok(changed >= 3, `${changed} weights changed (one per weighted step at least)`);
}

