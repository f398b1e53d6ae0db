// Issue 6, the viewer in a real browser: headless Chromium (the `@sparticuz/chromium` npm package, driven
// by the pinned `playwright-core`; see test/support/browser.ts) opens the page a real tap serves at /_tap/
// after the real Claude Code CLI ran a session with a tool call through it; it lists the session, opens it,
// sees the tool call and its result, sees the next turn's records arrive live (server-sent events, no
// reload) while the CLI makes that turn through the tap, searches across sessions, and keeps a screenshot in
// test-artifacts/viewer.png. playwright-core drives Chromium over its pipe transport under both Bun and
// Deno, so this file runs unchanged under `bun test` and `deno test` like every other.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { type BrowserPage, openBrowser } from "../support/browser.ts";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { type TestTap, withTap } from "../support/tap.ts";
import { describeRun, makeScratch, pollUntil, runClaude, type Scratch, sessionMirror } from "../support/claude.ts";

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/", import.meta.url));
const WAIT = { timeout: 30_000 };

describe("the viewer in headless Chromium", { timeout: 180_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let scratch: Scratch;
  let browser: BrowserPage;
  let page: Page;
  let sessionId = "";

  before(async () => {
    scratch = makeScratch();
  });
  withTap((started) => ({ stub, tap } = started), () => ({ env: { CLAUDE_CONFIG_DIR: `${scratch.home}/.claude` } }));
  before(async () => {
    const first = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash"], { baseUrl: tap.url, scratch });
    assert.equal(first.code, 0, describeRun(first));
    sessionId = stub.requests[0]?.headers["x-claude-code-session-id"] ?? "";
    await pollUntil(() => sessionMirror(tap.root, sessionId), (r) => r.filter((x) => x.type === "assistant").length >= 2);
    browser = await openBrowser({ width: 1280, height: 900 });
    page = browser.page;
  });

  after(async () => {
    await browser?.close();
    scratch?.cleanup();
  });

  it("lists the mirrored session with its first prompt", async () => {
    await page.goto(`${tap.url}/_tap/`);
    const item = page.locator(`#sessions li.session[data-session="${sessionId}"]`);
    await item.waitFor(WAIT);
    assert.match(await item.innerText(), /RUNTOOL please/);
    assert.match(await item.innerText(), /Claude: intact/);
  });

  it("opens the session and shows the tool call with its input, and the tool result", async () => {
    await page.locator(`#sessions li.session[data-session="${sessionId}"]`).click();
    const call = page.locator("#conversation .tool-use").first();
    await call.waitFor(WAIT);
    assert.equal(await call.locator(".tool-name").innerText(), "Bash");
    assert.match(await call.innerText(), /echo hi-from-tool/);
    assert.match(await page.locator("#conversation .tool-result").first().innerText(), /hi-from-tool/);
    assert.match(await page.locator("#facts").innerText(), new RegExp(sessionId));
    assert.equal(new URL(page.url()).hash, `#/s/${sessionId}`);
  });

  it("shows the next turn's records as they are written, without reloading", async () => {
    await page.locator("#live.on").waitFor(WAIT); // the event stream is open
    const before = await page.locator("#conversation .rec").count();
    await page.evaluate(() => ((globalThis as { notReloaded?: boolean }).notReloaded = true));
    const turn = runClaude(["-p", "--resume", sessionId, "a prompt made while watching"], { baseUrl: tap.url, scratch });
    const prompt = page.locator("#conversation .rec.user", { hasText: "a prompt made while watching" });
    await prompt.waitFor(WAIT);
    const run = await turn;
    assert.equal(run.code, 0, describeRun(run));
    const answer = page.locator("#conversation .rec.assistant", { hasText: run.stdout.trim() });
    await answer.waitFor(WAIT);
    assert.equal(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded), true, "appended, not reloaded");
    assert.ok((await page.locator("#conversation .rec").count()) > before);
    assert.equal(await prompt.evaluate((node) => node.parentElement?.id), "conversation", "appended to the conversation");
  });

  it("searches across sessions and jumps to the record", async () => {
    await page.locator("#search").fill("hi-from-tool");
    const hit = page.locator("#results li.hit").first();
    await hit.waitFor(WAIT);
    assert.match(await hit.innerText(), /hi-from-tool/);
    // The line above the list counts the hits instead of adding up what the sessions cost.
    const hits = await page.locator("#results li.hit").count();
    assert.equal(await page.locator("#totals").innerText(), `${hits} message${hits === 1 ? "" : "s"} in 1 session match${hits === 1 ? "es" : ""}`);
    await hit.click();
    await page.waitForURL(/#\/s\/[^/]+\/.+$/, WAIT);
    const uuid = decodeURIComponent(new URL(page.url()).hash.split("/")[3]);
    const target = page.locator(`[id="r-${uuid}"]`);
    await page.locator(`[id="r-${uuid}"].fresh`).waitFor(WAIT); // highlighted
    assert.match(await target.innerText(), /hi-from-tool/);
    assert.ok(await target.isVisible());
  });

  it("keeps a screenshot as a test artifact, and the page logged no error", async () => {
    await page.locator("#search").fill("");
    await page.locator("#sessions").waitFor(WAIT);
    await page.waitForFunction(
      () => /session/.test(document.getElementById("totals")?.textContent ?? "") && !/match/.test(document.getElementById("totals")!.textContent!),
      null,
      WAIT,
    );
    mkdirSync(ARTIFACTS, { recursive: true });
    const path = `${ARTIFACTS}viewer.png`;
    await page.screenshot({ path, fullPage: true });
    assert.ok(statSync(path).size > 10_000, "a real picture");
    assert.deepEqual(browser.errors, []);
  });

  it("says so in the page when a background refresh fails, instead of showing stale data silently", async () => {
    // The tap answering the list with an error is what the page must not hide (the tap itself is real; the
    // browser's network layer turns its answer into a failure).
    await page.route("**/_tap/api/sessions", (route) => route.fulfill({ status: 500, contentType: "application/json", body: '{"error":"disk on fire"}' }));
    try {
      const turn = await runClaude(["-p", "--resume", sessionId, "a prompt while the list fails"], { baseUrl: tap.url, scratch });
      assert.equal(turn.code, 0, describeRun(turn));
      const live = page.locator("#live.problem");
      await live.waitFor(WAIT);
      assert.match(await live.innerText(), /refreshing the list failed: disk on fire/);
      assert.ok(browser.errors.some((e) => e.includes("refreshing the list failed")), "also on the console");
    } finally {
      await page.unroute("**/_tap/api/sessions");
    }
  });
});
