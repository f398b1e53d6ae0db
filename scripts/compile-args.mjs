// The one `bun build --compile` command line, for `npm run build` (scripts/build.mjs) and `npm run release`
// (scripts/release.mjs). The Worker scripts of the mirror engine and the viewer's reader are entry points
// too: the binary embeds them, and main.ts names each by a URL relative to itself (docs/RUNTIMES.md "Compiling"). --format=esm is what
// lets --bytecode resolve it. The viewer's browser client is bundled first, into one classic script, and
// defined into the binary as a string (src/viewer/page.ts reads it; docs/DESIGN.md "The viewer").
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
let script = null;

/** The viewer's browser client (src/viewer/client/main.ts and what it imports), bundled by `bun build`. */
export function viewerClientScript() {
  if (script !== null) return script;
  const run = spawnSync(`${root}node_modules/.bin/bun`, ["build", ...CLIENT_BUILD_ARGS, "src/viewer/client/main.ts"], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 16 * 1024 * 1024,
  });
  if (run.status !== 0) throw new Error(`bun build of the viewer's client failed: ${(run.stderr || String(run.error)).trim()}`);
  return (script = run.stdout);
}

/** How the browser client is bundled: for a browser, one minified classic script (the tap does the same from source). */
export const CLIENT_BUILD_ARGS = ["--target=browser", "--format=iife", "--minify"];

/** Arguments to `bun` that compile the tap into `outfile`, for Bun's `target` (undefined: this machine). */
export function compileArgs(outfile, target) {
  const args = [
    "build",
    "--compile",
    "--minify",
    "--bytecode",
    "--format=esm",
    "src/main.ts",
    "src/mirror-worker.ts",
    "src/viewer-worker.ts",
    "--outfile",
    outfile,
  ];
  args.push("--define", `globalThis.SESSIONTAP_VIEWER_CLIENT=${JSON.stringify(viewerClientScript())}`);
  if (target) args.push(`--target=${target}`);
  return args;
}
