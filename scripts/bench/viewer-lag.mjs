// What the viewer's search costs the thread that relays bytes, in-process: the largest delay of a 1 ms
// timer on this thread while the viewer searches a 1,000-session archive (archive.mjs), with the viewer's
// data read in its own Worker (as a tap reads it) and, for comparison, in this thread (as it was read
// before, and still is for a test that injects a filesystem). Run under Bun or Deno from the repository:
//   node_modules/.bin/bun scripts/bench/viewer-lag.mjs      node_modules/.bin/deno run -A scripts/bench/viewer-lag.mjs
// Prints one JSON line.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { writeArchive } from "./archive.mjs";

const { createViewer } = await import("../../src/viewer/routes.ts");
const { nodeFs } = await import("../../src/storage/fs-adapter.ts");
const { bundleScript } = await import("../../src/runtime/index.ts");
const scratch = mkdtempSync(join(tmpdir(), "viewer-lag-"));
const root = join(scratch, "mirror");
const bytes = writeArchive(root, { sessions: 1000 });
const out = {
  runtime: process.versions.bun ? `bun ${process.versions.bun}` : `deno ${globalThis.Deno?.version?.deno}`,
  archiveMiB: +(bytes / 1048576).toFixed(1),
};

for (const where of ["thread", "worker"]) {
  const viewer = createViewer({
    mirrorDir: root,
    claudeDir: join(scratch, "claude"),
    host: "127.0.0.1",
    version: "0",
    bundle: bundleScript,
    onError: (e) => console.error(e),
    ...(where === "thread" ? { fs: nodeFs } : {}),
  });
  // What the page asks: the viewer's own /api/search route, with a loopback Host as a browser sends it.
  const search = async (q) => (await viewer.deps.routes.request(`/api/search?q=${q}`, { headers: { host: "127.0.0.1" } })).json();
  await search("zebracorn"); // warm: the Worker started, the files cached
  let last = performance.now();
  let lag = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    lag = Math.max(lag, now - last - 1);
    last = now;
  }, 1);
  const searches = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    await search("zebracorn");
    searches.push(performance.now() - t);
  }
  clearInterval(timer);
  viewer.close();
  out[where] = { searchMs: +searches.sort((a, b) => a - b)[2].toFixed(1), maxLagMs: +lag.toFixed(1) };
}
rmSync(scratch, { recursive: true, force: true });
console.log(JSON.stringify(out));
process.exit(0);
