// The page at `GET /_tap/`: one document with its CSS and its one script inline: docs/DESIGN.md "The viewer".
import { CONVERSATION_CSS } from "../transcript/render.ts";

/** Bundles a browser module with its imports into one minified classic script (runtime/). */
export type Bundler = (entry: URL) => Promise<string>;

/** Defined by the binary's build (scripts/compile-args.mjs). */
const PREBUILT = (globalThis as { SESSIONTAP_VIEWER_CLIENT?: string }).SESSIONTAP_VIEWER_CLIENT;
let built: Promise<string> | null = null;

/** Bundled once (again after a failure). */
export function clientScript(bundle: Bundler): Promise<string> {
  if (PREBUILT !== undefined) return Promise.resolve(PREBUILT);
  built ??= bundle(new URL("./client/main.ts", import.meta.url)).catch((error) => {
    built = null;
    throw new Error(`the viewer's script could not be built (${error instanceof Error ? error.message.split("\n")[0] : String(error)})`);
  });
  return built;
}

/** One layout from 360 px up: below 800 px the list (under the home) and a conversation take turns; nothing is wide enough to push the page sideways. */
const PAGE_CSS = `
*{box-sizing:border-box}html,body{margin:0;height:100%}
body{display:grid;grid-template-rows:auto minmax(0,1fr);grid-template-columns:minmax(260px,340px) minmax(0,1fr);grid-template-areas:"top top" "side main";background:#f8f9fb;overflow:hidden}
#top{grid-area:top;display:flex;align-items:center;flex-wrap:wrap;gap:4px 12px;padding:8px 14px;background:#1d2330;color:#fff;font:14px system-ui,sans-serif;min-width:0}
#top h1{font-size:15px;margin:0;font-weight:600}#top .ver,#live,#keys{color:#adb5bd;font-size:12px}#live.on{color:#8ce99a}#live.problem{color:#ffa8a8}
#keys{margin-left:auto}#back{display:none;background:none;border:1px solid #5b6475;color:#fff;margin:0;padding:2px 8px}
#side{grid-area:side;border-right:1px solid #d8dde6;overflow:auto;background:#fff;font:13px system-ui,sans-serif;min-width:0}
#tools{padding:8px;border-bottom:1px solid #e9ecef;display:flex;flex-direction:column;gap:6px}
#search{width:100%;padding:6px 8px;border:1px solid #ced4da;border-radius:6px;font:inherit}#filters{display:flex;flex-wrap:wrap;gap:6px}
#filters label{flex:1 1 100%;display:flex;align-items:center;gap:6px;color:#5b6475}
#filters select,#filters input{flex:1 1 120px;min-width:0;padding:4px 6px;border:1px solid #ced4da;border-radius:6px;font:inherit;background:#fff}
#totals{font-size:12px;color:#343a40}#unseen{font-size:12px;color:#7a4b00;background:#fff4e0;border-left:3px solid #e8a33d;padding:4px 6px;margin-top:6px}
#unseen p{margin:0}#sessions,#results{list-style:none;margin:0;padding:0}#sessions li,#results li{border-bottom:1px solid #f1f3f5}
#sessions a,#results a{display:block;padding:8px 10px;color:inherit;text-decoration:none;min-width:0}
#sessions a:hover,#results a:hover,#sessions a:focus,#results a:focus{background:#f1f3f5;outline:none}#sessions li.active a{background:#e7f0ff}
.title{font-weight:600;color:#1d2330;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.meta{font-size:11px;color:#5b6475;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}.off-branch{color:#8a5200;font-style:italic}
.sid{font:11px ui-monospace,monospace;color:#5b6475}
.badge{display:inline-block;font-size:11px;border-radius:4px;padding:0 5px;margin-left:6px;background:#ffe3e3;color:#c92a2a}
.badge.intact{background:#d3f9d8;color:#2b8a3e}.snippet{font-size:12px;color:#343a40;overflow-wrap:anywhere;margin-top:2px}
.guard{margin:4px 0;padding:4px 8px;border-radius:6px;background:#fff4e6;border:1px solid #ffa94d;color:#862e00;font:12px system-ui,sans-serif;overflow-wrap:anywhere}
.guard code{background:#ffe8cc;padding:0 4px;border-radius:4px}#main,#home{grid-area:main;overflow:auto;padding:12px 20px 40px;min-width:0}
body.viewing #home,body:not(.viewing) #main{display:none}#facts,#home{font:13px system-ui,sans-serif;color:#343a40;overflow-wrap:anywhere}
#facts{margin-bottom:10px}#facts h2{font-size:17px;margin:0 0 6px}#facts .row{margin:2px 0}#facts code{background:#f1f3f5;padding:1px 4px;border-radius:4px}
#facts .links a{margin-right:10px}#restore{margin:8px 0;padding:8px;border:1px solid #d8dde6;border-radius:8px;background:#fff}
button{font:inherit;padding:2px 10px;border-radius:6px;border:1px solid #1c7ed6;background:#e7f5ff;color:#1864ab;cursor:pointer;margin:4px 6px 0 0}
#restore button.go{background:#1c7ed6;color:#fff}#restore pre{margin:6px 0}#restore .error{color:#c92a2a}#home h2{font-size:15px;margin:16px 0 6px}
#home select{font:inherit;padding:2px 4px;border:1px solid #ced4da;border-radius:6px;background:#fff}
#chart{display:block;width:100%;height:180px;background:#fff;border:1px solid #d8dde6;border-radius:8px;margin-top:6px}#chart .day:focus{outline:none}
#chart .day:hover rect,#chart .day:focus rect{stroke:#1d2330;stroke-width:1.5px;vector-effect:non-scaling-stroke}
.axis{display:flex;justify-content:space-between;font-size:11px;color:#5b6475}#tip{min-height:1.5em;margin:4px 0}
#legend{list-style:none;padding:0;margin:4px 0;display:flex;flex-wrap:wrap;gap:2px 12px}
#legend i{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px}#busiest,#lost{margin:0;padding-left:22px}
#busiest li,#lost li{margin:4px 0}#drill.ok{color:#2b8a3e}#drill.problem,#drill .problem{color:#c92a2a}.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.empty{color:#868e96;font:14px system-ui,sans-serif;padding:20px}
@media (max-width:799px){
  body{grid-template-columns:minmax(0,1fr);grid-template-areas:"top" "main";scroll-padding-top:48px}body:not(.viewing){display:block;overflow:auto}
  body.viewing #side{display:none}body.viewing #back{display:inline-block}#top{position:sticky;top:0;z-index:1}#side{border-right:0;overflow:visible}
  #main,#home{padding:8px 10px 40px;overflow-y:auto}body:not(.viewing) #home{overflow:visible}#keys{display:none}.rec{padding:6px 8px}
}
`;

