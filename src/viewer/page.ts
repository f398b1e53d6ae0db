/**
 * The viewer page served at `GET /_tap/`: one HTML document with its CSS and script inline (nothing loaded
 * from elsewhere). The script is the typed browser client in client/, bundled (client-script.ts); the
 * layout is page-style.ts.
 */
import { CONVERSATION_CSS } from "../transcript/render-html.ts";
import { PAGE_CSS } from "./page-style.ts";

/** The page, with `nonce` on its script (the Content-Security-Policy, routes.ts, allows only that script). */
export function viewerPage(nonce: string, version: string, script: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>sessiontap</title><link rel="icon" href="data:,">
<style>${PAGE_CSS}${CONVERSATION_CSS}</style>
</head><body>
<header id="top"><button id="back" type="button" aria-label="Back to the sessions">← Sessions</button><h1>sessiontap</h1><span class="ver">${
    version.replace(/[^0-9A-Za-z.+-]/g, "")
  }</span><span id="live">○ connecting</span><span id="keys">j/k or ↑/↓ sessions · / search · Esc back</span></header>
<nav id="side" aria-label="Sessions"><div id="tools"><input id="search" type="search" placeholder="Search all sessions" autocomplete="off" aria-label="Search all sessions">
<div id="filters"><select id="project" aria-label="Project"><option value="">All projects</option></select>
<select id="when" aria-label="When"><option value="">Any time</option><option value="today">Today</option><option value="yesterday">Yesterday</option><option value="7">Last 7 days</option><option value="30">Last 30 days</option></select>
<input id="day" type="date" aria-label="Active on this day"></div><div id="totals"></div><div id="unseen" role="status" hidden></div></div>
<ul id="sessions"></ul><ul id="results" hidden></ul></nav>
<main id="main" class="conv"><div id="facts"><div class="empty">Pick a session.</div></div><div id="conversation"></div></main>
<script nonce="${nonce.replace(/[^A-Za-z0-9+/=-]/g, "")}">${script.replace(/<\/(script)/gi, "<\\/$1")}</script>
</body></html>
`;
}
