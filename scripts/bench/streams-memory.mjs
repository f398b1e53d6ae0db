// Peak memory per in-flight stream in about a minute, outside the full bench: N concurrent paced streams (the bench's memory
// scenario: a "single" first-turn body, the 250-event answer at 5 events every 100 ms) through the tap from source in this
// repository, `bun run src/main.ts serve` (RUNTIME=deno: `deno run`; OFF=1: --no-mirror). Prints the peak RSS growth over idle
// (VmHWM, the tap's process, its Worker threads included) ÷ N:
//   node scripts/bench/streams-memory.mjs [N=1000]
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { conversationBody } from "./workload.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const N = Number(process.argv[2] ?? 1000);
const deno = process.env.RUNTIME === "deno";
const scratch = mkdtempSync(`${tmpdir()}/streams-memory-`);
const children = [];
process.on("exit", () => children.forEach((c) => c.kill("SIGKILL")));

function start(command, args, options, ready) {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "inherit"] });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d) => {
      const m = ready.exec(out += d);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.on("exit", (code) => reject(new Error(`${command} exited (${code}) before it was ready`)));
  });
}

const stub = await start("node", [`${root}scripts/bench/stub.mjs`], {}, /listening (\d+)/);
const runtime = deno ? [`${root}node_modules/.bin/deno`, ["run", "--allow-all", "--unstable-no-legacy-abort"]] : [`${root}node_modules/.bin/bun`, ["run"]];
const tap = await start(
  runtime[0],
  [
    ...runtime[1],
    "src/main.ts",
    "serve",
    "--port",
    "0",
    "--upstream",
    `http://127.0.0.1:${stub.port}`,
    ...(process.env.OFF ? ["--no-mirror"] : ["--mirror-dir", `${scratch}/mirror`]),
  ],
  { cwd: root, env: { ...process.env, HOME: scratch, SESSIONTAP_GUARD: "off" } },
  /127\.0\.0\.1:(\d+)/,
);
const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(readFileSync(`/proc/${tap.child.pid}/status`, "utf8"))[1]);
await new Promise((resolve) => setTimeout(resolve, 1500));
const idle = kib("VmRSS");
const agent = new Agent({ keepAlive: true, maxSockets: N + 10 });
let failed = 0;
const started = Date.now();
await Promise.all(Array.from({ length: N }, (_, i) =>
  new Promise((resolve) => {
    const body = Buffer.from(conversationBody(`memory-s${i}`, 0, "Write the long report, part 0"));
    const headers = {
      "content-type": "application/json",
      "content-length": body.length,
      "x-claude-code-session-id": `memory-s${i}`,
      "x-bench-answer": "paced",
      "x-bench-pace": "5,100",
      "user-agent": "sessiontap-bench",
    };
    const req = request({ host: "127.0.0.1", port: tap.port, method: "POST", path: "/v1/messages", agent, headers }, (res) => {
      let bytes = 0;
      res.on("data", (c) => (bytes += c.length));
      res.on("end", () => {
        if (res.statusCode !== 200 || bytes < 20_000) failed++;
        resolve();
      });
    });
    req.on("error", () => (failed++, resolve()));
    req.end(body);
  })));
const peak = kib("VmHWM");
console.log(JSON.stringify({
  runtime: deno ? "deno" : "bun",
  mirror: !process.env.OFF,
  streams: N,
  idleMiB: Math.round(idle / 1024),
  peakMiB: Math.round(peak / 1024),
  perStreamKiB: Math.round((peak - idle) / N),
  failed,
  wallMs: Date.now() - started,
}));
agent.destroy();
tap.child.kill("SIGTERM");
stub.child.kill("SIGTERM");
await new Promise((resolve) => tap.child.on("exit", resolve));
rmSync(scratch, { recursive: true, force: true });
