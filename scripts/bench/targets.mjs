// What the bench sends its load through: nothing (direct to the stub), the compiled tap (Bun) with the
// mirror off or on, the tap from source under Deno with the mirror on, nginx as a reference passthrough,
// and each runtime's bare floor for a relay with JavaScript per chunk (bare.ts). Each is a child process on
// 127.0.0.1 with its own scratch directory.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import process from "node:process";
import { childrenOf } from "./proc.mjs";

/** Every target the bench knows, in table order. */
export const TARGETS = [
  { name: "direct", label: "direct (client → stub)" },
  { name: "bun-off", label: "tap, compiled (Bun), mirror off" },
  { name: "bun-on", label: "tap, compiled (Bun), mirror on" },
  { name: "deno-on", label: "tap, Deno, mirror on" },
  { name: "deno-off", label: "tap, Deno, mirror off" },
  { name: "nginx", label: "nginx (proxy_buffering off)" },
  { name: "bare-bun", label: "bare Bun relay, a JS copy per chunk (bare.ts)" },
  { name: "bare-deno", label: "bare Deno relay, a JS copy per chunk (bare.ts)" },
  { name: "bare-deno-native", label: "bare Deno relay, no JS per chunk (bare.ts)" },
];

/** Bun's fetch keeps at most 256 requests in flight unless this is raised (docs/RUNTIMES.md "Serving"). */
const BUN_IN_FLIGHT = { BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" };

/** The environment for a tap child: the parent's, less every SESSIONTAP_* setting, HOME in the scratch dir. */
function tapEnv(home, extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("SESSIONTAP_") && k !== "CLAUDE_CONFIG_DIR") env[k] = v;
  return { ...env, HOME: home, NO_COLOR: "1", ...extra };
}

/** Resolves when `child` printed a line matching `pattern` on stdout; rejects on exit or after `ms`. */
function waitForLine(child, pattern, ms) {
  return new Promise((resolve, reject) => {
    let out = "";
    let err = "";
    const timer = setTimeout(() => finish(new Error(`no ${pattern} within ${ms} ms; stderr: ${err.slice(-500)}`)), ms);
    const onOut = (b) => {
      out += b;
      const m = pattern.exec(out);
      if (m) finish(null, m);
    };
    const onErr = (b) => (err += b);
    const onExit = (code) => finish(new Error(`exited with ${code} before it was ready; stderr: ${err.slice(-500)}`));
    function finish(error, match) {
      clearTimeout(timer);
      child.stdout.off("data", onOut);
      child.stderr.off("data", onErr);
      child.off("exit", onExit);
      if (error) reject(error);
      else resolve(match);
    }
    child.stdout.on("data", onOut);
    child.stderr.on("data", onErr);
    child.once("exit", onExit);
  });
}

/** A free loopback port (bound, then released). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** GET `url` over loopback; resolves with the status (rejects when it cannot connect). */
async function get(url, ms = 2000) {
  const res = await fetch(url, { signal: AbortSignal.timeout(ms) });
  await res.arrayBuffer();
  return res.status;
}

