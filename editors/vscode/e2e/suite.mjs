//! Runs tests.mjs in one code-server window in headless Chromium (started by run.sh, which
//! passes everything in E2E_* variables): each test in turn, a screenshot on failure, a global
//! time limit, and the closing "N passed, N failed" line. Arguments filter tests by name.

import { createRequire } from "node:module";
import * as path from "node:path";

import { tests } from "./tests.mjs";
import { Workbench } from "./workbench.mjs";

const env = (name) => {
  const value = process.env[name];
  if (!value) {
    console.error(`vscode-e2e: ${name} is not set (run editors/vscode/e2e/run.sh)`);
    process.exit(2);
  }
  return value;
};

const url = env("E2E_URL");
const artifacts = env("E2E_ARTIFACTS");
const limitS = Number(env("E2E_TIMEOUT_S"));
// playwright-core lives in the cached e2e dependencies, not beside this file.
const { chromium } = createRequire(path.join(env("E2E_DEPS"), "package.json"))("playwright-core");
const ctx = {
  serverBin: env("E2E_SERVER_BIN"),
  bundled: process.env.E2E_BUNDLED === "1",
  // Where the extension must find the server: setting, bundled, cargo-home or missing.
  serverFrom: process.env.E2E_SERVER_FROM || "setting",
  userData: env("E2E_USER_DATA"),
};

const wanted = process.argv.slice(2);
const selected = wanted.length === 0 ? tests : tests.filter((t) => wanted.some((w) => t.name.includes(w)));
if (selected.length === 0) {
  console.error(`vscode-e2e: no test matches ${wanted.join(" ")}; tests: ${tests.map((t) => t.name).join(", ")}`);
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: env("E2E_CHROMIUM"),
  headless: true,
  // Root in CI: Chromium's sandbox needs an unprivileged user.
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
const page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
const wb = new Workbench(page, { workspace: env("E2E_WORKSPACE"), screenshots: path.join(artifacts, "screenshots") });

let passed = 0;
let failed = 0;
let finished = false;
/** Set when the global limit strikes: what fails after that is its consequence, not news. */
let stopping = false;
let current = "workbench start";

/** What the main loop does once the limit struck: wait for the limit's handler to exit. */
const halt = () => new Promise(() => {});

async function fail(name, error) {
  failed++;
  console.log(`not ok - ${name}\n  ${String(error?.stack ?? error).replace(/\n/g, "\n  ")}`);
  try {
    const shot = await wb.screenshot(`FAILED-${name}`);
    console.log(`  screenshot: ${shot}`);
  } catch (shotError) {
    console.log(`  (no screenshot: ${shotError.message})`);
  }
}

async function finish(code) {
  if (finished) {
    return;
  }
  finished = true;
  console.log(`${passed} passed, ${failed} failed`);
  await browser.close().catch(() => {});
  process.exit(code);
}

// The global limit: whatever hangs, the suite ends with a message, a screenshot and exit 1.
const limit = setTimeout(async () => {
  stopping = true;
  await fail(current, new Error(`global time limit: the suite did not finish within ${limitS} s`));
  console.log(`${passed} passed, ${failed} failed`);
  // Chromium goes with this process (playwright ends what it launched; run.sh ends the group).
  process.exit(1);
}, limitS * 1000);
limit.unref();

const started = Date.now();
// When the window was asked for and when it stood: the first test measures its cold open from here.
ctx.coldStart = started;
try {
  await page.goto(url, { timeout: 60_000 });
  await wb.ready();
  ctx.workbenchReady = Date.now();
} catch (error) {
  if (stopping) {
    await halt();
  }
  await fail("workbench start", error);
  await finish(1);
}

for (const test of selected) {
  current = test.name;
  const t0 = Date.now();
  try {
    await test.run(wb, ctx);
    if (stopping) {
      await halt();
    }
    passed++;
    console.log(`ok - ${test.name} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
  } catch (error) {
    if (stopping) {
      await halt();
    }
    await fail(test.name, error);
    // Leave the window as the next test expects it: no dialogs, no dirty editors.
    await page.keyboard.press("Escape").catch(() => {});
    await wb.revertActive().catch(() => {});
  }
}
console.log(`vscode-e2e: ${selected.length} test(s) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
await finish(failed === 0 ? 0 : 1);
