// The viewer as the compiled binary serves it (`node scripts/test.mjs binary` builds dist/sessiontap and
// sets SESSIONTAP_BINARY): the browser client is bundled by Bun's bundler when the binary is built and
// defined into it (scripts/compile-args.mjs, src/viewer/page.ts). Its page's script is checked
// to name nothing the browser lacks, then run in headless Chromium (test/support/browser.ts) over
// a hand-made mirror through every part of the client: the list, a session, search with its marks, a
// record appended to the mirror arriving live, the keyboard, and a restore into Claude Code, dry run first.
// The page must log no error.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import type { Page } from "playwright-core";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { type BrowserPage, openBrowser } from "../support/browser.ts";
import { serveTap, type TapChild } from "../support/child.ts";
import { undeclaredNames } from "../support/free-names.ts";
import { inlineScript } from "../support/inline-script.ts";
import { rec, writeMirror } from "../support/recover.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";

const BINARY = process.env.SESSIONTAP_BINARY ?? "";
const WAIT = { timeout: 30_000 };
const SESSION = "b1b1b1b1-0000-4000-8000-0000000000b1";
const OTHER = "b2b2b2b2-0000-4000-8000-0000000000b2";

describe("the compiled binary's viewer, in headless Chromium", { timeout: 180_000 }, () => {
  let scratch = "";
  let stub: StubUpstream;
  let tap: TapChild;
  let url = "";
  let mirrorFile = "";
  let browser: BrowserPage;
  let page: Page;
  const cwd = () => `${scratch}/project`;
  const claudeDir = () => `${scratch}/claude`;

  before(async () => {
    assert.ok(BINARY !== "" && existsSync(BINARY), "SESSIONTAP_BINARY is not a built binary: run `node scripts/test.mjs binary`");
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-binary-viewer-`);
    mkdirSync(`${claudeDir()}/projects`, { recursive: true });
    const at = { sessionId: SESSION, cwd: cwd() };
    mirrorFile = writeMirror(`${scratch}/mirror`, SESSION, [
      rec("user", "u1", null, "count the zebras in the herd", at),
      rec("assistant", "a1", "u1", [{ type: "text", text: "There are seven zebras." }], at),
    ]);
    writeMirror(`${scratch}/mirror`, OTHER, [rec("user", "o1", null, "an unrelated question", { sessionId: OTHER, cwd: cwd() })]);
    stub = await startStub();
    ({ tap, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", `${scratch}/mirror`], {
      binary: BINARY,
      env: { HOME: scratch, CLAUDE_CONFIG_DIR: claudeDir() },
    }));
    browser = await openBrowser({ width: 1280, height: 900 });
    page = browser.page;
  });

  after(async () => {
    await browser?.close();
    if (tap) {
      tap.signal("SIGTERM");
      await tap.exit();
    }
    await stub?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("serves a script that parses and names nothing the browser lacks", async () => {
    const res = await fetch(`${url}/_tap/`);
    assert.equal(res.status, 200);
    const nonce = /'nonce-([^']+)'/.exec(res.headers.get("content-security-policy") ?? "")?.[1] ?? "";
    const script = inlineScript(await res.text(), nonce);
    assert.doesNotMatch(script, /\bimport\b|\brequire\b/);
    assert.doesNotThrow(() => new Function(script));
    assert.deepEqual(undeclaredNames(script), []);
  });

  it("lists the sessions and opens one", async () => {
    await page.goto(`${url}/_tap/`);
    const item = page.locator(`#sessions li.session[data-session="${SESSION}"]`);
    await item.waitFor(WAIT);
    assert.match(await item.innerText(), /count the zebras/);
    assert.match(await page.locator("#totals").innerText(), /^2 sessions · /);
    await item.click();
    await page.locator("#conversation .rec.assistant", { hasText: "seven zebras" }).waitFor(WAIT);
    assert.match(await page.locator("#facts").innerText(), new RegExp(SESSION));
  });

  it("shows a record appended to the mirror, without reloading", async () => {
    await page.locator("#live.on").waitFor(WAIT);
    await page.evaluate(() => ((globalThis as { notReloaded?: boolean }).notReloaded = true));
    appendFileSync(mirrorFile, JSON.stringify(rec("user", "u2", "a1", "and the giraffes?", { sessionId: SESSION, cwd: cwd() })) + "\n");
    await page.locator("#conversation .rec.user", { hasText: "and the giraffes?" }).waitFor(WAIT);
    assert.equal(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded), true, "appended, not reloaded");
  });

  it("searches from the keyboard, marks the match, and Escape goes back", async () => {
    await page.keyboard.press("/");
    await page.keyboard.type("zebras");
    const hit = page.locator("#results li.hit", { hasText: "seven" });
    await hit.waitFor(WAIT);
    assert.equal(await hit.locator("mark").first().innerText(), "zebras");
    await hit.click();
    await page.locator("#conversation .rec.fresh mark", { hasText: "zebras" }).first().waitFor(WAIT);
    await page.keyboard.press("Escape"); // the search box is no longer focused: back to the list
    await page.waitForFunction(() => !document.body.classList.contains("viewing"), undefined, WAIT);
  });

  it("restores the session into Claude Code, a dry run first", async () => {
    await page.locator("#search").fill(""); // the list again, in place of the hits
    await page.locator(`#sessions li.session[data-session="${SESSION}"]`).click();
    await page.locator("#restore-plan").click();
    await page.locator("#restore-dry").waitFor(WAIT);
    const transcript = `${claudeDir()}/projects/${encodeProjectDir(cwd())}/${SESSION}.jsonl`;
    assert.ok(!existsSync(transcript), "the dry run wrote nothing");
    await page.locator("#restore-go").click();
    assert.match(await page.locator("#restore-done").innerText(WAIT), /^Restored session /);
    assert.ok(existsSync(transcript));
  });

  it("the page logged no error", () => {
    assert.deepEqual(browser.errors, []);
  });
});
