// `npm run release` (scripts/release.mjs) end to end: the five cross-compiled binaries with the names the
// README tells users to download, each really built for its platform (read from its header here, not from
// the script's own check), SHA256SUMS in the format `sha256sum -c` reads and matching the files, the
// binary for this machine smoke-tested and runnable. And its refusals: an unknown target is one line and
// nothing is written, and a stale release in the directory is not left beside the new one.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { ROOT } from "../support/child.ts";

const VERSION: string = JSON.parse(readFileSync(`${ROOT}package.json`, "utf8")).version;
const NAMES = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64", "windows-x64.exe"].map((t) => `sessiontap-${VERSION}-${t}`);
const HOST = `sessiontap-${VERSION}-${process.platform === "win32" ? "windows" : process.platform}-${process.arch}${
  process.platform === "win32" ? ".exe" : ""
}`;

/** Runs the release script (with the Node running the suite's scripts) to completion. */
function release(args: string[]) {
  const r = spawnSync(process.env.SESSIONTAP_TEST_NODE || "node", ["scripts/release.mjs", ...args], { cwd: ROOT, encoding: "utf8", timeout: 600_000 });
  return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

/** Format and CPU from an executable's first bytes, independently of the script. */
function header(path: string): string {
  const b = readFileSync(path).subarray(0, 4096);
  if (b.readUInt32BE(0) === 0x7f454c46) return `ELF ${({ 0x3e: "x86-64", 0xb7: "arm64" } as Record<number, string>)[b.readUInt16LE(18)]}`;
  if (b.readUInt32LE(0) === 0xfeedfacf) return `Mach-O ${({ 0x01000007: "x86-64", 0x0100000c: "arm64" } as Record<number, string>)[b.readUInt32LE(4)]}`;
  if (b.toString("latin1", 0, 2) === "MZ") return `PE ${b.readUInt16LE(b.readUInt32LE(60) + 4) === 0x8664 ? "x86-64" : "other"}`;
  return "unknown";
}

describe("npm run release", () => {
  let out: string;
  let run: ReturnType<typeof release>;
  before(() => {
    out = mkdtempSync(`${tmpdir()}/sessiontap-release-`);
    writeFileSync(`${out}/sessiontap-0.0.1-linux-x64`, "an older release");
    writeFileSync(`${out}/SHA256SUMS`, "0000  sessiontap-0.0.1-linux-x64\n");
    writeFileSync(`${out}/notes.txt`, "not ours");
    run = release(["--out", out, "--npm-out", `${out}-npm`]);
  });
  after(() => {
    if (out) rmSync(out, { recursive: true, force: true });
    if (out) rmSync(`${out}-npm`, { recursive: true, force: true });
  });

  it("builds the five binaries under the names the README gives, and SHA256SUMS; nothing else of ours", () => {
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.deepEqual(readdirSync(out).sort(), [...NAMES, "SHA256SUMS", "notes.txt"].sort(), "the older release is gone, an unrelated file kept");
    assert.match(run.stdout, new RegExp(`release ${VERSION.replace(/\./g, "\\.")}: 5 binaries and SHA256SUMS in .*; \\S+ smoke-tested`));
  });

  it("each binary is an executable for its platform", () => {
    const want = ["ELF x86-64", "ELF arm64", "Mach-O x86-64", "Mach-O arm64", "PE x86-64"];
    assert.deepEqual(NAMES.map((n) => header(`${out}/${n}`)), want);
  });

  it("SHA256SUMS names every binary once with its SHA-256, in sha256sum's format", () => {
    const lines = readFileSync(`${out}/SHA256SUMS`, "utf8").split("\n");
    assert.equal(lines.pop(), "", "ends with a newline");
    assert.deepEqual(lines.map((l) => l.slice(66)).sort(), [...NAMES].sort());
    for (const line of lines) {
      const m = /^([0-9a-f]{64}) {2}(\S+)$/.exec(line);
      assert.ok(m, `not a sha256sum line: ${line}`);
      assert.equal(createHash("sha256").update(readFileSync(`${out}/${m[2]}`)).digest("hex"), m[1], m[2]);
    }
    const check = spawnSync("sha256sum", ["-c", "SHA256SUMS"], { cwd: out, encoding: "utf8" });
    if (check.error === undefined) assert.equal(check.status, 0, check.stdout + check.stderr);
    else {
      const shasum = spawnSync("shasum", ["-a", "256", "-c", "SHA256SUMS"], { cwd: out, encoding: "utf8" });
      if (shasum.error === undefined) assert.equal(shasum.status, 0, shasum.stdout + shasum.stderr);
      else console.log("SHA256SUMS checked by hash above only: neither sha256sum nor shasum is on this machine");
    }
  });

  it("smoke-tested this machine's binary, which runs", () => {
    assert.match(run.stdout, new RegExp(`smoke test of ${HOST}`));
    assert.match(run.stdout, /compiled binary > serves: health ok on bun, one stream byte-identical and mirrored, SIGTERM exits 0/);
    const version = spawnSync(`${out}/${HOST}`, ["--version"], { encoding: "utf8" });
    assert.equal(version.stdout.trim(), `sessiontap ${VERSION}`);
  });

  it("an unknown target is one line naming the targets, and writes nothing", () => {
    const dir = mkdtempSync(`${tmpdir()}/sessiontap-release-bad-`);
    try {
      const r = release(["--out", dir, "--targets", "linux-x64,solaris-sparc"]);
      assert.equal(r.code, 1);
      assert.equal(
        r.stderr.trim(),
        "sessiontap release: unknown target solaris-sparc: the targets are linux-x64, linux-arm64, darwin-x64, darwin-arm64, windows-x64",
      );
      assert.deepEqual(readdirSync(dir), []);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a target list without this machine's cannot be smoke-tested: refused unless --no-smoke", () => {
    const dir = mkdtempSync(`${tmpdir()}/sessiontap-release-other-`);
    try {
      const other = process.arch === "arm64" ? "windows-x64" : "linux-arm64";
      const refused = release(["--out", dir, "--targets", other]);
      assert.equal(refused.code, 1);
      assert.match(refused.stderr, /runs none of the targets built, so nothing can be smoke-tested/);
      assert.equal(existsSync(`${dir}/SHA256SUMS`), false);
      const built = release(["--out", dir, "--targets", other, "--no-smoke"]);
      assert.equal(built.code, 0, built.stderr);
      assert.match(built.stdout, /not smoke-tested \(--no-smoke\)/);
      assert.equal(readFileSync(`${dir}/SHA256SUMS`, "utf8").split("\n").filter(Boolean).length, 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
