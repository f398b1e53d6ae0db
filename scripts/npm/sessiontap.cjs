#!/usr/bin/env node
// The `sessiontap` command of the npm package (`npx sessiontap`, `npm i -g sessiontap`): it starts the
// self-contained binary that npm installed for this machine from one of the package's optional
// dependencies (@sessiontap/linux-x64, …: each declares its os and cpu, so npm installs only the one that
// fits), with the same arguments and terminal, passes on the signals sent to it alone, and exits with the
// binary's status. Copied by scripts/npm-packages.mjs into the package; CommonJS, for any Node.js npm runs.
"use strict";
const { spawn } = require("node:child_process");
const { constants } = require("node:os");
const { isatty } = require("node:tty");
const path = require("node:path");

/** The platforms a binary is published for: npm's platform-arch, and the binary's file name. */
const PLATFORMS = {
  "linux-x64": "sessiontap",
  "linux-arm64": "sessiontap",
  "darwin-x64": "sessiontap",
  "darwin-arm64": "sessiontap",
  "win32-x64": "sessiontap.exe",
};

/** The release name of a platform (sessiontap-<version>-<name>, as the release page and SHA256SUMS name it). */
function releaseTarget(key) {
  return key.replace(/^win32-/, "windows-");
}

/**
 * Where this platform's binary comes from: the package that holds it and the path inside, or, for a
 * platform no binary is published for, the one line that says what to do instead.
 */
function resolvePlatform(platform, arch, version, home) {
  const key = `${platform}-${arch}`;
  const file = PLATFORMS[key];
  if (file === undefined) {
    const known = Object.keys(PLATFORMS).map(releaseTarget).join(", ");
    return {
      error: `sessiontap: no sessiontap binary is published for ${key} (there are binaries for ${known}); ` +
        `download the one for your machine (sessiontap-${version}-<platform>) from ${
          home ?? "the release page"
        }, or build one from source: npm install && npm run build`,
    };
  }
  return { pkg: `@sessiontap/${releaseTarget(key)}`, file: `bin/${file}` };
}

/**
 * The line for an install that lacks this machine's package. npm leaves an optional dependency out without a
 * word when its registry does not have it (sessiontap's own tarball installed alone), as when told to omit them.
 */
function missingPackage(pkg, version, home) {
  const target = pkg.replace("@sessiontap/", "");
  return `sessiontap: the package ${pkg}, which holds the binary for this machine, is not installed (npm leaves it out when the registry ` +
    `it installs from lacks it, as when sessiontap's tarball is installed alone, or when told to omit optional dependencies): install it ` +
    `beside sessiontap (npm i -g ${pkg}@${version}, or its tarball sessiontap-${target}-${version}.tgz), or download ` +
    `sessiontap-${version}-${target} from ${home ?? "the release page"}`;
}

/** Runs the binary with this process's arguments and terminal; exits as it exits. */
function main() {
  const { version, homepage } = require("../package.json");
  const where = resolvePlatform(process.platform, process.arch, version, homepage);
  if (where.error) {
    process.stderr.write(`${where.error}\n`);
    process.exit(1);
  }
  let binary;
  try {
    binary = path.join(path.dirname(require.resolve(`${where.pkg}/package.json`)), where.file);
  } catch {
    process.stderr.write(`${missingPackage(where.pkg, version, homepage)}\n`);
    process.exit(1);
  }
  const child = spawn(binary, process.argv.slice(2), { stdio: "inherit" });
  // The terminal sends Ctrl-C to the binary itself; what is sent to this process alone is passed on.
  const passed = process.platform === "win32" ? [] : isatty(0) ? ["SIGTERM", "SIGHUP"] : ["SIGTERM", "SIGHUP", "SIGINT"];
  for (const signal of passed) process.on(signal, () => child.kill(signal));
  if (!passed.includes("SIGINT")) process.on("SIGINT", () => {});
  child.on("error", (error) => {
    process.stderr.write(`sessiontap: ${binary} could not be started (${error.code ?? error.message})\n`);
    process.exit(1);
  });
  child.on("exit", (code, signal) => process.exit(code ?? 128 + (constants.signals[signal] ?? 0)));
}

module.exports = { PLATFORMS, resolvePlatform, missingPackage };
if (require.main === module) main();
