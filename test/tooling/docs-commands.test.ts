// Every command the README and docs/*.md show keeps working, and the README keeps to its budget. The
// commands are read from the documents' code blocks (a block with `$ ` prompts: its prompted lines; any
// other shell block: every line; blocks fenced as text, json, sql are not commands), split at `&&`. Each
// `sessiontap …` command runs here, in-process, in a small world made for it (a scratch HOME whose mirror
// holds the sessions the documents name, Claude Code's transcript of one a stub, a tap for doctor to find,
// a stub upstream), and must exit as the table below says (0 unless listed). Every other command — npm, a
// service manager, another OS's tool, a command that needs PostgreSQL, Claude Code itself — must be listed
// in NOT_HERE with the reason it does not run here and the test that runs it, if one does: a documented
// command that is neither run nor listed fails the test, so none is skipped silently.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { HELP } from "../../src/config/commands.ts";
import { encodeProjectDir } from "../../src/storage/claude-projects.ts";
import { ROOT } from "../support/child.ts";
import { pollUntil } from "../support/poll.ts";
import { cli, rec, writeMirror } from "../support/recover.ts";
import { type TestTap, withTap } from "../support/tap.ts";

/** The documents whose commands are checked. */
const DOCS = ["README.md", ...readdirSync(`${ROOT}docs`).filter((n) => n.endsWith(".md")).sort().map((n) => `docs/${n}`)];
/** The topic documents the README and `--help` must point at (the others are the design's). */
const TOPICS = ["commands", "settings", "recovery", "teams", "providers", "service", "mirror", "failures", "releases", "development"];

/**
 * Commands that do not run here, each with why and where it is run or checked instead. Matched against
 * the command (after `$ `, without a trailing comment), in the document named, or in any when `doc` is "*".
 */
