#!/usr/bin/env node
// A throwaway PostgreSQL cluster for the store tests (issue 7): initdb into a temp directory, pg_ctl start on
// a free loopback port (unix socket in the temp directory, trust auth on loopback), stop and remove. As root
// it runs PostgreSQL as the `postgres` user (initdb refuses root). Used by scripts/test.mjs (one cluster
// for a whole run: SESSIONTAP_TEST_PG_URL) and by the outage test (a cluster of its own to stop and start).
//
//   node scripts/pg-test-cluster.mjs            starts one, prints its URL, stops it on Ctrl-C
import { spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import process from "node:process";

/** The directory holding initdb and pg_ctl: PG_BINDIR, the newest /usr/lib/postgresql/N/bin, or PATH. */
export function pgBinDir() {
  if (process.env.PG_BINDIR) return process.env.PG_BINDIR;
  const base = "/usr/lib/postgresql";
  if (existsSync(base)) {
    const versions = readdirSync(base).filter((v) => existsSync(`${base}/${v}/bin/initdb`)).sort((a, b) => Number(b) - Number(a));
    if (versions.length > 0) return `${base}/${versions[0]}/bin`;
  }
  const which = spawnSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" });
  if (which.status === 0 && which.stdout.trim() !== "") return which.stdout.trim().replace(/\/initdb$/, "");
  throw new Error("PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or on PATH): apt-get install -y postgresql");
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

/** The uid and gid of the postgres user, when running as root (else null: run as ourselves). */
function runAs() {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return null;
  const id = (flag) => Number(spawnSync("id", [flag, "postgres"], { encoding: "utf8" }).stdout.trim());
  const uid = id("-u");
  if (!Number.isInteger(uid) || uid <= 0) throw new Error("running as root but there is no `postgres` user to run PostgreSQL as (initdb refuses root)");
  return { uid, gid: id("-g") };
}

/** Runs a PostgreSQL program (as `postgres` when we are root); throws with its output on failure. */
function pg(bin, program, args) {
  const user = runAs();
  const path = `${bin}/${program}`;
  const run = user === null
    ? spawnSync(path, args, { encoding: "utf8" })
    : existsSync("/usr/sbin/runuser") || existsSync("/sbin/runuser")
      ? spawnSync("runuser", ["-u", "postgres", "--", path, ...args], { encoding: "utf8" })
      : spawnSync("su", ["postgres", "-s", "/bin/sh", "-c", [path, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(" ")], { encoding: "utf8" });
  if (run.status !== 0) throw new Error(`${program} ${args.join(" ")} failed (${run.status}): ${run.stderr || run.stdout || run.error}`);
  return run.stdout;
}

/**
 * Starts a cluster; resolves with its URL and controls. `stop()` stops it and removes everything;
 * `pause()`/`resume()` stop and start the server on the same port (an outage).
 */
export async function startCluster() {
  const bin = pgBinDir();
  const dir = mkdtempSync(`${tmpdir()}/sessiontap-pg-`);
  const user = runAs();
  if (user !== null) chownSync(dir, user.uid, user.gid);
  const data = `${dir}/data`;
  const port = await freePort();
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200`;
  const start = () => pg(bin, "pg_ctl", ["-D", data, "-l", `${dir}/server.log`, "-o", options, "-w", "-t", "30", "start"]);
  const halt = (mode) => pg(bin, "pg_ctl", ["-D", data, "-m", mode, "-w", "-t", "30", "stop"]);
  try {
    pg(bin, "initdb", ["-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C", "-N"]);
    start();
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  let stopped = false;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    /** Stops the server (fast shutdown: sessions are terminated), keeping the data: an outage. */
    pause: () => void halt("fast"),
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