/** The Content-Security-Policy (routes.ts) runs only the script carrying `nonce`. */
export function viewerPage(nonce: string, version: string, script: string): string {
  const when = [["", "Any time"], ["today", "Today"], ["yesterday", "Yesterday"], ["7", "Last 7 days"], ["30", "Last 30 days"]];
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>sessiontap</title><link rel="icon" href="data:,">
<style>${PAGE_CSS}${CONVERSATION_CSS}</style>
</head><body>
<header id="top"><button id="back" type="button" aria-label="Back to the sessions">← Sessions</button><h1>sessiontap</h1><span class="ver">${
    version.replace(/[^0-9A-Za-z.+-]/g, "")
  }</span><span id="live"></span><span id="keys">j/k or ↑/↓ sessions · / search · Esc back</span></header>
<section id="home" aria-label="Where the tokens went"><h2>Tokens and cost per day</h2>
<div><label>Show <select id="metric"><option value="tokens">tokens</option><option value="cost">cost</option></select></label>
<label>by <select id="stack"><option value="project">project</option><option value="model">model</option></select></label> <span id="zone"></span></div>
<svg id="chart" role="img" aria-labelledby="tip"></svg><div class="axis" aria-hidden="true"><span id="from"></span><span id="peak"></span><span id="to"></span></div>
<div id="tip" aria-live="polite"></div><ul id="legend"></ul><div class="sr"><table id="table"></table></div>
<h2>Busiest sessions</h2><ol id="busiest"></ol>
<h2>Lost in Claude Code</h2><ul id="lost"></ul>
<h2>Last drill</h2><p id="drill"></p></section>
<nav id="side" aria-label="Sessions"><div id="tools"><input id="search" type="search" placeholder="Search all sessions" autocomplete="off" aria-label="Search all sessions">
<div id="filters"><select id="project" aria-label="Project"><option value="">All projects</option></select>
<select id="when" aria-label="When">${when.map(([v, t]) => `<option value="${v}">${t}</option>`).join("")}</select>
<label for="day">Active on <input id="day" type="date"></label></div><div id="totals"></div><div id="unseen" role="status" hidden></div></div>
<ul id="sessions"></ul><ul id="results" hidden></ul></nav>
<main id="main" class="conv"><div id="facts"></div><div id="conversation"></div></main>
<script nonce="${nonce.replace(/[^A-Za-z0-9+/=-]/g, "")}">${script.replace(/<\/(script)/gi, "<\\/$1")}</script>
</body></html>
`;
}
