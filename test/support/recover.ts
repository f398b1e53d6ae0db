/**
 * Helpers for the recovery tests: the CLI run in this process (`main()` with captured output), small
 * hand-made records, mirrors written to scratch directories, and a mirror made by replaying the real
 * interactive capture (a tool call, /compact, a rewind) through a tap.
 */
import assert from "node:assert/strict";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { basename } from "node:path";
import { type Io, main } from "../../src/cli/main.ts";
import { healthProof } from "../../src/cli/tap-probe.ts";
import { capturedRequests, capturedTranscript } from "./captures.ts";
import { findTranscripts, type Scratch } from "./claude.ts";
import { type StubUpstream, textReply, toolUseReply } from "./stub-upstream.ts";

/** What one CLI run printed and returned. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `sessiontap <args>` in this process; `io` may replace the seams (fs, fetch, clock, cwd). */
export async function cli(args: string[], env: Record<string, string | undefined> = {}, io: Partial<Io> = {}): Promise<CliRun> {
  let stdout = "";
  let stderr = "";
  const code = await main(args, env, {
    stdout: (t) => void (stdout += t),
    stderr: (t) => void (stderr += t),
    home: io.home ?? "/nonexistent-home",
    stopSignal: new Promise(() => {}),
    ...io,
  });
  return { code, stdout, stderr };
}

/**
 * A fetch under which a tap at `base` answers its health with `health`, proving itself with the key of the
 * root it claims (made there when absent) as a real tap does (src/cli/tap-probe.ts); nothing else answers.
 */
export function tapFetch(base: string, health: Record<string, unknown>): typeof fetch {
  const root = (health.mirror as { root?: string } | undefined)?.root;
  let key: string | null = null;
  if (root !== undefined && existsSync(root)) {
    // Made now, as the tap's start makes it, before doctor reads it.
    if (!existsSync(`${root}/.binding-key`)) writeFileSync(`${root}/.binding-key`, `${randomBytes(32).toString("hex")}\n`, { mode: 0o600 });
    key = readFileSync(`${root}/.binding-key`, "utf8").trim();
  }
  return (async (input: string | URL | Request) => {
    const url = new URL(String(input instanceof Request ? input.url : input));
    if (url.origin !== base) throw Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    const nonce = url.searchParams.get("challenge");
    if (nonce === null) return Response.json(health);
    return Response.json({ status: health.status, proof: key === null ? null : healthProof(key, nonce, url.host) });
  }) as unknown as typeof fetch;
}

/** Claude Code loses its transcript of `sessionId` (deleted from `scratch`'s home), and `sessiontap restore` brings it back from `mirrorDir`. */
export async function loseAndRestore(scratch: Scratch, sessionId: string, mirrorDir: string): Promise<CliRun> {
  const [transcript] = findTranscripts(scratch.home).filter((p) => basename(p) === `${sessionId}.jsonl`);
  assert.ok(transcript, "Claude Code wrote its transcript");
  unlinkSync(transcript);
  return await cli(["restore", sessionId, "--mirror-dir", mirrorDir], {}, { home: scratch.home, cwd: scratch.project });
}

/** A fresh scratch directory and its removal. */
export function scratchDir(prefix = "sessiontap-recover-"): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(`${tmpdir()}/${prefix}`);
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

type Rec = Record<string, unknown>;

let clock = Date.parse("2026-01-02T03:04:05.000Z");

/** A record in the mirror's envelope; times increase with each call unless given. */
export function rec(type: "user" | "assistant" | "system", uuid: string, parentUuid: string | null, content: unknown, extra: Rec = {}): Rec {
  clock += 1000;
  const message = type === "assistant"
    ? {
      type: "message",
      role: "assistant",
      id: `msg_${uuid}`,
      model: "claude-test",
      content,
      stop_reason: "end_turn",
      stop_sequence: null,
      stop_details: null,
      usage: {},
    }
    : { role: type, content };
  const base: Rec = {
    parentUuid,
    isSidechain: false,
    type,
    uuid,
    timestamp: new Date(clock).toISOString(),
    sessionId: "sess-1",
    cwd: "/work/project",
    version: "2.1.332",
    userType: "external",
    entrypoint: "cli",
    message,
    source: "sessiontap",
  };
  if (type === "system") base.subtype = "api_message";
  return { ...base, ...extra };
}

/** Writes `records` as one mirror file of session directory `session` under `root` (0700/0600, like the tap). */
export function writeMirror(root: string, session: string, records: Rec[], file = "2026-01-02T03-04-05.000Z.jsonl"): string {
  mkdirSync(`${root}/${session}`, { recursive: true, mode: 0o700 });
  const path = `${root}/${session}/${file}`;
  writeFileSync(path, records.map((r) => JSON.stringify(r) + "\n").join(""));
  chmodSync(path, 0o600);
  return path;
}

/** The id of the session of the replayed interactive capture. */
export const CAPTURE = "cc-2.1.328-interactive-compact-rewind";

/**
 * Replays a real capture through `tap` (by default the interactive session: greeting, tool call, /compact
 * sent twice, a message, a rewind and another message), each request with the headers Claude Code sent,
 * answered as the recorded stub did; returns its session id once the tap's mirror has written it.
 */
export async function replayCapture(tap: { url: string; settled(): Promise<void> }, stub: StubUpstream, capture = CAPTURE): Promise<string> {
  const answers = new Map<string, Rec[]>();
  for (const r of capturedTranscript(capture)) {
    if (r.type === "assistant") answers.set(r.message.id, [...(answers.get(r.message.id) ?? []), ...r.message.content]);
  }
  for (const request of capturedRequests(capture)) {
    const id = `msg_mock_${request.n}`;
    const content = answers.get(id) as { text?: string; name?: string; input?: unknown; id?: string }[] | undefined;
    if (content === undefined) stub.enqueue({ kind: "sse", chunks: textReply(`<analysis>a</analysis><summary>summary ${request.n}</summary>`, { id }) });
    else if (content.length === 1) stub.enqueue({ kind: "sse", chunks: textReply(String(content[0].text), { id }) });
    else {stub.enqueue({
        kind: "sse",
        chunks: toolUseReply(String(content[1].name), content[1].input, { id, preText: content[0].text, toolUseId: content[1].id }),
      });}
    const { host: _host, "content-length": _length, ...headers } = request.headers;
    const response = await fetch(`${tap.url}${request.url}`, { method: "POST", headers, body: JSON.stringify(request.body) });
    await response.arrayBuffer();
  }
  await tap.settled();
  return capturedRequests(capture)[0].headers["x-claude-code-session-id"];
}
