#!/usr/bin/env node
// `npm run release`: one self-contained executable per platform, cross-compiled by `bun build --compile`
// (Bun fetches each target's base binary through the npm registry), into dist/release/ as
// sessiontap-<version>-<target>[.exe], plus SHA256SUMS in `sha256sum -c` format. Each binary's header is
// checked against its target (format, CPU, and a code signature on macOS, where arm64 runs nothing
// unsigned); the one for this machine is smoke-tested with test/binary/smoke.test.ts (--version, health,
// one stream, SIGTERM → 0). SHA256SUMS is written last, only when all of that passed, so its presence means
// a whole release. Then the npm packages (scripts/npm-packages.mjs): `sessiontap`, whose bin starts the
// binary for the machine, and @sessiontap/<target> with each binary, into dist/npm/ (--npm-out).
//
//   node scripts/release.mjs [--out DIR] [--npm-out DIR] [--targets linux-x64,windows-x64,…] [--no-smoke]
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { compileArgs } from "./compile-args.mjs";
import { writeNpmPackages } from "./npm-packages.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The release targets: our name, Bun's target, and what the executable's header must say. */
export const TARGETS = [
  { name: "linux-x64", bun: "bun-linux-x64", format: "ELF", cpu: "x86-64" },
  { name: "linux-arm64", bun: "bun-linux-arm64", format: "ELF", cpu: "arm64" },
  { name: "darwin-x64", bun: "bun-darwin-x64", format: "Mach-O", cpu: "x86-64" },
  { name: "darwin-arm64", bun: "bun-darwin-arm64", format: "Mach-O", cpu: "arm64" },
  { name: "windows-x64", bun: "bun-windows-x64", format: "PE", cpu: "x86-64", ext: ".exe" },
];

/** The file name of one target's binary. */
export function releaseName(version, target) {
  return `sessiontap-${version}-${target.name}${target.ext ?? ""}`;
}

/** The target this machine runs, or undefined. */
export function hostTarget(platform = process.platform, arch = process.arch) {
  const os = platform === "win32" ? "windows" : platform;
  return TARGETS.find((t) => t.name === `${os}-${arch}`);
}

/**
 * What an executable's header says: its format (ELF, Mach-O, PE), CPU (x86-64, arm64) and, for Mach-O,
 * whether it carries a code signature. Reads the first 64 KiB only.
 */
export function describeExecutable(path) {
  const head = Buffer.alloc(65536);
  const fd = openSync(path, "r");
  const size = readSync(fd, head, 0, head.length, 0);
  closeSync(fd);
  const b = head.subarray(0, size);
  const cpus = { 0x3e: "x86-64", 0xb7: "arm64", 0x8664: "x86-64", 0xaa64: "arm64", 0x01000007: "x86-64", 0x0100000c: "arm64" };
  if (b.length >= 20 && b.readUInt32BE(0) === 0x7f454c46) return { format: "ELF", cpu: cpus[b.readUInt16LE(18)] ?? "unknown" };
  if (b.length >= 32 && b.readUInt32LE(0) === 0xfeedfacf) {
    // Load commands follow the 32-byte header; LC_CODE_SIGNATURE is 0x1d.
    let signed = false;
    for (let i = 0, off = 32; i < b.readUInt32LE(16) && off + 8 <= b.length; i++, off += b.readUInt32LE(off + 4)) {
      if (b.readUInt32LE(off) === 0x1d) signed = true;
      if (b.readUInt32LE(off + 4) === 0) break;
    }
    return { format: "Mach-O", cpu: cpus[b.readUInt32LE(4)] ?? "unknown", signed };
  }
  if (b.length >= 64 && b.toString("latin1", 0, 2) === "MZ") {
    const pe = b.readUInt32LE(60);
    if (pe + 6 <= b.length && b.toString("latin1", pe, pe + 4) === "PE\0\0") return { format: "PE", cpu: cpus[b.readUInt16LE(pe + 4)] ?? "unknown" };
  }
  return { format: "unknown", cpu: "unknown" };
}

