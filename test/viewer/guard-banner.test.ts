// The guard's banner in the viewer, in headless Chromium (from npm, driven by the pinned `playwright-core`:
// test/support/browser.ts): a real tap with the guard on mirrors a session sent the way Claude Code sends it; its
// Claude Code transcript is deleted; the session list and the session page show a banner naming the
// restore command; once the transcript is back, the banner is gone. Runs under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import type { Page } from "playwright-core";
import { type BrowserPage, openBrowser } from "../support/browser.ts";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { type TestTap, withTap } from "../support/tap.ts";
import { Conversation } from "../support/client.ts";
import { pollAsync } from "../support/poll.ts";
import { scratchDir } from "../support/recover.ts";

const WAIT = { timeout: 30_000 };
const SESSION = "b4e2e100-0000-4000-8000-00000000b001";

describe("the guard's banner in the viewer, in headless Chromium", { timeout: 120_000 }, () => {
  const scratch = scratchDir("sessiontap-banner-");
  const claudeDir = `${scratch.dir}/claude`;
  const cwd = `${scratch.dir}/project`;
  const transcript = `${claudeDir}/projects/${encodeProjectDir(cwd)}/${SESSION}.jsonl`;
  let whole = JSON.stringify({ type: "user", message: { role: "user", content: "watch me" }, uuid: "u1", sessionId: SESSION }) + "\n";
  let tap: TestTap;
  let browser: BrowserPage;
  let page: Page;

  before(async () => {
    mkdirSync(`${claudeDir}/projects/${encodeProjectDir(cwd)}`, { recursive: true });
  });
  withTap(
    (started) => ({ tap } = started),
    () => ({ env: { CLAUDE_CONFIG_DIR: claudeDir }, deps: { guard: { settleMs: 60, confirmMs: 120, sweepMs: 150 } }, root: `${scratch.dir}/tap` }),
  );
  before(async () => {
    writeFileSync(transcript, whole);
    const c = new Conversation(tap, SESSION, { system: [{ type: "text", text: `You are Claude Code.\n - Primary working directory: ${cwd}\n` }] });
    const said = await c.say("watch me");
    assert.equal(said.status, 200);
    // Claude Code's record of the answer, by the message id the stub gave it.
    const id = /"id":"(msg_[^"]+)"/.exec(new TextDecoder().decode(said.raw))![1];
    whole +=
      JSON.stringify({ type: "assistant", message: { id, role: "assistant", content: [{ type: "text", text: "ok" }] }, uuid: "a1", sessionId: SESSION }) + "\n";
    writeFileSync(transcript, whole);
    await pollAsync(() => tap.engine!.query("guard.inspect", SESSION), (s) => s?.verdict === "ok", 5_000, "a healthy verdict");
    browser = await openBrowser({ width: 1280, height: 900 });
    page = browser.page;
  });

  after(async () => {
    await browser?.close();
    scratch.cleanup();
  });

  it("a healthy session: no banner", async () => {
    // The page's own clock, moved on by hand: its list refreshes every 10 s (the guard's alerts come with
    // no new record), and a test says when those 10 s have passed instead of waiting them out.
    await page.clock.install();
    await page.goto(`${tap.url}/_tap/`);
    await page.locator(`#sessions li.session[data-session="${SESSION}"]`).click();
    await page.locator("#facts h2").waitFor(WAIT);
    assert.equal(await page.locator(".guard").count(), 0);
    await page.evaluate(() => ((globalThis as { notReloaded?: boolean }).notReloaded = true));
  });

  it("the transcript deleted: a banner with the restore command on the session in the list and on its open page, without a reload", async () => {
    rmSync(transcript);
    await pollAsync(async () => (await tap.engine!.query("guard.health")).alerts, (a) => a.length === 1, 5_000, "the guard's alert");
    await page.clock.fastForward(10_000); // the list's next refresh
    const listed = page.locator(`#sessions li.session[data-session="${SESSION}"] .guard[role="alert"]`);
    await listed.waitFor(WAIT);
    assert.match(await listed.innerText(), /Claude Code's transcript is gone/);
    assert.equal(await listed.locator("code").innerText(), `sessiontap restore ${SESSION}`);
    const open = page.locator('#facts .guard[role="alert"]');
    await open.waitFor(WAIT);
    assert.match(await open.innerText(), /Quit Claude Code, then run/);
    assert.equal(await open.locator("code").innerText(), `sessiontap restore ${SESSION}`);
    assert.equal(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded), true, "shown without a reload");
  });

  it("once the transcript is whole again, the banners go", async () => {
    writeFileSync(transcript, whole);
    await pollAsync(async () => (await tap.engine!.query("guard.health")).alerts, (a) => a.length === 0, 5_000, "the alert to clear");
    await page.clock.fastForward(10_000);
    await page.locator(".guard").first().waitFor({ state: "detached", ...WAIT });
    assert.equal(await page.locator(".guard").count(), 0);
    assert.deepEqual(browser.errors, [], "the page logged no error");
  });
});
