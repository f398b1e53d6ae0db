// What the tap forwarded without mirroring, in the viewer (docs/DESIGN.md "Nothing forwarded unseen"), in
// headless Chromium (test/support/browser.ts): a tap that has mirrored nothing unseen shows no notice; once a
// conversation-shaped request to a path it does not mirror went through, the session list says how many
// requests to which path shape, without a reload. Runs under `bun test` and `deno test`.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { Page } from "playwright-core";
import { type BrowserPage, openBrowser } from "../support/browser.ts";
import { type TestTap, withTap } from "../support/tap.ts";

const WAIT = { timeout: 30_000 };

describe("the viewer names requests forwarded, not mirrored", { timeout: 120_000 }, () => {
  let tap: TestTap;
  let browser: BrowserPage;
  let page: Page;

  withTap((started) => ({ tap } = started));
  before(async () => {
    browser = await openBrowser({ width: 1280, height: 900 });
    page = browser.page;
  });

  after(async () => {
    await browser?.close();
  });

  it("nothing unseen: no notice", async () => {
    // The page's own clock, moved on by hand: its list refreshes every 10 s (a request forwarded unmirrored
    // writes no record to announce), and the test says when those 10 s have passed instead of waiting them out.
    await page.clock.install();
    await page.goto(`${tap.url}/_tap/`);
    await page.locator("#totals").filter({ hasText: "0 sessions" }).waitFor(WAIT);
    assert.equal(await page.locator("#unseen").isVisible(), false);
    await page.evaluate(() => ((globalThis as { notReloaded?: boolean }).notReloaded = true));
  });

  it("a conversation sent to /v2/messages: the list says so, without a reload", async () => {
    const body = JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hello" }] });
    for (let i = 0; i < 2; i++) {
      const r = await fetch(`${tap.url}/v2/messages`, { method: "POST", headers: { "content-type": "application/json" }, body });
      await r.arrayBuffer();
    }
    await tap.settled();
    await page.clock.fastForward(10_000); // the list's next refresh
    const notice = page.locator("#unseen p");
    await notice.waitFor(WAIT);
    assert.equal(await notice.innerText(), "2 requests to /v2/messages forwarded, not mirrored (not a path the tap mirrors): not in the mirror");
    assert.equal(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded), true, "shown without a reload");
    assert.deepEqual(browser.errors, [], "the page logged no error");
  });
});
