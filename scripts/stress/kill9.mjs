#!/usr/bin/env node
// kill -9 under load: several sessions stream turns through the compiled tap while it is killed (SIGKILL)
// at random moments and restarted on the same port. Afterwards every answer a client received whole
// (message_stop arrived) is looked up in the mirror: on disk as the tap saw it (its request-id), only as a
// `reconstructed` record rebuilt from a later request's history (the kill landed between the client's last
// byte and the write's fsync), or missing. Results go to docs/RELIABILITY.md "The crash window" by hand.
//
//   node scripts/stress/kill9.mjs [--sessions 4] [--turns 400] [--kill-min 200] [--kill-max 1200] [--binary dist/sessiontap]
//
// Loopback only; bounded: each session stops after --turns turns and the whole run after --max-minutes.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import process from "node:process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
const opt = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
};
const SESSIONS = Number(opt("sessions", 4));
const TURNS = Number(opt("turns", 400));
const KILL_MIN = Number(opt("kill-min", 200));
const KILL_MAX = Number(opt("kill-max", 1200));
const BINARY = opt("binary", `${root}dist/sessiontap`);
const MAX_MS = Number(opt("max-minutes", 15)) * 60_000;

let seed = 20261201;
const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A free loopback port. */
function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Starts a child and resolves with the first match of `pattern` on its stdout. */
function startChild(command, args, env, pattern) {
  const child = spawn(command, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  child.stderr.on("data", (c) => (err += c));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} did not start: ${out} ${err}`)), 20_000);
    child.stdout.on("data", (c) => {
      out += c;
      const m = pattern.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ child, match: m, stderr: () => err });
      }
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`${command} exited ${code}: ${err}`));
    });
  });
}

/**
 * The upstream: every answer is different ("answer <n> …"), as a model's retry would be, so an answer
 * that reached the disk but not the client is not mistaken for its retry's.
 */
let served = 0;
const sse = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const stubServer = createHttpServer((req, res) => {
  req.resume();
  req.on("end", () => {
    const n = ++served;
    res.writeHead(200, { "content-type": "text/event-stream", "request-id": `req_kill9_${n}` });
    const text = `answer ${n}: ${"words ".repeat(20)}`;
    const parts = [text.slice(0, 40), text.slice(40, 80), text.slice(80)];
    res.write(
      sse("message_start", {
        message: {
          id: `msg_kill9_${n}`,
          type: "message",
          role: "assistant",
          model: "claude-kill9",
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: { input_tokens: 10, output_tokens: 1 },
        },
      }),
    );
    res.write(sse("content_block_start", { index: 0, content_block: { type: "text", text: "" } }));
    for (const part of parts) res.write(sse("content_block_delta", { index: 0, delta: { type: "text_delta", text: part } }));
    res.write(sse("content_block_stop", { index: 0 }));
    res.write(sse("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 30 } }));
    res.end(sse("message_stop", {}));
  });
});
await new Promise((resolve) => stubServer.listen(0, "127.0.0.1", resolve));
const upstream = `http://127.0.0.1:${stubServer.address().port}`;
const scratch = mkdtempSync(`${tmpdir()}/sessiontap-kill9-`);
const mirror = `${scratch}/mirror`;

/** The answer's text, from its text deltas. */
const answerText = (body) => [...body.matchAll(/"text_delta","text":("(?:[^"\\]|\\.)*")/g)].map((m) => JSON.parse(m[1])).join("");
const port = await freePort();
const tapUrl = `http://127.0.0.1:${port}`;
const env = { HOME: scratch, SESSIONTAP_DRAIN_MS: "1000" };
let tap = null;
let starting = null;
async function startTap() {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      tap = await startChild(BINARY, ["serve", "--port", String(port), "--upstream", upstream, "--mirror-dir", mirror], env, /export ANTHROPIC_BASE_URL/);
      return;
    } catch (error) {
      if (!/EADDRINUSE|listen/.test(String(error))) throw error;
      await sleep(50);
    }
  }
  throw new Error("the tap could not be restarted");
}
await startTap();

