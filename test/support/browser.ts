/**
 * Headless Chromium for the viewer tests: the build from the `@sparticuz/chromium` npm package (unpacked by
 * scripts/test-chromium.mjs, run with Node so the unpacking is the same under every test runtime), driven by
 * `playwright-core` over its pipe transport, which works under Bun and Deno alike. The build runs as one
 * process, so the browser lives exactly as long as its page: one page per browser, resized, never replaced.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import process from "node:process";
import { type Browser, chromium, type Page } from "playwright-core";
import { ROOT } from "./child.ts";

/** A browser and its one page. */
export interface BrowserPage {
  browser: Browser;
  page: Page;
  /** What the page threw or logged as an error, in order (a viewer test expects none unless it caused one). */
  errors: string[];
  /** Closes the browser (and so the page). */
  close(): Promise<void>;
}

/** The Node.js that runs the repository's scripts (the one running `npm test`, else `node` on PATH). */
export function nodeBin(): string {
  return process.env.SESSIONTAP_TEST_NODE || "node";
}

/** Where the unpacked Chromium is and how to start it; fails the calling test with the reason when it cannot be had. */
export function chromiumLaunch(): { executable: string; fontconfig: string | null; args: string[] } {
  const found = spawnSync(nodeBin(), ["scripts/test-chromium.mjs", "--json"], { cwd: ROOT, encoding: "utf8", timeout: 180_000 });
  assert.equal(found.status, 0, `no Chromium for the viewer tests: ${found.stderr || found.error}`);
  return JSON.parse(found.stdout);
}

/** Launches headless Chromium with one page of `viewport` (in the time zone `timezoneId`, e.g. "Asia/Tokyo", when given). */
export async function openBrowser(viewport = { width: 1280, height: 900 }, options: { timezoneId?: string } = {}): Promise<BrowserPage> {
  const { executable, fontconfig, args } = chromiumLaunch();
  const browser = await chromium.launch({
    executablePath: executable,
    args,
    headless: true,
    env: { ...process.env as Record<string, string>, ...(fontconfig ? { FONTCONFIG_FILE: fontconfig } : {}) },
  });
  try {
    const page = await browser.newPage({ viewport, ...options });
    const errors: string[] = [];
    page.on("pageerror", (error) => errors.push(error.message));
    page.on("console", (message) => {
      if (message.type() === "error") errors.push(message.text());
    });
    return { browser, page, errors, close: () => browser.close() };
  } catch (error) {
    await browser.close();
    throw error;
  }
}