/** The SHA-256 of a file, hex. */
export function sha256(path) {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

/** Says why, once, and exits non-zero. */
function fail(message) {
  console.error(`sessiontap release: ${message}`);
  process.exit(1);
}

/** Parses the command line. */
function options(argv) {
  const opts = { out: join(ROOT, "dist", "release"), npmOut: join(ROOT, "dist", "npm"), targets: TARGETS, smoke: true };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--no-smoke") opts.smoke = false;
    else if (arg === "--out" && argv[i + 1]) opts.out = resolve(argv[++i]);
    else if (arg === "--npm-out" && argv[i + 1]) opts.npmOut = resolve(argv[++i]);
    else if (arg === "--targets" && argv[i + 1]) {
      const names = argv[++i].split(",");
      const unknown = names.filter((n) => !TARGETS.some((t) => t.name === n));
      if (unknown.length > 0) fail(`unknown target ${unknown.join(", ")}: the targets are ${TARGETS.map((t) => t.name).join(", ")}`);
      opts.targets = TARGETS.filter((t) => names.includes(t.name));
    } else fail(`unknown argument ${arg}: usage: node scripts/release.mjs [--out DIR] [--npm-out DIR] [--targets a,b] [--no-smoke]`);
  }
  return opts;
}

function main() {
  const opts = options(process.argv.slice(2));
  const version = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).version;
  const host = hostTarget();
  if (opts.smoke && !opts.targets.includes(host)) {
    fail(
      `this machine (${process.platform}-${process.arch}) runs none of the targets built, so nothing can be smoke-tested: include ${
        host?.name ?? "its target"
      } or pass --no-smoke`,
    );
  }
  mkdirSync(opts.out, { recursive: true });
  // A release directory holds one release: binaries of an earlier version or target list would otherwise
  // sit beside a SHA256SUMS that does not name them.
  for (const name of readdirSync(opts.out)) if (name === "SHA256SUMS" || name.startsWith("sessiontap-")) rmSync(join(opts.out, name), { force: true });

  const bun = join(ROOT, "node_modules", ".bin", "bun");
  const built = [];
  for (const target of opts.targets) {
    const file = join(opts.out, releaseName(version, target));
    const started = Date.now();
    const run = spawnSync(bun, compileArgs(file, target.bun), { cwd: ROOT, encoding: "utf8" });
    if (run.status !== 0) {
      fail(`bun build --target=${target.bun} failed (${run.status ?? run.signal}): ${(run.stderr || run.stdout || String(run.error)).trim()}`);
    }
    const seen = describeExecutable(file);
    if (seen.format !== target.format || seen.cpu !== target.cpu) {
      fail(`${releaseName(version, target)} is ${seen.format} ${seen.cpu}, not ${target.format} ${target.cpu}`);
    }
    if (target.format === "Mach-O" && !seen.signed) fail(`${releaseName(version, target)} carries no code signature: macOS would refuse to run it`);
    console.log(
      `built ${releaseName(version, target)}: ${seen.format} ${seen.cpu}, ${(statSync(file).size / 1048576).toFixed(1)} MB, ${
        ((Date.now() - started) / 1000).toFixed(1)
      } s`,
    );
    built.push({ target, file });
  }

  if (opts.smoke) {
    const binary = built.find((b) => b.target === host).file;
    console.log(`smoke test of ${releaseName(version, host)}: bun test test/binary/smoke.test.ts`);
    const smoke = spawnSync(bun, ["test", "--timeout", "60000", "./test/binary/smoke.test.ts"], {
      cwd: ROOT,
      encoding: "utf8",
      env: { ...process.env, SESSIONTAP_BINARY: binary, NO_COLOR: "1" },
    });
    // Bun's test runner reports on stderr; the release log keeps it with the rest, on stdout.
    process.stdout.write(smoke.stdout + smoke.stderr);
    if (smoke.status !== 0) fail(`the smoke test of ${releaseName(version, host)} failed (${smoke.status ?? smoke.signal}); no SHA256SUMS written`);
  }

  const sums = built.map(({ file, target }) => `${sha256(file)}  ${releaseName(version, target)}\n`).join("");
  writeFileSync(join(opts.out, "SHA256SUMS"), sums);
  const where = opts.out.startsWith(ROOT) ? opts.out.slice(ROOT.length) : opts.out;
  const packages = writeNpmPackages(opts.npmOut, version, built);
  const npmWhere = opts.npmOut.startsWith(ROOT) ? opts.npmOut.slice(ROOT.length) : opts.npmOut;
  console.log(
    `npm packages: ${packages.length} in ${npmWhere} (sessiontap and ${
      built.map((b) => `@sessiontap/${b.target.name}`).join(", ")
    }); publish each with npm publish DIR`,
  );
  console.log(
    `release ${version}: ${built.length} binaries and SHA256SUMS in ${where}${opts.smoke ? `; ${host.name} smoke-tested` : "; not smoke-tested (--no-smoke)"}`,
  );
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) main();
