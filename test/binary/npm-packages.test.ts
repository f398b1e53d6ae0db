// `npx sessiontap` and `npm i -g sessiontap`, the whole path, offline: `npm run release` writes the npm
// packages (sessiontap, whose bin starts the binary for the machine, and @sessiontap/<target> per
// platform); they are packed with `npm pack` and published to a real registry on loopback (verdaccio,
// a pinned dev dependency: storage in a scratch directory, no uplinks), and npx and npm install them from
// there into scratch caches and prefixes. Packing and publishing a ~100 MB binary costs seconds, so only
// this machine's platform package goes through the registry; the other four are checked as written. npm
// skips an optional dependency the registry lacks, as it skips one whose os or cpu does not fit.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import process from "node:process";
import { ROOT } from "../support/child.ts";
import { pollAsync, pollUntil } from "../support/poll.ts";
import { loadFixture, startStub, type StubUpstream } from "../support/stub-upstream.ts";

const VERSION: string = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")).version;
const NODE = process.env.SESSIONTAP_TEST_NODE || "node";
const TARGETS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "windows-x64"];
const HOST = `${process.platform === "win32" ? "windows" : process.platform}-${process.arch}`;
/** The bin of the `sessiontap` package, required as a module for its platform resolution. */
const wrapper = createRequire(import.meta.url)(`${ROOT}scripts/npm/sessiontap.cjs`) as {
  resolvePlatform(platform: string, arch: string, version: string, home?: string): { pkg?: string; file?: string; error?: string };
  missingPackage(pkg: string, version: string, home?: string): string;
};

/**
 * The environment of an npm or npx command: no npm_* of an outer npm, HOME in the scratch dir, and the
 * registry on loopback with its token (as environment, which npx takes wherever its arguments put flags).
 */
function npmEnv(home: string, registry: string, userconfig: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !/^npm_/i.test(k)) env[k] = v;
  return {
    ...env,
    HOME: home,
    npm_config_registry: registry,
    npm_config_userconfig: userconfig,
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
  };
}

