#!/usr/bin/env node
// `deno task compile`: dist/sessiontap-deno with `deno compile`, from deno.compile.json's runtime
// dependencies (not all of node_modules). deno compile builds on its `denort` base binary: DENORT_BIN
// names one, else Deno downloads it. Two ways that goes wrong are caught here and said in one line: no
// denort to be had (offline), and a DENORT_BIN that is the deno CLI itself, from which deno compile writes
// a program that ignores the embedded tap and behaves as `deno`. The output is written aside, run once
// (`--version` must name sessiontap) and only then moved into place, so a bad build never replaces a good one.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import process from "node:process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const deno = `${root}node_modules/.bin/deno`;
const out = process.env.SESSIONTAP_DENO_OUT ?? `${root}dist/sessiontap-deno`;
const staging = `${out}.tmp-${process.pid}`;
const version = JSON.parse(readFileSync(`${root}package.json`, "utf8")).version;
const HOW = "set DENORT_BIN to a denort binary of the same Deno version (from Deno's release downloads: denort-<target>.zip)";

/** Says why, once, and exits non-zero. */
function fail(message) {
  rmSync(staging, { force: true });
  console.error(`sessiontap: deno task compile: ${message}`);
  process.exit(1);
}

const denort = process.env.DENORT_BIN || undefined; // set but empty counts as unset
const env = { ...process.env, NO_COLOR: "1" };
if (denort === undefined) delete env.DENORT_BIN;
if (denort !== undefined && !existsSync(denort)) fail(`DENORT_BIN=${denort} does not exist: ${HOW}`);
mkdirSync(`${root}dist`, { recursive: true });
const args = [
  "compile",
  "--allow-all",
  "--unstable-no-legacy-abort",
  "--no-check",
  "--config",
  "deno.compile.json",
  "--include",
  "src/mirror-worker.ts",
  "--include",
  "src/viewer-worker.ts",
  "--output",
  staging,
  "src/main.ts",
];
console.log(`deno ${args.join(" ")}${denort === undefined ? "  (no DENORT_BIN: Deno downloads denort)" : `  (DENORT_BIN=${denort})`}`);
const built = spawnSync(deno, args, { cwd: root, encoding: "utf8", env });
process.stdout.write(built.stdout);
process.stderr.write(built.stderr);
if (built.status !== 0) {
  // Deno prints a chain of causes ("0: …", "1: …"); the last one says what actually failed.
  const causes = built.stderr.split("\n").map((l) => l.trim()).filter((l) => /^\d+: /.test(l) && !/<unknown>/.test(l));
  const why = (causes.at(-1) ?? built.stderr.split("\n").find((l) => l.startsWith("error:")) ?? "").replace(/^\d+: |^error: /, "");
  if (denort === undefined && /Setting up base binary|denort|dl\.deno\.land/i.test(built.stderr)) {
    fail(`Deno could not download its denort base binary (${why || "no detail"}); offline, ${HOW}`);
  }
  fail(`deno compile failed (${built.status ?? built.signal}): ${why || "see above"}`);
}
const check = spawnSync(staging, ["--version"], { encoding: "utf8", timeout: 30_000 });
if (check.stdout.trim() !== `sessiontap ${version}`) {
  const said = (check.stdout || check.stderr || String(check.error)).trim().split("\n")[0];
  fail(
    `the compiled program does not run the tap (\`--version\` said "${said}", not "sessiontap ${version}"): ` +
      `${denort === undefined ? "the downloaded denort" : `DENORT_BIN=${denort}`} is not a denort binary (the deno CLI will not do); ${HOW}`,
  );
}
renameSync(staging, out);
console.log(`wrote ${out.replace(root, "")} (sessiontap ${version}, Deno)`);
