/**
 * The viewer page's own stylesheet (the conversation's is transcript/render-html.ts CONVERSATION_CSS). One
 * layout from 360 px up: below 800 px the session list and the conversation stack (one shows at a time,
 * a back button between them); wider, they sit side by side. Nothing has a fixed width that could push the
 * page sideways: long words, paths and code wrap.
 */
export const PAGE_CSS = `
*{box-sizing:border-box}
html,body{margin:0;height:100%}
body{display:grid;grid-template-rows:auto minmax(0,1fr);grid-template-columns:minmax(260px,340px) minmax(0,1fr);grid-template-areas:"top top" "side main";background:#f8f9fb;overflow:hidden}
#top{grid-area:top;display:flex;align-items:center;flex-wrap:wrap;gap:4px 12px;padding:8px 14px;background:#1d2330;color:#fff;font:14px system-ui,sans-serif;min-width:0}
#top h1{font-size:15px;margin:0;font-weight:600}
#top .ver{color:#adb5bd;font-size:12px}
#live{font-size:12px;color:#adb5bd}
#live.on{color:#8ce99a}
#live.problem{color:#ffa8a8}
#keys{margin-left:auto;font-size:12px;color:#adb5bd}
#back{display:none;background:none;border:1px solid #5b6475;color:#fff;border-radius:6px;padding:2px 8px;font:inherit;cursor:pointer}
#side{grid-area:side;border-right:1px solid #d8dde6;overflow:auto;background:#fff;font:13px system-ui,sans-serif;min-width:0}
#tools{padding:8px;border-bottom:1px solid #e9ecef;display:flex;flex-direction:column;gap:6px}
#search{width:100%;padding:6px 8px;border:1px solid #ced4da;border-radius:6px;font:inherit}
#filters{display:flex;flex-wrap:wrap;gap:6px}
#filters select,#filters input{flex:1 1 120px;min-width:0;padding:4px 6px;border:1px solid #ced4da;border-radius:6px;font:inherit;background:#fff}
#totals{font-size:12px;color:#343a40}
#unseen{font-size:12px;color:#7a4b00;background:#fff4e0;border-left:3px solid #e8a33d;padding:4px 6px;margin-top:6px}
#unseen p{margin:0}
#sessions,#results{list-style:none;margin:0;padding:0}
#sessions li,#results li{border-bottom:1px solid #f1f3f5}
#sessions a,#results a{display:block;padding:8px 10px;color:inherit;text-decoration:none;min-width:0}
#sessions a:hover,#results a:hover,#sessions a:focus,#results a:focus{background:#f1f3f5;outline:none}
#sessions li.active a{background:#e7f0ff}
.title{font-weight:600;color:#1d2330;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.meta{font-size:11px;color:#5b6475;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.off-branch{color:#8a5200;font-style:italic}
.sid{font:11px ui-monospace,monospace;color:#5b6475}
.badge{display:inline-block;font-size:11px;border-radius:4px;padding:0 5px;margin-left:6px}
.badge.intact{background:#d3f9d8;color:#2b8a3e}.badge.stub,.badge.missing,.badge.behind{background:#ffe3e3;color:#c92a2a}
.snippet{font-size:12px;color:#343a40;overflow-wrap:anywhere;margin-top:2px}
.guard{margin:4px 0;padding:4px 8px;border-radius:6px;background:#fff4e6;border:1px solid #ffa94d;color:#862e00;font:12px system-ui,sans-serif;overflow-wrap:anywhere}
.guard code{background:#ffe8cc;padding:0 4px;border-radius:4px}
#main{grid-area:main;overflow:auto;padding:12px 20px 40px;min-width:0}
#facts{font:13px system-ui,sans-serif;color:#343a40;margin-bottom:10px;overflow-wrap:anywhere}
#facts h2{font-size:17px;margin:0 0 6px}
#facts .row{margin:2px 0}
#facts code{background:#f1f3f5;padding:1px 4px;border-radius:4px}
#facts .links a{margin-right:10px}
#restore{margin:8px 0;padding:8px;border:1px solid #d8dde6;border-radius:8px;background:#fff}
#restore button{font:inherit;padding:4px 10px;border-radius:6px;border:1px solid #1c7ed6;background:#e7f5ff;color:#1864ab;cursor:pointer;margin:4px 6px 0 0}
#restore button.go{background:#1c7ed6;color:#fff}
#restore pre{margin:6px 0}
#restore .error{color:#c92a2a}
.empty{color:#868e96;font:14px system-ui,sans-serif;padding:20px}
@media (max-width:799px){
  body{grid-template-columns:minmax(0,1fr);grid-template-areas:"top" "side"}
  body.viewing{grid-template-areas:"top" "main"}
  body.viewing #side{display:none}
  body:not(.viewing) #main{display:none}
  body.viewing #back{display:inline-block}
  #side{border-right:0}
  #main{padding:8px 10px 40px}
  #keys{display:none}
  .rec{padding:6px 8px}
}
`;