/** A loopback port free a moment ago. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

describe("npx sessiontap and npm i -g sessiontap, through a registry on loopback", { timeout: 300_000 }, () => {
  let scratch: string;
  let registry: ChildProcess;
  let url: string;
  let npmrc: string;
  const times: Record<string, number> = {};
  /** Runs npm (or npx) to completion with the registry's config; times it under `label`. */
  const npm = (label: string, bin: "npm" | "npx", args: string[], extra: Record<string, string> = {}) => {
    const started = Date.now();
    const r = spawnSync(bin, args, { cwd: scratch, encoding: "utf8", timeout: 120_000, env: { ...npmEnv(`${scratch}/home`, url, npmrc), ...extra } });
    times[label] = Date.now() - started;
    return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "", all: `${r.stdout}\n${r.stderr}` };
  };

  before(async () => {
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-npm-`);
    mkdirSync(`${scratch}/home`);
    mkdirSync(`${scratch}/tarballs`);
    let started = Date.now();
    const release = spawnSync(NODE, ["scripts/release.mjs", "--out", `${scratch}/release`, "--npm-out", `${scratch}/npm`, "--no-smoke"], {
      cwd: ROOT,
      encoding: "utf8",
      timeout: 300_000,
    });
    times.release = Date.now() - started;
    assert.equal(release.status, 0, release.stdout + release.stderr);

    const port = await freePort();
    url = `http://127.0.0.1:${port}/`;
    writeFileSync(
      `${scratch}/verdaccio.yaml`,
      [
        `storage: ${scratch}/storage`,
        `auth:`,
        `  htpasswd:`,
        `    file: ${scratch}/htpasswd`,
        `uplinks: {}`,
        `max_body_size: 300mb`,
        `packages:`,
        `  '**':`,
        `    access: $all`,
        `    publish: $authenticated`,
        `log: { type: stdout, format: pretty, level: warn }`,
        ``,
      ].join("\n"),
    );
    started = Date.now();
    registry = spawn(NODE, [`${ROOT}node_modules/verdaccio/bin/verdaccio`, "--config", `${scratch}/verdaccio.yaml`, "--listen", `127.0.0.1:${port}`], {
      cwd: scratch,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let log = "";
    registry.stdout!.on("data", (c: Buffer) => (log += c.toString("utf8")));
    registry.stderr!.on("data", (c: Buffer) => (log += c.toString("utf8")));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`verdaccio did not start within 30 s: ${log}`)), 30_000);
      const check = () => /http address/.test(log) && (clearTimeout(timer), resolve());
      registry.stdout!.on("data", check);
      registry.once("exit", (code) => (clearTimeout(timer), reject(new Error(`verdaccio exited (${code}): ${log}`))));
    });
    times.registry = Date.now() - started;
    // A user of the registry, as `npm adduser` makes one: its token publishes.
    const user = await fetch(`${url}-/user/org.couchdb.user:tester`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "tester", password: "tester-password-1" }),
    });
    assert.equal(user.status, 201, await user.clone().text());
    const { token } = await user.json();
    npmrc = `${scratch}/npmrc`;
    writeFileSync(npmrc, `//127.0.0.1:${port}/:_authToken=${token}\n`);

    for (const dir of ["sessiontap", `sessiontap-${HOST}`]) {
      const packed = npm(`pack ${dir}`, "npm", ["pack", `${scratch}/npm/${dir}`, "--pack-destination", `${scratch}/tarballs`, "--cache", `${scratch}/cache`]);
      assert.equal(packed.code, 0, packed.all);
      const tarball = `${scratch}/tarballs/${packed.stdout.trim().split("\n").at(-1)}`;
      const published = npm(`publish ${dir}`, "npm", ["publish", tarball, "--cache", `${scratch}/cache`]);
      assert.equal(published.code, 0, published.all);
    }
  });

  after(() => {
    registry?.kill("SIGTERM");
    console.log(`npm packages: ${Object.entries(times).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`).join(", ")}`);
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it("npm run release writes sessiontap, naming the five platform packages, and each platform's package with its binary", () => {
    const main = JSON.parse(readFileSync(`${scratch}/npm/sessiontap/package.json`, "utf8"));
    assert.equal(main.name, "sessiontap");
    assert.equal(main.version, VERSION);
    assert.equal(main.private, undefined, "published, unlike the repository's own package.json");
    assert.deepEqual(main.bin, { sessiontap: "bin/sessiontap.cjs" });
    assert.deepEqual(main.optionalDependencies, Object.fromEntries(TARGETS.map((t) => [`@sessiontap/${t}`, VERSION])));
    assert.equal(readFileSync(`${scratch}/npm/sessiontap/bin/sessiontap.cjs`, "utf8"), readFileSync(`${ROOT}scripts/npm/sessiontap.cjs`, "utf8"));
    for (const target of TARGETS) {
      const dir = `${scratch}/npm/sessiontap-${target}`;
      const pkg = JSON.parse(readFileSync(`${dir}/package.json`, "utf8"));
      const [os, cpu] = target.split("-");
      assert.deepEqual([pkg.name, pkg.version, pkg.os, pkg.cpu], [`@sessiontap/${target}`, VERSION, [os === "windows" ? "win32" : os], [cpu]]);
      const binary = `${dir}/bin/sessiontap${target.startsWith("windows") ? ".exe" : ""}`;
      const released = `${scratch}/release/sessiontap-${VERSION}-${target}${target.startsWith("windows") ? ".exe" : ""}`;
      assert.equal(statSync(binary).size, statSync(released).size, `${target}: the release's binary`);
      assert.ok((statSync(binary).mode & 0o111) !== 0, `${target}: executable`);
      // The wrapper resolves each of them to the same package and file.
      const resolved = wrapper.resolvePlatform(os === "windows" ? "win32" : os, cpu, VERSION);
      assert.deepEqual(resolved, { pkg: `@sessiontap/${target}`, file: binary.slice(dir.length + 1) });
    }
  });

  it("npx sessiontap --version runs the binary npm installed for this machine", () => {
    const r = npm("npx --version", "npx", ["--yes", "--cache", `${scratch}/npx-cache`, `sessiontap@${VERSION}`, "--version"]);
    assert.equal(r.code, 0, r.all);
    assert.equal(r.stdout, `sessiontap ${VERSION}\n`);
  });

  it("npx sessiontap starts the tap: one stream through it, mirrored; SIGTERM to the job stops it gracefully, once", async () => {
    const stub: StubUpstream = await startStub();
    const root = `${scratch}/npx-mirror`;
    // Its output goes to a file: what the tap (npx's grandchild) writes reached a pipe of Bun's child_process only at exit.
    const log = `${scratch}/npx-tap.log`;
    const fd = openSync(log, "w");
    const child = spawn("npx", [
      "--yes",
      "--cache",
      `${scratch}/npx-cache`,
      `sessiontap@${VERSION}`,
      "--port",
      "0",
      "--upstream",
      stub.url,
      "--mirror-dir",
      root,
    ], {
      cwd: scratch,
      env: npmEnv(`${scratch}/home`, url, npmrc),
      stdio: ["ignore", fd, fd],
      detached: true, // its own process group, as a terminal's job is
    });
    closeSync(fd);
    const exited = new Promise<string>((resolve) => child.on("close", (code, signal) => resolve(`${code}/${signal}`)));
    try {
      const text = await pollUntil(
        () => readFileSync(log, "utf8"),
        (t) => /export ANTHROPIC_BASE_URL=http:\/\/127\.0\.0\.1:\d+\n/.test(t),
        60_000,
        "the startup block",
      );
      const tapUrl = /export ANTHROPIC_BASE_URL=(http:\/\/127\.0\.0\.1:\d+)\n/.exec(text)![1];
      assert.equal((await (await fetch(`${tapUrl}/_tap/health`)).json()).status, "ok");
      const sse = loadFixture("ts_basic_response");
      stub.enqueue({ kind: "sse", chunks: [sse] });
      const res = await fetch(`${tapUrl}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-claude-code-session-id": "npx-session" },
        body: JSON.stringify({ model: "claude-sonnet-4-5", stream: true, max_tokens: 10, messages: [{ role: "user", content: "hello from npx" }] }),
      });
      assert.equal(await res.text(), sse);
      // SIGTERM to the job's process group, as a terminal's Ctrl-C or `timeout` sends it (npx itself passes nothing
      // on): npx, npm's shell, the package's bin and the binary all get it, the bin passes it on once more, and the
      // binary stops gracefully once.
      process.kill(-child.pid!, "SIGTERM");
      // npx itself dies of the signal (npm's own handling); the tap below it stops gracefully, once, and is gone.
      assert.match(await exited, /^(0\/null|null\/SIGTERM)$/);
      const said = await pollUntil(() => readFileSync(log, "utf8"), (t) => /sessiontap: SIGTERM, stopping\n/.test(t), 20_000, "the tap's stop");
      assert.equal(said.match(/stopping/g)!.length, 1, said);
      await pollAsync(() => fetch(`${tapUrl}/_tap/health`).then(() => false, () => true), (v) => v, 20_000, "the tap's port closed");
      assert.doesNotMatch(readFileSync(log, "utf8"), /internal error|could not be/);
      assert.ok(existsSync(`${root}/npx-session`), "mirrored");
    } finally {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // the group has exited
      }
      await stub.close();
    }
  });

  it("npm i -g --prefix: a sessiontap command on the prefix's PATH", () => {
    const prefix = `${scratch}/prefix`;
    const r = npm("npm i -g", "npm", ["install", "--global", "--prefix", prefix, "--cache", `${scratch}/cache`, `sessiontap@${VERSION}`]);
    assert.equal(r.code, 0, r.all);
    const modules = `${prefix}/lib/node_modules/sessiontap/node_modules/@sessiontap`;
    assert.ok(existsSync(`${modules}/${HOST}/package.json`), "this machine's binary came with it");
    for (const other of TARGETS.filter((t) => t !== HOST)) assert.equal(existsSync(`${modules}/${other}`), false, other);
    const version = spawnSync(`${prefix}/bin/sessiontap`, ["--version"], { encoding: "utf8" });
    assert.equal(version.stdout, `sessiontap ${VERSION}\n`, version.stderr);
  });

  it("an install that lacks this machine's platform package: one line saying which package is missing and how to get it, exit 1; doing that works", () => {
    const prefix = `${scratch}/prefix-broken`;
    const r = npm("npm i -g (2)", "npm", ["install", "--global", "--prefix", prefix, "--cache", `${scratch}/cache`, `sessiontap@${VERSION}`]);
    assert.equal(r.code, 0, r.all);
    rmSync(`${prefix}/lib/node_modules/sessiontap/node_modules/@sessiontap/${HOST}`, { recursive: true });
    const run = spawnSync(`${prefix}/bin/sessiontap`, ["--version"], { encoding: "utf8" });
    assert.equal(run.status, 1);
    assert.equal(run.stdout, "");
    assert.equal(run.stderr, `${wrapper.missingPackage(`@sessiontap/${HOST}`, VERSION)}\n`);
    assert.match(run.stderr, new RegExp(`install it beside sessiontap \\(npm i -g @sessiontap/${HOST}@${VERSION.replace(/\./g, "\\.")}, or its tarball`));
    const fix = npm("npm i -g (3)", "npm", ["install", "--global", "--prefix", prefix, "--cache", `${scratch}/cache`, `@sessiontap/${HOST}@${VERSION}`]);
    assert.equal(fix.code, 0, fix.all);
    assert.equal(spawnSync(`${prefix}/bin/sessiontap`, ["--version"], { encoding: "utf8" }).stdout, `sessiontap ${VERSION}\n`, "the line's advice works");
  });

  it("the missing package's line says why npm left it out and what to install, never that npm was told to", () => {
    const line = wrapper.missingPackage("@sessiontap/linux-x64", "1.2.3", "https://example.invalid/sessiontap");
    assert.equal(
      line,
      "sessiontap: the package @sessiontap/linux-x64, which holds the binary for this machine, is not installed (npm leaves it out when the registry " +
        "it installs from lacks it, as when sessiontap's tarball is installed alone, or when told to omit optional dependencies): install it " +
        "beside sessiontap (npm i -g @sessiontap/linux-x64@1.2.3, or its tarball sessiontap-linux-x64-1.2.3.tgz), or download " +
        "sessiontap-1.2.3-linux-x64 from https://example.invalid/sessiontap",
    );
  });

  it("a platform with no binary: one line naming the download and the build from source", () => {
    const r = wrapper.resolvePlatform("freebsd", "x64", VERSION);
    assert.equal(
      r.error,
      `sessiontap: no sessiontap binary is published for freebsd-x64 (there are binaries for linux-x64, linux-arm64, darwin-x64, darwin-arm64, windows-x64); ` +
        `download the one for your machine (sessiontap-${VERSION}-<platform>) from the release page, or build one from source: npm install && npm run build`,
    );
    assert.match(
      wrapper.resolvePlatform("linux", "ia32", VERSION, "https://example.invalid/sessiontap").error!,
      /from https:\/\/example\.invalid\/sessiontap,/,
    );
  });
});
