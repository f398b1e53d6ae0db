// The viewer on any screen, in real headless Chromium (test/support/browser.ts: one page, its viewport
// changed): a session the real Claude Code made through the tap beside hand-made ones in another project,
// yesterday and ten days ago. At 1400, 768 and 360 px nothing overflows sideways and the conversation stays
// readable (at 360 the list and the conversation stack, a back button between them); a tool call and its
// result are one pair, closed when long; filters by project and day; local time with UTC on hover (the
// browser in Tokyo); j/k between sessions; search with titles and the matches marked; and the "Restore into
// Claude Code" action end to end: a dry run shown first, the file written, and `claude --resume` picking
// the conversation up. Screenshots go to test-artifacts/viewer-<width>.png. Runs under Bun and Deno.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import type { Page } from "playwright-core";
import { type BrowserPage, openBrowser } from "../support/browser.ts";
import { describeRun, findTranscripts, makeScratch, pollUntil, runClaude, type Scratch, sessionMirror } from "../support/claude.ts";
import { cli, rec, writeMirror } from "../support/recover.ts";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { startTestTap, type TestTap, withTap } from "../support/tap.ts";

const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/", import.meta.url));
const WAIT = { timeout: 20_000 };
const YESTERDAY = "5e5e5e5e-0000-4000-8000-00000000000y";
const OLD = "01d01d01-0000-4000-8000-00000000000o";
const iso = (ms: number) => new Date(ms).toISOString();

/** Hand-made sessions: one yesterday in another project with a long tool result, one ten days ago. */
function handMade(root: string, now: number): void {
  const y = { sessionId: YESTERDAY, cwd: "/work/other-project" };
  const t = now - 24 * 3600_000;
  const long = Array.from({ length: 40 }, (_, i) => `row ${i}: ${"data ".repeat(12)}`).join("\n");
  writeMirror(root, YESTERDAY, [
    rec("user", "y-u1", null, "list the big directory", { ...y, timestamp: iso(t) }),
    rec("assistant", "y-a1", "y-u1", [{
      type: "tool_use",
      id: "toolu_y",
      name: "Bash",
      input: { command: "ls -la /var/lib/a-directory-with-a-rather-long-name-that-does-not-wrap-easily" },
    }], {
      ...y,
      timestamp: iso(t + 1000),
      message: {
        role: "assistant",
        id: "msg_y1",
        model: "claude-haiku-4-5",
        content: [{
          type: "tool_use",
          id: "toolu_y",
          name: "Bash",
          input: { command: "ls -la /var/lib/a-directory-with-a-rather-long-name-that-does-not-wrap-easily" },
        }],
        usage: { input_tokens: 2_000_000, output_tokens: 10_000 },
      },
    }),
    rec("user", "y-u2", "y-a1", [{ type: "tool_result", tool_use_id: "toolu_y", content: long }], { ...y, timestamp: iso(t + 2000) }),
    rec("assistant", "y-a2", "y-u2", [{ type: "text", text: "That directory holds " + "averyveryverylongwordwithoutanyspaces".repeat(6) + " rows." }], {
      ...y,
      timestamp: iso(t + 3000),
    }),
  ]);
  // Long enough to scroll: it opens at its top, and "newest turn" goes to its end.
  const o = { sessionId: OLD, cwd: "/work/other-project" };
  const old = now - 10 * 24 * 3600_000;
  writeMirror(root, OLD, [
    rec("user", "o-u0", null, "an old question", { ...o, timestamp: iso(old) }),
    ...Array.from({ length: 24 }, (_, i) => [
      rec("assistant", `o-a${i}`, `o-u${i}`, [{ type: "text", text: `old answer ${i} ` + "and more ".repeat(20) }], {
        ...o,
        timestamp: iso(old + i),
      }),
      rec("user", `o-u${i + 1}`, `o-a${i}`, `old question ${i + 1}`, { ...o, timestamp: iso(old + i) }),
    ]).flat(),
  ]);
}