const started = Date.now();
const completed = []; // { session, requestId, turn }
let failures = 0;
let kills = 0;
let done = 0;

/** One session's turns, retrying each until it completes. */
async function session(k) {
  const id = `kill9-${k}-${"0".repeat(8)}`;
  const messages = [];
  for (let turn = 0; turn < TURNS && Date.now() - started < MAX_MS; turn++) {
    messages.push({ role: "user", content: `session ${k} turn ${turn}` });
    for (let attempt = 0; attempt < 200; attempt++) {
      if (starting !== null) await starting;
      try {
        const response = await fetch(`${tapUrl}/v1/messages`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-claude-code-session-id": id, "anthropic-version": "2023-06-01" },
          body: JSON.stringify({ model: "claude-bench", stream: true, max_tokens: 100, system: "You are Claude Code", messages }),
        });
        const text = await response.text();
        if (response.status === 200 && /event: message_stop\ndata: [^\n]*\n\n$/.test(text)) {
          completed.push({ session: id, requestId: response.headers.get("request-id"), turn, text: answerText(text) });
          messages.push({ role: "assistant", content: [{ type: "text", text: answerText(text) }] });
          break;
        }
        failures++;
      } catch {
        failures++;
        await sleep(20);
      }
    }
  }
  done++;
}

/** Kills the tap at random moments while sessions run, and restarts it. */
async function killer() {
  while (done < SESSIONS) {
    await sleep(KILL_MIN + random() * (KILL_MAX - KILL_MIN));
    if (done >= SESSIONS) break;
    let release;
    starting = new Promise((r) => (release = r));
    const exited = new Promise((r) => tap.child.once("exit", r));
    tap.child.kill("SIGKILL");
    await exited;
    kills++;
    await startTap();
    starting = null;
    release();
  }
}

await Promise.all([...Array.from({ length: SESSIONS }, (_, k) => session(k)), killer()]);
const health = await (await fetch(`${tapUrl}/_tap/health`)).json();
tap.child.kill("SIGTERM");
await new Promise((r) => tap.child.once("exit", r));
stubServer.close();
stubServer.closeAllConnections?.();

// What reached the disk.
const byRequest = new Map();
const reconstructedTexts = new Set();
let reconstructed = 0;
let records = 0;
for (const dir of readdirSync(mirror)) {
  if (!dir.startsWith("kill9-")) continue;
  for (const file of readdirSync(`${mirror}/${dir}`).filter((f) => f.endsWith(".jsonl"))) {
    for (const line of readFileSync(`${mirror}/${dir}/${file}`, "utf8").split("\n")) {
      if (line === "") continue;
      const r = JSON.parse(line);
      records++;
      if (r.type !== "assistant") continue;
      if (r.reconstructed) {
        reconstructed++;
        reconstructedTexts.add(r.message.content.map((b) => b.text).join(""));
      } else byRequest.set(r.requestId, r);
    }
  }
}
const missing = completed.filter((c) => !byRequest.has(c.requestId));
const events = existsSync(`${mirror}/session-mirror-events.jsonl`)
  ? readFileSync(`${mirror}/session-mirror-events.jsonl`, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l))
  : [];
const gaveUp = events.filter((e) => e.action === "give-up").length;
console.log(JSON.stringify(
  {
    sessions: SESSIONS,
    turnsPerSession: TURNS,
    seconds: Math.round((Date.now() - started) / 1000),
    kills,
    completed: completed.length,
    failedAttempts: failures,
    records,
    reconstructedAssistant: reconstructed,
    completedButOnlyReconstructed: missing.filter((m) => reconstructedTexts.has(m.text)).length,
    completedAndNowhere: missing.filter((m) => !reconstructedTexts.has(m.text)).length,
    rate: completed.length === 0 ? 0 : missing.length / completed.length,
    gaveUpLogged: gaveUp,
    gaveUpInFinalProcess: health.mirror?.gaveUp ?? null,
    missing: missing.slice(0, 10),
  },
  null,
  2,
));
rmSync(scratch, { recursive: true, force: true });