/** Polls `url` until it answers `status`, at most `ms`. */
async function waitHttp(url, status, ms) {
  const end = Date.now() + ms;
  let last = null;
  while (Date.now() < end) {
    try {
      if ((await get(url)) === status) return;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} did not answer ${status} within ${ms} ms (${last?.message ?? "wrong status"})`);
}

/** Stops a child: `signal`, then SIGKILL after `ms`; resolves when it exited. */
export function stopChild(child, signal = "SIGTERM", ms = 5000) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), ms);
    child.once("exit", () => (clearTimeout(timer), resolve()));
    child.kill(signal);
  });
}

/** The nginx binary, or null when it is not installed. */
export function nginxBinary() {
  for (const p of ["/usr/sbin/nginx", "/usr/bin/nginx"]) if (existsSync(p)) return p;
  return null;
}

/** Installs Debian's nginx with apt-get (the bench only does this when asked with --with-nginx). */
export function installNginx(log) {
  if (nginxBinary() !== null) return true;
  log("installing nginx: apt-get update && apt-get install -y --no-install-recommends nginx");
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const update = spawnSync("apt-get", ["update"], { stdio: "ignore", env, timeout: 300_000 });
  if (update.status !== 0) return false;
  // Debian's package starts its own service on port 80 after install; a policy-rc.d that answers 101
  // ("action forbidden") for the length of the install keeps it from doing so. The bench only ever runs
  // its own nginx, with its own config, on loopback.
  const policy = "/usr/sbin/policy-rc.d";
  const ownPolicy = !existsSync(policy);
  if (ownPolicy) writeFileSync(policy, "#!/bin/sh\n# written by sessiontap's bench for one apt-get install\nexit 101\n", { mode: 0o755 });
  try {
    const install = spawnSync("apt-get", ["install", "-y", "--no-install-recommends", "nginx"], { stdio: "ignore", env, timeout: 600_000 });
    return install.status === 0 && nginxBinary() !== null;
  } finally {
    if (ownPolicy) rmSync(policy, { force: true });
  }
}

/** The nginx configuration: one worker (like the tap's one event loop), loopback only, SSE passthrough. */
function nginxConfig(dir, port, upstreamPort) {
  return `# Written by scripts/bench: a reference passthrough for the Messages API, loopback only.
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 16384;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 8192; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
  client_max_body_size 64m;
  client_body_buffer_size 8m;
  keepalive_timeout 120s;
  keepalive_requests 100000;
  upstream stub { server 127.0.0.1:${upstreamPort}; keepalive 1024; keepalive_requests 100000; }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://stub;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 600s;
    }
  }
}
`;
}

/**
 * Starts `name` in front of the stub on `upstreamPort`; resolves with `{ port, pids(), stop() }`.
 * `pids()` lists the processes whose CPU and memory count as the target's (none for direct).
 */
export async function startTarget(name, { root, scratch, upstreamPort, binary }) {
  const upstream = `http://127.0.0.1:${upstreamPort}`;
  if (name === "direct") return { name, port: upstreamPort, pids: () => [], stop: async () => {} };
  mkdirSync(scratch, { recursive: true });
  if (name === "nginx") {
    const bin = nginxBinary();
    if (bin === null) throw new Error("nginx is not installed (run with --with-nginx)");
    const port = await freePort();
    for (const d of ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]) mkdirSync(join(scratch, d), { recursive: true });
    const conf = join(scratch, "nginx.conf");
    writeFileSync(conf, nginxConfig(scratch, port, upstreamPort));
    const child = spawn(bin, ["-p", scratch, "-c", conf, "-e", join(scratch, "error.log")], { stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.resume();
    let err = "";
    child.stderr.on("data", (b) => (err += b));
    const exited = new Promise((r) => child.once("exit", (c) => r(c)));
    const ready = (async () => {
      const end = Date.now() + 10_000;
      while (Date.now() < end) {
        if (child.exitCode !== null) throw new Error(`nginx exited ${child.exitCode}: ${err.slice(-500)}`);
        if (childrenOf(child.pid).length > 0) {
          try {
            await get(`http://127.0.0.1:${port}/_bench/ready`);
            return;
          } catch {
            // not accepting yet
          }
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error("nginx did not start within 10 s");
    })();
    await Promise.race([ready, exited.then((c) => Promise.reject(new Error(`nginx exited ${c}: ${err.slice(-500)}`)))]);
    return { name, port, pids: () => [child.pid, ...childrenOf(child.pid)], stop: () => stopChild(child, "SIGTERM"), child };
  }
  if (name.startsWith("bare-")) {
    const script = join(root, "scripts/bench/bare.ts");
    const child = name === "bare-bun"
      ? spawn(join(root, "node_modules/.bin/bun"), [script, upstream], { cwd: root, env: tapEnv(scratch, BUN_IN_FLIGHT), stdio: ["ignore", "pipe", "pipe"] })
      : spawn(join(root, "node_modules/.bin/deno"), ["run", "--allow-all", "--unstable-no-legacy-abort", script, upstream], {
        cwd: root,
        env: tapEnv(scratch, name === "bare-deno-native" ? { BARE_MODE: "native" } : {}),
        stdio: ["ignore", "pipe", "pipe"],
      });
    child.stderr.resume();
    const m = await waitForLine(child, /listening\s+http:\/\/127\.0\.0\.1:(\d+)/, 30_000);
    child.stdout.resume();
    return { name, port: Number(m[1]), child, pids: () => [child.pid], stop: () => stopChild(child, "SIGTERM", 5000) };
  }
  const mirror = name.endsWith("-on");
  const args = ["serve", "--port", "0", "--host", "127.0.0.1", "--upstream", upstream];
  if (mirror) args.push("--mirror-dir", join(scratch, "mirror"));
  else args.push("--no-mirror");
  const env = tapEnv(scratch, { ...(mirror ? {} : { SESSIONTAP_MIRROR: "off" }), ...(name.startsWith("bun") ? BUN_IN_FLIGHT : {}) });
  let child;
  if (name.startsWith("bun")) child = spawn(binary, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  else if (name.startsWith("deno")) {
    const deno = join(root, "node_modules/.bin/deno");
    child = spawn(deno, ["run", "--allow-all", "--unstable-no-legacy-abort", "src/main.ts", ...args], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  } else throw new Error(`unknown target ${name}`);
  const stderr = [];
  child.stderr.on("data", (b) => {
    stderr.push(String(b));
    if (stderr.length > 50) stderr.shift();
  });
  const m = await waitForLine(child, /listening\s+http:\/\/127\.0\.0\.1:(\d+)/, 30_000);
  child.stdout.resume();
  const port = Number(m[1]);
  await waitHttp(`http://127.0.0.1:${port}/_tap/health`, 200, 10_000);
  return {
    name,
    port,
    child,
    pids: () => [child.pid],
    stderr: () => stderr.join(""),
    stop: () => stopChild(child, "SIGTERM", 5000),
  };
}

/** A progress logger: one `[bench]` line on stderr per call, unless quiet. */
export function logger(quiet) {
  return (line) => {
    if (!quiet) process.stderr.write(`[bench] ${line}\n`);
  };
}