const NOT_HERE: { doc: string; pattern: RegExp; why: string }[] = [
  {
    doc: "*",
    pattern: /^npx sessiontap\b|^npm i -g sessiontap$/,
    why: "installs from a registry: test/binary/npm-packages.test.ts runs both against one on loopback",
  },
  { doc: "*", pattern: /^npm install$|^npm ci\b/, why: "installs the dev dependencies: CI runs npm ci on a clean clone (.ci/run)" },
  { doc: "*", pattern: /^npm test$|^node scripts\/test\.mjs\b/, why: "the whole suite (or parts of it): this test is part of it; CI runs npm test" },
  {
    doc: "*",
    pattern: /^npm run build$|^SESSIONTAP_BUILD_TARGET=\S+ npm run build$/,
    why: "compiles the binary: `node scripts/test.mjs binary` runs scripts/build.mjs",
  },
  { doc: "*", pattern: /^npm run release$/, why: "cross-compiles five binaries: test/binary/release.test.ts and npm-packages.test.ts run it" },
  { doc: "*", pattern: /^npm run (lint|fmt|typecheck)$/, why: "the linter, formatter and type-checker: `node scripts/test.mjs lint` runs each" },
  { doc: "*", pattern: /^npm run bench\b/, why: "minutes of load against nginx and the binary: docs/BENCHMARKS.md records its runs" },
  {
    doc: "*",
    pattern: /^node scripts\/pg-test-cluster\.mjs$/,
    why: "a PostgreSQL cluster left running by hand: scripts/test.mjs starts the same one for the store tests",
  },
  { doc: "*", pattern: /^install -m 0755 dist\/sessiontap /, why: "copies the built binary onto the user's PATH (outside any scratch directory)" },
  {
    doc: "*",
    pattern: /^export ANTHROPIC_BASE_URL=|^unset ANTHROPIC_BASE_URL$/,
    why: "shell builtins that set what Claude Code reads: the e2e tests hand Claude Code the same variable (test/support/claude.ts)",
  },
  { doc: "*", pattern: /^claude$/, why: "Claude Code itself, interactive: test/e2e/claude-interactive.test.ts drives it through a tap" },
  {
    doc: "*",
    pattern: /^sessiontap claude\b/,
    why: "runs Claude Code in a terminal: test/e2e/claude-launcher.test.ts runs the launcher with the real Claude Code, -p and interactive",
  },
  {
    doc: "*",
    pattern: /^claude mcp add -s user sessiontap -- sessiontap mcp$/,
    why: "adds sessiontap mcp to the user's Claude Code: test/e2e/claude-mcp.test.ts runs the same line with 2.1.328 and 2.1.332 in a scratch HOME",
  },
  {
    doc: "*",
    pattern: /^sessiontap drill\b/,
    why: "runs the user's Claude Code: test/e2e/drill.test.ts runs drill with the real Claude Code, 2.1.328 and 2.1.332",
  },
  {
    doc: "docs/recovery.md",
    pattern: /^systemctl --user (daemon-reload|enable --now sessiontap-drill\.timer|status sessiontap-drill)$/,
    why: "installs a timer for the user's login: the drill it runs is test/e2e/drill.test.ts",
  },
  {
    doc: "*",
    pattern: /^sessiontap --host 0\.0\.0\.0$/,
    why: 'listens beyond loopback: test/security/processes.test.ts "listening beyond loopback" starts it',
  },
  {
    doc: "docs/providers.md",
    pattern:
      /^export (CLAUDE_CODE_USE_(VERTEX|BEDROCK)|CLOUD_ML_REGION|ANTHROPIC_VERTEX_PROJECT_ID|ANTHROPIC_(VERTEX|BEDROCK)_BASE_URL|AWS_REGION|AWS_BEARER_TOKEN_BEDROCK)=/,
    why:
      "shell builtins that set what Claude Code on Vertex AI or Bedrock reads: test/e2e/claude-providers.test.ts hands the real Claude Code the same variables",
  },
  {
    doc: "*",
    pattern: /^export (HTTPS_PROXY|NODE_EXTRA_CA_CERTS)=/,
    why: "proxy mode's two lines, for Claude Code: test/e2e/claude-proxy.test.ts hands the real Claude Code the same variables",
  },
  {
    doc: "docs/settings.md",
    pattern: /^export ANTHROPIC_CUSTOM_HEADERS=/,
    why: "the tap's token on API traffic beyond loopback, for Claude Code: test/security/borrowed-session.test.ts sends the same header",
  },
  {
    doc: "docs/releases.md",
    pattern: /^sha256sum -c|^grep darwin-arm64 SHA256SUMS|^Get-FileHash |^mkdir -p ~\/\.local\/bin|^install -m 0755 sessiontap-<version>/,
    why: "checks and installs a downloaded release file: test/binary/release.test.ts checks SHA256SUMS with sha256sum -c",
  },
  {
    doc: "docs/service.md",
    pattern: /^install -D |^systemctl |^journalctl |^sed "s#__HOME__#|^launchctl |^tail ~\/Library/,
    why: "installs a service for the user's login: test/tooling/service-files.test.ts checks both files (systemd-analyze, a strict plist parse)",
  },
  {
    doc: "docs/commands.md",
    pattern: /^mkdir -p ~\/\.sessiontap-ccusage|^ln -s ~\/\.claude\/session-mirrors |^CLAUDE_CONFIG_DIR=\S+ npx ccusage /,
    why: "ccusage over the mirror: test/e2e/ccusage.test.ts",
  },
  {
    doc: "docs/teams.md",
    pattern: /^createuser |^createdb |^export SESSIONTAP_STORE=|^sessiontap store migrate|^sessiontap serve$|^SESSIONTAP_STORE=/,
    why: "needs a PostgreSQL server: test/store/commands.test.ts and processes.test.ts run these against a throwaway cluster",
  },
];
/** Commands run here by a test of their own below. */
const RUN_BELOW = ["npm start"];
/** Exit statuses other than 0 that a documented command has here, and why. */
const EXPECTED: { pattern: RegExp; code: number; why: string }[] = [
  { pattern: /^sessiontap doctor$/, code: 1, why: "the world's Claude Code transcript of c8f8 is a stub: the example's point" },
];

/** One command a document shows. */
interface Documented {
  doc: string;
  line: number;
  command: string;
}