describe("the viewer on any screen, in headless Chromium", { timeout: 240_000 }, () => {
  let stub: StubUpstream;
  let tap: TestTap;
  let scratch: Scratch;
  let browser: BrowserPage;
  let page: Page;
  let sessionId = "";
  const claudeDir = () => `${scratch.home}/.claude`;

  before(async () => {
    scratch = makeScratch();
  });
  withTap((started) => ({ stub, tap } = started), () => ({ env: { CLAUDE_CONFIG_DIR: claudeDir() } }));
  before(async () => {
    const first = await runClaude(["-p", "RUNTOOL please", "--allowedTools", "Bash"], { baseUrl: tap.url, scratch });
    assert.equal(first.code, 0, describeRun(first));
    sessionId = stub.requests[0]?.headers["x-claude-code-session-id"] ?? "";
    await pollUntil(() => sessionMirror(tap.root, sessionId), (r) => r.filter((x) => x.type === "assistant").length >= 2);
    handMade(tap.root, Date.now());
    browser = await openBrowser({ width: 1400, height: 900 }, { timezoneId: "Asia/Tokyo" });
    page = browser.page;
    mkdirSync(ARTIFACTS, { recursive: true });
  });

  after(async () => {
    await browser?.close();
    scratch?.cleanup();
  });

  /** Sideways overflow of the page and of the conversation column, in px (0 when none). */
  const overflow = () =>
    page.evaluate(() => {
      const d = document.documentElement;
      const main = document.querySelector("#main")!;
      return { page: d.scrollWidth - d.clientWidth, main: main.scrollWidth - main.clientWidth };
    });
  /** Opens session `id` and waits until the page shows this answer (not what it showed before). */
  const open = async (id: string) => {
    const url = `${tap.url}/_tap/#/s/${id}`;
    const answered = page.waitForResponse((r) => r.url().endsWith(`/_tap/api/sessions/${id}`), WAIT);
    if (page.url() === url) await page.reload();
    else await page.goto(url);
    await answered;
    await page.locator(`#facts code`, { hasText: id }).first().waitFor(WAIT);
    await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  };

  it("1400 px: the list with titles, projects and costs beside the conversation; nothing overflows", async () => {
    await page.goto(`${tap.url}/_tap/`);
    const item = page.locator(`#sessions li.session[data-session="${sessionId}"]`);
    await item.waitFor(WAIT);
    assert.match(await item.locator(".title").innerText(), /^RUNTOOL please$/, "no title was generated (print mode): the first prompt");
    assert.match(await item.locator(".meta").innerText(), /\$0\.\d+ · [\d.]+k? tokens · proj$/);
    assert.match(await page.locator("#totals").innerText(), /^3 sessions · [\d.]+M tokens · ≈ \$\d+\.\d\d$/);
    await open(sessionId);
    assert.ok(await page.locator("#side").isVisible() && await page.locator("#main").isVisible(), "side by side");
    assert.ok(!(await page.locator("#back").isVisible()));
    assert.deepEqual(await overflow(), { page: 0, main: 0 });
    await page.screenshot({ path: `${ARTIFACTS}viewer-1400.png` });
  });

  /** What the home's chart draws: each day's value, and each part's value and height (in a 100-high box, peak at the top). */
  const drawn = () =>
    page.locator("#chart g.day").evaluateAll((gs) =>
      gs.map((g) => ({
        date: g.getAttribute("data-date")!,
        value: Number(g.getAttribute("data-value")),
        parts: [...g.querySelectorAll("rect[data-key]")].map((r) => ({
          key: r.getAttribute("data-key")!,
          value: Number(r.getAttribute("data-value")),
          height: Number(r.getAttribute("height")),
        })),
      }))
    );
  /** Whether the first element `selector` finds is on screen with nothing (the header) over its top left corner. */
  const uncovered = (selector: string) =>
    page.locator(selector).first().evaluate((e) => {
      const r = e.getBoundingClientRect();
      const hit = document.elementFromPoint(r.left + 8, r.top + 8);
      return r.top >= 0 && r.top + 8 < innerHeight && hit !== null && e.contains(hit);
    });
  const tokensOf = (u: Record<string, number>) => u.inputTokens + u.outputTokens + u.cacheCreationTokens + u.cacheReadTokens;

  it("the home, 1400 px: each day's bar is `usage --json`'s total for it, stacked by project or by model, in tokens or cost", async () => {
    await page.goto(`${tap.url}/_tap/`);
    await page.locator("#chart g.day").first().waitFor(WAIT);
    const run = await cli(["usage", "--json", "--mirror-dir", tap.root], { CLAUDE_CONFIG_DIR: claudeDir() });
    assert.equal(run.code, 0, run.stderr);
    type Part = { key: string; tokens: number; knownCostUSD: number };
    const usage = JSON.parse(run.stdout) as {
      days: { date: string; usage: Record<string, number>; knownCostUSD: number; parts: { project: Part[]; model: Part[] } }[];
      projects: { cwd: string }[];
      models: { model: string }[];
    };
    assert.equal(usage.days.length, 2, "today's session and yesterday's");
    for (const [stack, metric] of [["project", "tokens"], ["model", "tokens"], ["model", "cost"], ["project", "tokens"]]) {
      await page.locator("#stack").selectOption(stack);
      await page.locator("#metric").selectOption(metric);
      const bars = await drawn();
      assert.equal(bars.length, 30, "the last 30 days");
      const want = new Map(usage.days.map((d) => [d.date, metric === "tokens" ? tokensOf(d.usage) : d.knownCostUSD]));
      assert.deepEqual(bars.filter((b) => b.value > 0).map((b) => [b.date, b.value]), [...want], `${metric} by ${stack}: the bars are usage --json's days`);
      const peak = Math.max(...bars.map((b) => b.value));
      for (const bar of bars) {
        const sum = bar.parts.reduce((n, p) => n + p.value, 0);
        assert.ok(Math.abs(sum - bar.value) < 1e-6, `${bar.date}: its parts add up to it (${sum} against ${bar.value})`);
        for (const part of bar.parts) assert.ok(Math.abs(part.height - (part.value / peak) * 100) < 1e-6, `${bar.date} ${part.key} drawn to scale`);
      }
      // Each part is the day's part in usage --json, by project (drawn by its last path segment) or by model.
      for (const day of usage.days) {
        const want = day.parts[stack as "project" | "model"].map((
          p,
        ) => [stack === "model" ? p.key : p.key.split("/").pop(), metric === "tokens" ? p.tokens : p.knownCostUSD]);
        const got = bars.find((b) => b.date === day.date)!.parts.map((p) => [p.key, p.value]);
        assert.deepEqual(got.sort(), want.filter(([, v]) => v !== 0).sort(), `${day.date} ${metric} by ${stack}: its parts are usage --json's`);
      }
      const keys = new Set(bars.flatMap((b) => b.parts.map((p) => p.key)));
      const named = stack === "model" ? usage.models.map((m) => m.model) : usage.projects.map((p) => p.cwd.split("/").pop()!);
      assert.deepEqual([...keys].sort(), named.sort(), `stacked by ${stack}`);
    }
    assert.match(await page.locator("#drill").innerText(), /^No drill has run yet: sessiontap drill proves each session resumes in your Claude Code\.$/);
    await page.screenshot({ path: `${ARTIFACTS}viewer-home-1400.png` });
  });

  it("the home's numbers on hover and on focus and as a table for screen readers, the busiest sessions, and what Claude Code lost", async () => {
    const [yesterday, today] = (await drawn()).filter((b) => b.value > 0).map((b) => b.date);
    await page.locator(`#chart g.day[data-date="${yesterday}"]`).hover();
    assert.equal(await page.locator("#tip").innerText(), `${yesterday} · 2.01M tokens · ≈ $2.05 · other-project 2.01M tokens`);
    await page.locator(`#chart g.day[data-date="${today}"]`).focus();
    assert.match(await page.locator("#tip").innerText(), new RegExp(`^${today} · [\\d.]+k? tokens · ≈ \\$0\\.\\d+ · proj `));
    const table = await page.locator("#table tr").evaluateAll((rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
    assert.deepEqual(table.slice(0, 2), [["Day", "Tokens", "Cost", "By project"], [yesterday, "2.01M tokens", "≈ $2.05", "other-project 2.01M tokens"]]);
    assert.equal(table.length, 3);
    assert.match(await page.locator("#busiest li").first().innerText(), /^list the big directory · 2\.01M tokens · \$2\.05 · other-project$/);
    assert.equal(await page.locator("#busiest li").count(), 2, "the sessions with answers");
    // The hand-made sessions were never Claude Code's: it holds no transcript of them.
    const lost = await page.locator("#lost li[data-session]").evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.session));
    assert.deepEqual(lost.sort(), [OLD, YESTERDAY].sort());
    assert.match(await page.locator(`#lost li[data-session="${YESTERDAY}"]`).innerText(), /Claude: missing Restore…$/);
  });

  it("the home, 375 px: above the list, nothing overflows; its Restore… opens the session with the dry run shown", async () => {
    await page.setViewportSize({ width: 375, height: 812 });
    try {
      await page.goto(`${tap.url}/_tap/`);
      await page.locator("#chart g.day").first().waitFor(WAIT);
      assert.deepEqual(await overflow(), { page: 0, main: 0 });
      const home = (await page.locator("#home").boundingBox())!;
      const list = (await page.locator("#sessions").boundingBox())!;
      assert.ok(home.y < list.y && home.width <= 375, "the home first, then the list");
      assert.ok((await page.locator("#chart").boundingBox())!.width >= 340, "the chart takes the width");
      await page.screenshot({ path: `${ARTIFACTS}viewer-home-375.png`, fullPage: true });
      await page.locator(`#lost li[data-session="${YESTERDAY}"] button`).click();
      const dry = page.locator("#restore-dry");
      await dry.waitFor(WAIT);
      assert.match(await dry.innerText(), new RegExp(`^Would create .*/projects/-work-other-project/${YESTERDAY}\\.jsonl`));
      assert.equal(new URL(page.url()).hash, `#/s/${YESTERDAY}`);
      assert.ok(await uncovered("#restore-go"));
      await page.screenshot({ path: `${ARTIFACTS}viewer-home-restore-375.png` });
      await page.locator("#restore button", { hasText: "Cancel" }).click();
    } finally {
      await page.setViewportSize({ width: 1400, height: 900 });
    }
  });

  for (const width of [1400, 375]) {
    it(`${width} px: a conversation opens at its top, title and first card in view below the header; the newest turn is a click away`, async () => {
      await page.setViewportSize({ width, height: 812 });
      try {
        await page.goto(`${tap.url}/_tap/`); // from the home: a hash that does not change opens nothing
        await open(OLD);
        await page.locator("#conversation .rec").first().waitFor(WAIT);
        const main = await page.locator("#main").evaluate((m) => [m.scrollTop, m.scrollHeight, m.clientHeight]);
        assert.equal(main[0], 0, "at the top");
        assert.ok(main[1] > 2 * main[2], "a conversation long enough to scroll");
        assert.ok(await uncovered("#facts h2"), "its title in view");
        assert.ok(await uncovered("#conversation .rec"), "its first card in view, not under the header");
        await page.screenshot({ path: `${ARTIFACTS}viewer-open-${width}.png` });
        await page.getByRole("button", { name: "↓ newest turn" }).click();
        assert.ok(await uncovered(`[id="r-o-u24"]`), "the newest turn in view");
        if (width < 800) {
          await page.locator("#back").click();
          assert.equal(await page.evaluate(() => (document.activeElement as HTMLElement).closest("li")?.dataset.session), OLD);
          assert.ok(await uncovered(`#sessions li.active a`), "the session left is in view in the list, not under the header");
        }
      } finally {
        await page.setViewportSize({ width: 1400, height: 900 });
      }
    });
  }

  it("a tool call and its result are one pair: open when short, closed when long; the result's own record is folded into it", async () => {
    await open(sessionId);
    const pair = page.locator("#conversation details.tool-use").first();
    assert.equal(await pair.getAttribute("open"), "", "a short pair is open");
    assert.match(await pair.locator("summary").innerText(), /^Bash: echo hi-from-tool\s+1 line$/);
    assert.match(await pair.locator(".tool-result").innerText(), /hi-from-tool/);
    assert.equal(await page.locator("#conversation .rec.tool-results:visible").count(), 0, "no separate result card");
    await open(YESTERDAY);
    const long = page.locator("#conversation details.tool-use").first();
    assert.equal(await long.getAttribute("open"), null, "a long pair starts closed");
    assert.match(await long.locator("summary").innerText(), /^Bash: ls -la \/var\/lib\/.*40 lines$/s);
    assert.ok(!(await long.locator(".tool-result").isVisible()));
    await long.locator("summary").click();
    assert.ok(await long.locator(".tool-result").isVisible());
    assert.match(await long.locator(".tool-result").innerText(), /row 39:/);
  });

  it("times are the reader's (Tokyo here), with UTC on hover", async () => {
    await open(YESTERDAY);
    const time = page.locator("#conversation .rec.user time").first();
    const datetime = (await time.getAttribute("datetime"))!;
    const tokyo = new Date(Date.parse(datetime) + 9 * 3600_000).toISOString().slice(0, 19).replace("T", " ");
    assert.equal(await time.innerText(), tokyo);
    assert.equal(await time.getAttribute("title"), datetime.replace("T", " ").replace(/\.\d+Z$/, " UTC"));
  });

  it("filters by project and by day narrow the list and its totals", async () => {
    await page.goto(`${tap.url}/_tap/`);
    await page.locator("#sessions li.session").first().waitFor(WAIT);
    const shown = async () => (await page.locator("#sessions li.session").evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.session))).sort();
    assert.deepEqual(await shown(), [OLD, YESTERDAY, sessionId].sort());
    await page.locator("#project").selectOption("/work/other-project");
    assert.deepEqual(await shown(), [OLD, YESTERDAY].sort());
    await page.locator("#when").selectOption("yesterday");
    assert.deepEqual(await shown(), [YESTERDAY]);
    assert.match(await page.locator("#totals").innerText(), /^1 session · 2\.01M tokens · ≈ \$2\.05$/, "what yesterday cost in that project");
    await page.locator("#project").selectOption("");
    await page.locator("#when").selectOption("today");
    assert.deepEqual(await shown(), [sessionId]);
    const tenDaysAgo = new Date(Date.now() - 10 * 24 * 3600_000 + 9 * 3600_000).toISOString().slice(0, 10); // Tokyo's calendar day
    const day = page.getByLabel("Active on"); // the date field says what it is
    assert.ok(await page.locator('label[for="day"]').isVisible());
    await day.fill(tenDaysAgo);
    await day.dispatchEvent("change");
    assert.deepEqual(await shown(), [OLD]);
    await day.fill("");
    await page.locator("#when").selectOption("");
    assert.equal((await shown()).length, 3);
  });

  it("j/k (or the arrows) move between sessions; / goes to the search box", async () => {
    await page.goto(`${tap.url}/_tap/`);
    await page.locator("#sessions li.session").first().waitFor(WAIT);
    const order = await page.locator("#sessions li.session").evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.session!));
    await page.locator("#top h1").click(); // the page has the keyboard, nothing on it is focused
    await page.keyboard.press("j");
    await page.waitForURL(new RegExp(`#/s/${order[0]}$`), WAIT);
    await page.keyboard.press("j");
    await page.waitForURL(new RegExp(`#/s/${order[1]}$`), WAIT);
    await page.keyboard.press("ArrowDown");
    await page.waitForURL(new RegExp(`#/s/${order[2]}$`), WAIT);
    await page.keyboard.press("k");
    await page.waitForURL(new RegExp(`#/s/${order[1]}$`), WAIT);
    await page.locator(`#sessions li.active[data-session="${order[1]}"]`).waitFor(WAIT);
    await page.keyboard.press("/");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "search");
  });

  it("moving on before a session has loaded: the later choice stays shown, whatever order the answers come in", async () => {
    await page.goto(`${tap.url}/_tap/`);
    await page.locator("#sessions li.session").first().waitFor(WAIT);
    const order = await page.locator("#sessions li.session").evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.session!));
    // The first session's answer is held until the second one is on screen (the tap answers both; only
    // their order is arranged), as a slow disk or a large session would do.
    let release!: () => void;
    const secondShown = new Promise<void>((resolve) => (release = resolve));
    let firstAnswered!: () => void;
    const firstDone = new Promise<void>((resolve) => (firstAnswered = resolve));
    const firstUrl = `**/_tap/api/sessions/${encodeURIComponent(order[0])}`;
    await page.route(firstUrl, async (route) => {
      await secondShown;
      await route.continue();
      firstAnswered();
    });
    try {
      await page.goto(`${tap.url}/_tap/#/s/${order[0]}`);
      await page.goto(`${tap.url}/_tap/#/s/${order[1]}`);
      await page.locator(`#sessions li.active[data-session="${order[1]}"]`).waitFor(WAIT);
      const late = page.waitForResponse((r) => r.url().endsWith(`/api/sessions/${encodeURIComponent(order[0])}`), WAIT);
      release();
      await firstDone;
      await (await late).finished();
      // The page reads the late answer in the tasks right after it arrived; two frames later it has.
      await page.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
      assert.equal(await page.locator("#sessions li.active").getAttribute("data-session"), order[1], "the earlier choice's late answer took over");
    } finally {
      release();
      await page.unroute(firstUrl);
    }
  });

  it("search shows each hit's session title and marks the match, and marks it again in the conversation", async () => {
    await page.goto(`${tap.url}/_tap/`);
    await page.locator("#search").fill("HI-FROM-TOOL");
    const hit = page.locator("#results li.hit").first();
    await hit.waitFor(WAIT);
    assert.equal(await hit.locator(".title").innerText(), "RUNTOOL please");
    assert.deepEqual(await hit.locator("mark").allInnerTexts(), ["hi-from-tool"]);
    await hit.locator("a").click();
    await page.waitForURL(/#\/s\/[^/]+\/.+$/, WAIT);
    const uuid = decodeURIComponent(new URL(page.url()).hash.split("/")[3]);
    await page.locator(`[id="r-${uuid}"].fresh`).waitFor(WAIT);
    assert.ok(await page.locator(`[id="r-${uuid}"] mark`, { hasText: "hi-from-tool" }).first().isVisible());
    await page.locator("#search").fill("");
  });

  for (const width of [768, 360]) {
    it(`${width} px: nothing overflows sideways and the conversation stays readable${width < 800 ? "; list and conversation stack" : ""}`, async () => {
      await page.setViewportSize({ width, height: 860 });
      for (const id of [sessionId, YESTERDAY]) {
        await open(id);
        await page.locator("#conversation .rec").first().waitFor(WAIT);
        assert.deepEqual(await overflow(), { page: 0, main: 0 }, `${id} at ${width}`);
        const boxes = await page.locator("#conversation .rec:visible").evaluateAll((els) => els.map((e) => e.getBoundingClientRect().width));
        assert.ok(boxes.every((w) => w >= width - 60), `each message nearly the full width: ${boxes}`);
        const size = await page.locator("#conversation .rec .text").first().evaluate((e) => parseFloat(getComputedStyle(e).fontSize));
        assert.ok(size >= 13, `readable text: ${size}px`);
      }
      await page.screenshot({ path: `${ARTIFACTS}viewer-${width}.png` });
      assert.equal(await page.locator("#side").isVisible(), width >= 800, "the list beside the conversation only when wide");
      if (width < 800) {
        await page.locator("#back").click();
        await page.locator("#sessions li.session").first().waitFor({ state: "visible", ...WAIT });
        assert.ok(!(await page.locator("#main").isVisible()));
        assert.ok((await page.locator("#home").boundingBox())!.y < (await page.locator("#sessions").boundingBox())!.y, "the home above the list");
        assert.deepEqual(await overflow(), { page: 0, main: 0 });
        await page.screenshot({ path: `${ARTIFACTS}viewer-${width}-list.png` });
        await page.locator(`#sessions li.session[data-session="${YESTERDAY}"] a`).click();
        await page.locator("#conversation .rec").first().waitFor(WAIT);
        assert.ok(await page.locator("#main").isVisible() && !(await page.locator("#side").isVisible()));
      }
    });
  }

  it("Restore into Claude Code: the dry run first, then the file, then claude --resume continues the conversation", async () => {
    await page.setViewportSize({ width: 1400, height: 900 });
    // Lose Claude Code's own transcript of the session, as a cleanup or a crash would.
    const [transcript] = findTranscripts(scratch.home).filter((p) => p.endsWith(`${sessionId}.jsonl`));
    rmSync(transcript);
    await open(sessionId);
    await page.locator("#facts .badge.missing").waitFor(WAIT);
    await page.locator("#restore-plan").click();
    const dry = page.locator("#restore-dry");
    await dry.waitFor(WAIT);
    assert.match(
      await dry.innerText(),
      new RegExp(
        `^Would create ${
          transcript.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
        }\\n  with \\d+ prompts? and \\d+ answers? \\(\\d+ tool results?; \\d+ records? of Claude Code's context\\) of session ${sessionId}\\.$`,
      ),
    );
    assert.ok(!existsSync(transcript), "the dry run wrote nothing");
    await page.locator("#restore-go").click();
    const done = page.locator("#restore-done");
    await done.waitFor(WAIT);
    assert.match(
      await done.innerText(),
      new RegExp(`^Restored session ${sessionId}: .*\\n  written  ${transcript.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}[\\s\\S]*claude --resume ${sessionId}$`),
    );
    assert.equal(statSync(transcript).mode & 0o777, 0o600);
    // The open page shows the state after the restore within a second, and still says what was done.
    await page.locator("#facts .badge.intact").waitFor({ timeout: 1_000 });
    assert.equal(await page.locator("#facts .badge.missing").count(), 0);
    assert.match(await page.locator("#restore-done").innerText(), new RegExp(`^Restored session ${sessionId}`));
    await page.locator(`#sessions li.session[data-session="${sessionId}"] .badge.intact`).waitFor(WAIT);
    const before = stub.requests.length;
    const resumed = await runClaude(["-p", "--resume", sessionId, "and after the restore?"], { baseUrl: tap.url, scratch });
    assert.equal(resumed.code, 0, describeRun(resumed));
    const sent = stub.requests.slice(before).map((r) => new TextDecoder().decode(r.body)).find((b) => b.includes("and after the restore?"));
    assert.ok(sent !== undefined && sent.includes("RUNTOOL please") && sent.includes("hi-from-tool"), "the resumed request carries the restored conversation");
  });

  it("Restore over a transcript that holds the conversation: refused, then replaced on request, with a backup", async () => {
    const [transcript] = findTranscripts(scratch.home).filter((p) => p.endsWith(`${sessionId}.jsonl`));
    const held = readFileSync(transcript, "utf8");
    await open(sessionId);
    const errorsBefore = browser.errors.length;
    await page.locator("#restore-plan").click();
    await page.locator("#restore-force").waitFor(WAIT);
    assert.match(
      await page.locator("#restore .error").innerText(),
      /already holds every prompt and answer of the mirror's current branch \(\d+ user\/assistant records\); left alone\.$/,
    );
    assert.equal(readFileSync(transcript, "utf8"), held, "the refusal wrote nothing");
    // The refusal is a 409, which Chromium logs as a failed load: expected here, and the only thing logged.
    assert.deepEqual(browser.errors.splice(errorsBefore), ["Failed to load resource: the server responded with a status of 409 (Conflict)"]);
    // A record arriving now reloads the session; the refusal and its button stay.
    const reloaded = page.waitForResponse((r) => r.url().endsWith(`/_tap/api/sessions/${sessionId}`), WAIT);
    const side = { sessionId, cwd: scratch.project };
    writeMirror(tap.root, sessionId, [
      rec("user", "side-u1", null, "a question beside the refusal", side),
      rec("assistant", "side-a1", "side-u1", [{ type: "text", text: "an answer beside it" }], side),
    ], "2099-01-01T00-00-00.000Z.jsonl");
    await reloaded;
    await page.locator("#conversation", { hasText: "a question beside the refusal" }).waitFor(WAIT);
    assert.equal(await page.locator("#restore-force").count(), 1, "the reload kept the refusal");
    await page.locator("#restore-force").click();
    const dry = page.locator("#restore-dry");
    await dry.waitFor(WAIT);
    assert.match(await dry.innerText(), /^Would back up the transcript at /);
    await page.locator("#restore-go").click();
    const done = page.locator("#restore-done");
    await done.waitFor(WAIT);
    const backup = /\n {2}backup {3}(\S+) \(the transcript that was there\)/.exec(await done.innerText());
    assert.ok(backup !== null, await done.innerText());
    assert.equal(readFileSync(backup[1], "utf8"), held, "the backup is the transcript that was there");
  });

  it("the home's last drill, as doctor reads it: passed at 1400 px, failed at 375 px", async () => {
    const drill = `${tap.root}/.last-drill.json`;
    const at = new Date(Date.now() - 3600_000).toISOString();
    try {
      for (const [width, passed, shot] of [[1400, 2, "viewer-home-drill-ok-1400.png"], [375, 1, "viewer-home-drill-failed-375.png"]] as const) {
        writeFileSync(drill, JSON.stringify({ at, drilled: 2, passed, named: false, claudeCode: "2.1.332" }) + "\n");
        await page.setViewportSize({ width, height: 812 });
        await page.goto(`${tap.url}/_tap/`);
        await page.locator("#drill time").waitFor(WAIT);
        const text = await page.locator("#drill").innerText();
        const doctor = await cli(["doctor", "--json", "--mirror-dir", tap.root, "--url", "http://127.0.0.1:9"], { CLAUDE_CONFIG_DIR: claudeDir() });
        const check = (JSON.parse(doctor.stdout) as { check: string; detail: string }[]).find((c) => c.check === "last drill");
        assert.match(String(check?.detail), new RegExp(`: ${passed} of 2 sessions resumed whole by Claude Code 2\\.1\\.332`), doctor.stdout);
        if (passed === 2) {
          assert.match(text, /: 2 of 2 sessions resumed whole by Claude Code 2\.1\.332\.$/);
          assert.equal(await page.locator("#drill").getAttribute("class"), "ok");
        } else {
          assert.match(text, /: 1 of 2 sessions resumed whole by Claude Code 2\.1\.332; sessiontap drill names what failed\.$/);
          assert.equal(await page.locator("#drill").getAttribute("class"), "problem");
          assert.deepEqual(await overflow(), { page: 0, main: 0 });
        }
        await page.locator("#drill").scrollIntoViewIfNeeded();
        await page.screenshot({ path: `${ARTIFACTS}${shot}` });
      }
    } finally {
      rmSync(drill, { force: true });
      await page.setViewportSize({ width: 1400, height: 900 });
    }
  });

  it("the home of an empty mirror, 1400 and 375 px: thirty empty days, nothing busy, nothing lost, no drill yet", async () => {
    const dir = mkdtempSync(`${tmpdir()}/sessiontap-empty-home-`);
    await using empty = await startTestTap(stub.url, { CLAUDE_CONFIG_DIR: `${dir}/claude` }, {}, dir);
    try {
      for (const width of [1400, 375]) {
        await page.setViewportSize({ width, height: 812 });
        await page.goto(`${empty.url}/_tap/`);
        await page.locator("#chart g.day").first().waitFor(WAIT);
        const bars = await drawn();
        assert.equal(bars.length, 30);
        assert.deepEqual(bars.filter((b) => b.value !== 0 || b.parts.length > 0), [], "usage --json has no days");
        assert.equal(await page.locator("#busiest").innerText(), "No answers with token usage yet.");
        assert.equal(await page.locator("#lost").innerText(), "Nothing lost: Claude Code holds a whole transcript of every mirrored session.");
        assert.match(await page.locator("#drill").innerText(), /^No drill has run yet/);
        assert.equal(await page.locator("#sessions").innerText(), "No mirrored sessions yet.");
        assert.deepEqual(await overflow(), { page: 0, main: 0 });
        await page.screenshot({ path: `${ARTIFACTS}viewer-home-empty-${width}.png`, fullPage: true });
      }
    } finally {
      await page.setViewportSize({ width: 1400, height: 900 });
      await page.goto(`${tap.url}/_tap/`); // off the empty tap before it stops, so the page's refreshes do not fail
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("the screenshots were kept, and the page logged no error", () => {
    const shots = ["viewer-1400.png", "viewer-768.png", "viewer-360.png", "viewer-360-list.png", "viewer-home-1400.png", "viewer-home-375.png"];
    const home = [
      "viewer-home-restore-375.png",
      "viewer-home-drill-ok-1400.png",
      "viewer-home-drill-failed-375.png",
      "viewer-home-empty-1400.png",
      "viewer-home-empty-375.png",
    ];
    for (const name of [...shots, ...home, "viewer-open-1400.png", "viewer-open-375.png"]) {
      assert.ok(statSync(`${ARTIFACTS}${name}`).size > 10_000, name);
    }
    assert.deepEqual(browser.errors, []);
  });
});
