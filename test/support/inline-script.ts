/** The viewer page's inline script, as a test reads it out of the HTML. */
import assert from "node:assert/strict";

/** The text of the page's one `<script nonce="…">`; fails the calling test unless there is exactly one script and it carries `nonce`. */
export function inlineScript(html: string, nonce: string): string {
  const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
  assert.equal(scripts.length, 1, "the page has one script");
  assert.equal(scripts[0][1], ` nonce="${nonce}"`, "the script carries the response's nonce");
  return scripts[0][2];
}