/** The commands of a document's code blocks. */
function commandsOf(doc: string): Documented[] {
  const lines = readFileSync(`${ROOT}${doc}`, "utf8").split("\n");
  const out: Documented[] = [];
  const take = (block: { text: string; line: number }[]) => {
    const prompted = block.some((b) => b.text.startsWith("$ "));
    for (const { text, line } of block) {
      if (prompted && !text.startsWith("$ ")) continue;
      const command = text.replace(/^\$ /, "").replace(/\s+#\s.*$/, "").trim();
      if (command === "") continue;
      for (const part of command.split(/\s+&&\s+/)) out.push({ doc, line, command: part.trim() });
    }
  };
  for (let i = 0; i < lines.length; i++) {
    const fence = /^(\s*)```(\w*)\s*$/.exec(lines[i]);
    if (fence) {
      const block: { text: string; line: number }[] = [];
      for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]); i++) block.push({ text: lines[i].trim(), line: i + 1 });
      if (["", "sh", "bash", "shell", "console"].includes(fence[2])) take(block);
      continue;
    }
    // An indented block: lines indented 4 or more after a blank line (in a list item, 4 more than its text).
    if (/^ {4,}\S/.test(lines[i]) && (i === 0 || lines[i - 1].trim() === "")) {
      const indent = /^ */.exec(lines[i])![0].length;
      const block: { text: string; line: number }[] = [];
      for (; i < lines.length && (lines[i].trim() === "" || /^ */.exec(lines[i])![0].length >= indent); i++) {
        if (lines[i].trim() !== "") block.push({ text: lines[i].slice(indent), line: i + 1 });
      }
      i--;
      take(block);
    }
  }
  return out;
}

/** Splits a command line into words as a shell would (quotes, `~/` at a word's start), with HOME. */
function words(command: string, home: string): string[] {
  const out: string[] = [];
  for (const m of command.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) out.push(m[1] ?? m[2] ?? m[3].replace(/^~\//, `${home}/`));
  return out;
}

const C8 = "c8f81065-c766-4f38-a6e6-aaa6a516bd7a";
const B5 = "5117aede-da98-4f3c-9e44-de1a88edc45d";

/** The world the documents describe, in `dir`: HOME with a mirror of two sessions (c8f8's transcript a stub, 5117's missing) and a project. */
function makeWorld(dir: string): { home: string; cwd: string } {
  const home = `${dir}/home`;
  const cwd = `${dir}/work`;
  mkdirSync(cwd, { recursive: true });
  const root = `${home}/.claude/session-mirrors`;
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const now = Date.now();
  const at = (minutesAgo: number) => ({ timestamp: new Date(now - minutesAgo * 60_000).toISOString() });
  const shop = { sessionId: C8, cwd: "/home/ann/src/shop" };
  writeMirror(root, C8, [
    rec("user", "c8-u1", null, "fix the failing checkout test", { ...shop, ...at(30) }),
    rec("assistant", "c8-a1", "c8-u1", [{ type: "text", text: "The discount was applied after tax; it is now applied first, and the test passes." }], {
      ...shop,
      ...at(29),
    }),
  ]);
  const blog = { sessionId: B5, cwd: "/home/ann/src/blog" };
  writeMirror(root, B5, [
    rec("user", "b5-u1", null, "hello interactive world", { ...blog, ...at(90) }),
    rec("assistant", "b5-a1", "b5-u1", [{ type: "text", text: "Hello." }], { ...blog, ...at(89) }),
  ]);
  const project = `${home}/.claude/projects/${encodeProjectDir("/home/ann/src/shop")}`;
  mkdirSync(project, { recursive: true });
  writeFileSync(`${project}/${C8}.jsonl`, JSON.stringify({ type: "summary", summary: "stub", leafUuid: "x" }) + "\n");
  writeFileSync(`${home}/.claude/settings.json`, JSON.stringify({ cleanupPeriodDays: 3650 }));
  return { home, cwd };
}

describe("the documented commands", { timeout: 120_000 }, () => {
  let scratch: string;
  let tap: TestTap;
  const all = DOCS.flatMap(commandsOf);
  before(async () => {
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-docs-`);
  });
  withTap((started) => ({ tap } = started));
  after(async () => {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("the README keeps to 200 lines and to the set-up it promises (npm install && npm start, npm test)", () => {
    const readme = readFileSync(`${ROOT}README.md`, "utf8");
    const count = readme.split("\n").length - (readme.endsWith("\n") ? 1 : 0);
    assert.ok(count <= 200, `README.md is ${count} lines; its budget is 200: move the detail to docs/`);
    assert.match(readme, /^ {4}npm install && npm start\b/m);
    assert.match(readme, /^ {4}npm test\b/m);
  });

  it("the README says which Node.js the tests need: package.json's floor, and why the EBADENGINE warnings of newer floors are harmless", () => {
    const readme = readFileSync(`${ROOT}README.md`, "utf8").replace(/\s+/g, " ");
    const floor = /^>=(\d+)$/.exec(JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")).engines.node)![1];
    assert.ok(readme.includes(`a machine with Node.js ${floor} or later and npm needs nothing else`), "the README's Node.js for the tests");
    assert.ok(readme.includes(`The suite runs on Node.js ${floor}`));
    for (const pkg of ["@anthropic-ai/claude-code", "@sparticuz/chromium"]) {
      const declared = JSON.parse(readFileSync(`${ROOT}node_modules/${pkg}/package.json`, "utf8")).engines?.node ?? "";
      const least = Number(/\d+/.exec(declared)?.[0] ?? 0);
      assert.ok(least <= Number(floor) || readme.includes("EBADENGINE"), `${pkg} declares ${declared}: the README must say its warning is harmless`);
    }
  });

  it("the README and --help point at every topic document, and every link to docs/ names a file that exists", () => {
    const readme = readFileSync(`${ROOT}README.md`, "utf8");
    for (const topic of TOPICS) {
      assert.ok(readme.includes(`(docs/${topic}.md)`), `the README does not link docs/${topic}.md`);
      assert.ok(HELP.includes(`docs/${topic}.md`), `sessiontap --help does not name docs/${topic}.md`);
    }
    for (const doc of DOCS) {
      const text = readFileSync(`${ROOT}${doc}`, "utf8");
      for (const m of text.matchAll(/\]\(((?:docs\/)?[\w.-]+\.md)(#[\w-]+)?\)/g)) {
        const path = doc === "README.md" || m[1].startsWith("docs/") ? m[1] : `docs/${m[1]}`;
        assert.ok(DOCS.includes(path), `${doc} links ${m[1]}, which does not exist`);
        if (m[2] !== undefined) {
          const anchors = readFileSync(`${ROOT}${path}`, "utf8").split("\n").filter((l) => /^#+ /.test(l)).map((l) =>
            "#" + l.replace(/^#+ /, "").toLowerCase().replace(/[^\w\s-]/g, "").trim().replace(/\s/g, "-")
          );
          assert.ok(anchors.includes(m[2]), `${doc} links ${m[1]}${m[2]}, which has no such heading (${anchors.join(" ")})`);
        }
      }
    }
  });

  it("finds the commands (a sanity check of the reader)", () => {
    const readme = all.filter((c) => c.doc === "README.md").map((c) => c.command);
    for (const want of ["npx sessiontap", "sessiontap claude", "sessiontap", "sessiontap list", "sessiontap restore c8f8", "unset ANTHROPIC_BASE_URL"]) {
      assert.ok(readme.includes(want), `the README's commands lack ${want}: ${readme.join(" | ")}`);
    }
    assert.ok(!readme.some((c) => c.startsWith("SESSION ") || c.startsWith("Restored ")), "output is not read as a command");
  });

  it("every documented command is run here or listed with the reason it is not", () => {
    const unlisted = all.filter((c) => !c.command.startsWith("sessiontap") && !RUN_BELOW.includes(c.command) && !isListed(c));
    assert.deepEqual(unlisted.map((c) => `${c.doc}:${c.line}: ${c.command}`), [], "documented, but neither run here nor listed in NOT_HERE with a reason");
    for (const entry of NOT_HERE) assert.ok(all.some((c) => matches(entry, c)), `NOT_HERE lists ${entry.pattern}, which no document shows any more`);
  });

  const runHere = all.filter((c) => c.command.startsWith("sessiontap") && !isListed(c));
  it("runs every documented sessiontap command in the world the documents describe; each exits as documented", async () => {
    assert.ok(runHere.length >= 15, `only ${runHere.length} commands to run`);
    const failures: string[] = [];
    let n = 0;
    for (const c of runHere) {
      const dir = `${scratch}/run-${++n}`;
      const world = makeWorld(dir);
      const argv = words(c.command, world.home).slice(1);
      const serves = argv.length === 0 || argv[0].startsWith("--") && !["--version", "--help"].includes(argv[0]) || argv[0] === "serve";
      let stop: (signal: string) => void = () => {};
      const stopSignal = new Promise<string>((resolve) => (stop = resolve));
      let stdout = "";
      const env = { HOME: world.home, ANTHROPIC_BASE_URL: tap.url, SESSIONTAP_PORT: "0", SESSIONTAP_DRAIN_MS: "500", NO_COLOR: "1" };
      const r = await cli(argv, env, {
        home: world.home,
        cwd: world.cwd,
        stopSignal,
        stdout: (t) => {
          stdout += t;
          if (serves && /export ANTHROPIC_BASE_URL=/.test(stdout)) stop("SIGTERM");
        },
      });
      const want = EXPECTED.find((e) => e.pattern.test(c.command))?.code ?? 0;
      if (r.code !== want) failures.push(`${c.doc}:${c.line}: ${c.command} → exit ${r.code} (documented: ${want}): ${r.stderr.trim().slice(0, 400)}`);
      if (/internal error|failed: /.test(r.stderr)) failures.push(`${c.doc}:${c.line}: ${c.command} said ${r.stderr.trim().slice(0, 300)}`);
      if (c.command === "sessiontap doctor") {
        const fails = stdout.split("\n").filter((l) => l.startsWith("FAIL"));
        if (fails.length !== 1 || !fails[0].includes(C8)) failures.push(`doctor's problems were ${JSON.stringify(fails)}, not the one stub`);
      }
    }
    assert.deepEqual(failures, []);
    console.log(`ran ${runHere.length} documented sessiontap commands; ${all.length - runHere.length} others are listed with their reasons`);
  });

  it("npm start (the README's set-up): the tap on its defaults, from source; SIGTERM stops it", async () => {
    const home = `${scratch}/npm-start`;
    mkdirSync(home, { recursive: true });
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^(SESSIONTAP_|npm_)/.test(k)) env[k] = v;
    const child = spawn("npm", ["start"], { cwd: ROOT, env: { ...env, HOME: home, SESSIONTAP_PORT: "0" }, stdio: ["ignore", "pipe", "pipe"], detached: true });
    let out = "";
    child.stdout!.on("data", (c: Buffer) => (out += c.toString("utf8")));
    child.stderr!.on("data", (c: Buffer) => (out += c.toString("utf8")));
    const exited = new Promise<string>((resolve) => child.on("close", (code, signal) => resolve(`${code}/${signal}`)));
    try {
      await pollUntil(() => out, (o) => /export ANTHROPIC_BASE_URL=http:\/\/127\.0\.0\.1:\d+\n/.test(o), 30_000, "npm start's startup block");
      assert.match(out, /upstream {3}https:\/\/api\.anthropic\.com/);
      process.kill(-child.pid!, "SIGTERM"); // the job's process group, as Ctrl-C in its terminal
      await exited;
      assert.match(out, /sessiontap: SIGTERM, stopping/);
    } finally {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // gone
      }
    }
  });
});

/** True when `c` is in NOT_HERE. */
function isListed(c: Documented): boolean {
  return NOT_HERE.some((e) => matches(e, c));
}

/** True when NOT_HERE entry `e` names command `c`. */
function matches(e: (typeof NOT_HERE)[number], c: Documented): boolean {
  return (e.doc === "*" || e.doc === c.doc) && e.pattern.test(c.command);
}
