// The viewer's routes in-process (`app.request`, Hono style): the page and its Content-Security-Policy,
// the loopback guard, the data API, and the server-sent events that carry the new records of the session a
// page has open, whoever wrote them. The data is read in the viewer's own Worker, as a tap reads it. Runs
// under Bun and Deno.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { createApp } from "../../src/server/app.ts";
import { TokenGate } from "../../src/server/request-guard.ts";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { bundleScript } from "../../src/runtime/index.ts";
import { createViewer, type Viewer } from "../../src/viewer/routes.ts";
import { rec, scratchDir, writeMirror } from "../support/recover.ts";
import { startTestTap } from "../support/tap.ts";

const S1 = "1111aaaa-0000-4000-8000-000000000001";
const S2 = "1111bbbb-0000-4000-8000-000000000002";

/** Reads an event stream until `done` holds for the text so far; throws when `ms` pass or the stream ends first. */
async function readUntil(reader: ReadableStreamDefaultReader<Uint8Array>, done: (text: string) => boolean, ms = 5000, text = ""): Promise<string> {
  const until = Date.now() + ms;
  const decoder = new TextDecoder();
  while (!done(text)) {
    const left = until - Date.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const next = left <= 0 ? null : await Promise.race([reader.read(), new Promise<null>((r) => (timer = setTimeout(() => r(null), left)))]);
    clearTimeout(timer);
    if (next === null) throw new Error(`timed out after ${ms} ms reading the event stream; read so far: ${JSON.stringify(text.slice(-400))}`);
    if (next.done) throw new Error(`the event stream ended before the condition held; read so far: ${JSON.stringify(text.slice(-400))}`);
    text += decoder.decode(next.value, { stream: true });
  }
  return text;
}

/** Reads an event stream to its end; throws when it is still open after `ms`. */
async function readToEnd(reader: ReadableStreamDefaultReader<Uint8Array>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((r) => (timer = setTimeout(() => r("late"), ms)));
  try {
    for (;;) {
      const next = await Promise.race([reader.read(), late]);
      if (next === "late") throw new Error(`the event stream was still open after ${ms} ms`);
      if (next.done) return;
    }
  } finally {
    clearTimeout(timer);
  }
}

/** The `records` events in an event-stream text, parsed. */
function recordEvents(
  text: string,
): { dir: string; scope: string; agent: string | null; bytes: number; records: { uuid: string; parentUuid: string | null; html: string }[] }[] {
  return text.split("\n\n").filter((e) => e.startsWith("event: records\n")).map((e) => JSON.parse(e.slice(e.indexOf("data: ") + 6)));
}

describe("viewer routes", () => {
  const scratch = scratchDir("sessiontap-viewer-");
  const root = `${scratch.dir}/mirror`;
  let viewer: Viewer;
  let app: ReturnType<typeof createApp>;
  let file = "";
  const get = (path: string, host = "127.0.0.1:8787") => app.request(`http://${host}${path}`, { headers: { host } });

  before(() => {
    file = writeMirror(root, S1, [
      rec("user", "u1", null, "hello <viewer>", { sessionId: S1 }),
      rec("assistant", "a1", "u1", [{ type: "text", text: "hi" }, { type: "tool_use", id: "toolu_9", name: "Bash", input: { command: "ls" } }], {
        sessionId: S1,
      }),
    ]);
    writeMirror(root, S2, [rec("user", "v1", null, "another session about zebras", { sessionId: S2 })]);
    viewer = createViewer({
      mirrorDir: root,
      claudeDir: `${scratch.dir}/claude`,
      host: "127.0.0.1",
      version: "0.1.0",
      bundle: bundleScript,
      onError: (e) => assert.fail(String(e)),
      pollMs: 100,
    });
    app = createApp({ forward: async () => new Response("forwarded", { status: 299 }), health: () => ({ version: "0.1.0" }), viewer: viewer.deps });
  });
  after(() => {
    viewer.close();
    scratch.cleanup();
  });

  it("GET /_tap/ is one self-contained page whose only script carries the CSP nonce", async () => {
    const res = await get("/_tap/");
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type") ?? "", /text\/html/);
    const csp = res.headers.get("content-security-policy") ?? "";
    const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
    assert.ok(nonce, csp);
    assert.match(csp, /default-src 'none'/);
    const html = await res.text();
    assert.deepEqual([...html.matchAll(/<script([^>]*)>/g)].map((m) => m[1]), [` nonce="${nonce}"`]);
    assert.ok(!/\b(src|href)="(https?:)?\/\//.test(html), "nothing loaded from elsewhere");
    assert.equal(res.headers.get("cache-control"), "no-store");
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    assert.equal(res.headers.get("referrer-policy"), "no-referrer");
    const again = /'nonce-([^']+)'/.exec((await get("/_tap/")).headers.get("content-security-policy") ?? "")?.[1];
    assert.notEqual(again, nonce, "a fresh nonce per page");
  });

  it("answers loopback names only while the tap listens on loopback; anywhere with the token when bound elsewhere on purpose", async () => {
    assert.equal((await get("/_tap/api/sessions", "localhost:8787")).status, 200);
    assert.equal((await get("/_tap/api/sessions", "[::1]:8787")).status, 200);
    for (const host of ["evil.example:8787", "127.0.0.1.evil.example", "10.0.0.5:8787"]) {
      const res = await get("/_tap/api/sessions", host);
      assert.equal(res.status, 403, host);
      assert.equal((await get("/_tap/", host)).status, 403, host);
    }
    assert.equal((await get("/_tap/health", "evil.example")).status, 200, "health is not the viewer");
    const open = createViewer({ fs: nodeFs, mirrorDir: root, claudeDir: scratch.dir, host: "0.0.0.0", version: "0", bundle: bundleScript, onError: () => {} });
    const wide = createApp({ forward: async () => new Response(null), health: () => ({}), viewer: open.deps, gate: new TokenGate("a-token-for-the-network") });
    assert.equal(
      (await wide.request("http://10.0.0.5:8787/_tap/api/sessions", { headers: { host: "10.0.0.5:8787" } })).status,
      401,
      "beyond loopback: the token",
    );
    assert.equal(
      (await wide.request("http://10.0.0.5:8787/_tap/api/sessions", { headers: { host: "10.0.0.5:8787", authorization: "Bearer a-token-for-the-network" } }))
        .status,
      200,
    );
    const tokenless = createApp({ forward: async () => new Response(null), health: () => ({}), viewer: open.deps });
    assert.equal((await tokenless.request("http://10.0.0.5:8787/_tap/api/sessions", { headers: { host: "10.0.0.5:8787" } })).status, 403, "no token: closed");
    open.close();
  });

  it("health under a foreign Host answers its status only: a page that rebinds its domain to the tap reads no path or session id", async () => {
    const full = {
      status: "degraded",
      problems: ["guard: 97ca207e… transcript missing"],
      mirror: { root: "/home/me/.claude/session-mirrors" },
      guard: { alerts: [{ sessionId: "97ca207e" }] },
    };
    const tap = createApp({ forward: async () => new Response(null), health: () => full, viewer: viewer.deps });
    const health = (host: string) => tap.request(`http://${host}/_tap/health`, { headers: { host } });
    for (const host of ["evil.example:8787", "127.0.0.1.evil.example", "10.0.0.5:8787"]) {
      const res = await health(host);
      assert.equal(res.status, 200, host);
      assert.deepEqual(await res.json(), { status: "degraded" }, host);
    }
    for (const host of ["127.0.0.1:8787", "localhost:8787", "[::1]:8787"]) assert.deepEqual(await (await health(host)).json(), full, host);
  });

  it("api: sessions, one session by prefix (404 unknown, 409 ambiguous), search, export", async () => {
    const list = await (await get("/_tap/api/sessions")).json();
    assert.deepEqual(list.map((s: { sessionId: string }) => s.sessionId).sort(), [S1, S2]);
    const one = await (await get(`/_tap/api/sessions/${S1.slice(0, 6)}`)).json();
    assert.equal(one.session.sessionId, S1);
    assert.equal(one.tail, "a1");
    assert.match(one.html, /data-uuid="u1"/);
    assert.ok(one.html.includes("hello &lt;viewer&gt;"), "escaped by the tap");
    assert.equal((await get("/_tap/api/sessions/zzzz")).status, 404);
    assert.equal((await get("/_tap/api/sessions/1111")).status, 409);
    const hits = await (await get("/_tap/api/search?q=ZEBRAS")).json();
    assert.deepEqual(hits.map((h: { uuid: string }) => h.uuid), ["v1"]);
    assert.deepEqual(await (await get("/_tap/api/search?q=bash%20%22command%22")).json().then((h: { uuid: string }[]) => h.map((x) => x.uuid)), ["a1"]);
    const md = await get(`/_tap/api/sessions/${S1}/export?format=md`);
    assert.equal(md.status, 200);
    assert.equal(md.headers.get("content-disposition"), `attachment; filename="${S1}.md"`);
    assert.match(await md.text(), /^# Claude Code session 1111aaaa/);
    assert.match(md.headers.get("content-security-policy") ?? "", /^default-src 'none'/, "an exported page runs nothing either");
    assert.equal((await get(`/_tap/api/sessions/${S1}/export?format=pdf`)).status, 400);
    assert.equal((await get("/_tap/nothing")).status, 404);
    assert.equal((await get("/v1/messages")).status, 299, "everything else is forwarded");
  });

  it("search hits carry the session's title and where the matches are in the snippet", async () => {
    const [hit] = await (await get("/_tap/api/search?q=ZEBRAS")).json();
    assert.equal(hit.title, "another session about zebras");
    assert.equal(hit.role, "user");
    assert.deepEqual(hit.marks.map(([a, b]: [number, number]) => hit.snippet.slice(a, b)), ["zebras"]);
  });

  it("restore: only a same-origin JSON POST to a loopback name; a dry run writes nothing; then the same outcome as sessiontap restore", async () => {
    const claude = `${scratch.dir}/claude`;
    const url = `/_tap/api/sessions/${S2}/restore`;
    const post = (body: unknown, headers: Record<string, string> = {}, host = "127.0.0.1:8787") =>
      app.request(`http://${host}${url}`, {
        method: "POST",
        headers: { host, "content-type": "application/json", ...headers },
        body: typeof body === "string" ? body : JSON.stringify(body),
      });
    const refused: [string, Response][] = [
      ["another site's page (Origin)", await post({ dryRun: false }, { origin: "https://evil.example" })],
      ["another port on loopback (Origin)", await post({ dryRun: false }, { origin: "http://127.0.0.1:9999" })],
      ["an opaque origin", await post({ dryRun: false }, { origin: "null" })],
      ["a cross-site fetch (Sec-Fetch-Site)", await post({ dryRun: false }, { "sec-fetch-site": "cross-site" })],
      ["a same-site fetch from a sibling (Sec-Fetch-Site)", await post({ dryRun: false }, { "sec-fetch-site": "same-site" })],
      [
        "a form post (not JSON)",
        await app.request(`http://127.0.0.1:8787${url}`, {
          method: "POST",
          headers: { host: "127.0.0.1:8787", "content-type": "application/x-www-form-urlencoded" },
          body: "dryRun=false",
        }),
      ],
      ["a rebinding page (Host)", await post({ dryRun: false }, {}, "evil.example:8787")],
      ["a body that is not the options", await post({ dry: 1 })],
    ];
    assert.deepEqual(refused.map(([what, r]) => [what, r.status]), [
      ["another site's page (Origin)", 403],
      ["another port on loopback (Origin)", 403],
      ["an opaque origin", 403],
      ["a cross-site fetch (Sec-Fetch-Site)", 403],
      ["a same-site fetch from a sibling (Sec-Fetch-Site)", 403],
      ["a form post (not JSON)", 415],
      ["a rebinding page (Host)", 403],
      ["a body that is not the options", 400],
    ]);
    assert.equal((await app.request(`http://127.0.0.1:8787${url}`, { headers: { host: "127.0.0.1:8787" } })).status, 404, "GET does not restore");
    assert.ok(!existsSync(`${claude}/projects`), "nothing written by a refused request");

    const dry = await post({ dryRun: true }, { origin: "http://127.0.0.1:8787", "sec-fetch-site": "same-origin" });
    assert.equal(dry.status, 200);
    const plan = await dry.json();
    assert.equal(plan.outcome.action, "create");
    assert.equal(plan.outcome.dryRun, true);
    assert.match(plan.lines.join("\n"), /^Would create .*\/projects\/-work-project\/1111bbbb-0000-4000-8000-000000000002\.jsonl/);
    assert.ok(!existsSync(`${claude}/projects`), "a dry run writes nothing");

    const done = await (await post({ dryRun: false }, { origin: "http://127.0.0.1:8787" })).json();
    assert.equal(done.ok, true);
    assert.equal(done.resume, `cd /work/project && claude --resume ${S2}`);
    assert.deepEqual(readdirSync(`${claude}/projects/-work-project`), [`${S2}.jsonl`]);
    const again = await post({ dryRun: true });
    assert.equal(again.status, 409, "a transcript with content is left alone");
    assert.match((await again.json()).error, /already holds every prompt and answer of the mirror's current branch/);
    assert.equal((await post({ dryRun: false, force: true })).status, 200, "force replaces it, keeping a backup");
    assert.equal(readdirSync(`${claude}/projects/-work-project`).filter((n) => n.includes(".bak-")).length, 1);
  });

  it("events: `ready` with what the session's files hold, then each new whole line of that session as it lands (the poll)", async () => {
    const shown = (await (await get(`/_tap/api/sessions/${S1}`)).json()).session;
    const res = await get(`/_tap/api/events?dir=${S1}`);
    assert.match(res.headers.get("content-type") ?? "", /text\/event-stream/);
    const reader = res.body!.getReader();
    let text = await readUntil(reader, (t) => t.includes("event: ready"));
    assert.deepEqual(JSON.parse(/event: ready\ndata: (.*)\n/.exec(text)![1]), { bytes: shown.bytes }, "the page compares it with what it shows");
    assert.deepEqual(recordEvents(text), [], "records already there are not sent again");

    // Another writer appends a turn, the second record in two pieces: nothing is sent for half a line.
    const u2 = JSON.stringify(rec("user", "u2", "a1", "next <b>", { sessionId: S1 }));
    const a2 = JSON.stringify(rec("assistant", "a2", "u2", [{ type: "text", text: "answer" }], { sessionId: S1 }));
    appendFileSync(file, u2 + "\n" + a2.slice(0, 20));
    text = await readUntil(reader, (t) => recordEvents(t).length >= 1, 5000, text);
    assert.deepEqual(recordEvents(text).flatMap((e) => e.records.map((r) => r.uuid)), ["u2"]);
    appendFileSync(file, a2.slice(20) + "\n");
    text = await readUntil(reader, (t) => recordEvents(t).length >= 2, 5000, text);
    const [first, second] = recordEvents(text);
    assert.equal(first.dir, S1);
    assert.equal(first.scope, "main");
    assert.match(first.records[0].html, /<article class="rec user" id="r-u2"/);
    assert.ok(first.records[0].html.includes("next &lt;b&gt;"));
    assert.deepEqual(second.records.map((r) => [r.uuid, r.parentUuid]), [["a2", "u2"]]);
    assert.equal(second.bytes, statSync(file).size, "the bytes the page has seen, whole lines");

    // A new subagent file is followed from its first byte; another session's writes are not this stream's.
    appendFileSync(`${root}/${S2}/2026-01-02T03-04-05.000Z.jsonl`, JSON.stringify(rec("user", "v9", "v1", "not for this page", { sessionId: S2 })) + "\n");
    mkdirSync(`${root}/${S1}/subagents/agent-x`, { recursive: true });
    writeFileSync(`${root}/${S1}/subagents/agent-x/2026.jsonl`, JSON.stringify(rec("user", "sub1", null, "agent work", { sessionId: S1 })) + "\n");
    text = await readUntil(reader, (t) => recordEvents(t).length >= 3, 5000, text);
    assert.deepEqual(recordEvents(text)[2], { ...recordEvents(text)[2], dir: S1, scope: "subagent", agent: "agent-x" });
    assert.deepEqual(recordEvents(text).map((e) => e.dir), [S1, S1, S1]);
    await reader.cancel();
  });

  it("events name one session's directory, and end when the tap stops (so the drain is not held open)", async () => {
    const own = createViewer({
      fs: nodeFs,
      mirrorDir: root,
      claudeDir: scratch.dir,
      host: "127.0.0.1",
      version: "0",
      bundle: bundleScript,
      onError: (e) => assert.fail(String(e)),
    });
    const wapp = createApp({ forward: async () => new Response(null), health: () => ({}), viewer: own.deps });
    const events = (query: string) => wapp.request(`http://127.0.0.1/_tap/api/events${query}`, { headers: { host: "127.0.0.1" } });
    for (const query of ["", "?dir=", "?dir=..", "?dir=.staging", `?dir=${S1}/subagents`, "?dir=%2Fetc"]) {
      assert.equal((await events(query)).status, 400, query);
    }
    const reader = (await events(`?dir=${S2}`)).body!.getReader();
    await readUntil(reader, (t) => t.includes("event: ready"));
    own.close();
    await readToEnd(reader, 2000);
  });

  it("a reader whose thread dies is said once, its question fails, and the next question starts a new one", async () => {
    const errors: string[] = [];
    const faulty = createViewer({
      mirrorDir: root,
      claudeDir: scratch.dir,
      host: "127.0.0.1",
      version: "0",
      bundle: bundleScript,
      onError: (e) => errors.push(String(e instanceof Error ? e.message : e)),
      workerUrl: new URL("../support/viewer-fault-worker.ts", import.meta.url),
    });
    const fapp = createApp({ forward: async () => new Response(null), health: () => ({}), viewer: faulty.deps, onError: (e) => errors.push(`answer: ${e}`) });
    const ask = (path: string) => fapp.request(`http://127.0.0.1${path}`, { headers: { host: "127.0.0.1" } });
    assert.equal((await ask("/_tap/api/search?q=zebras")).status, 200);
    const live = (await ask(`/_tap/api/events?dir=${S1}`)).body!.getReader();
    await readUntil(live, (t) => t.includes("event: ready"));
    const died = await ask("/_tap/api/search?q=die-on-cue");
    assert.equal(died.status, 500);
    assert.equal((await died.json()).error.message, "sessiontap: internal error");
    assert.equal(errors.filter((e) => /^the viewer's reader stopped: .*cued by the test/.test(e)).length, 1, errors.join("\n"));
    assert.ok(errors.some((e) => /^answer: .*the viewer's reader stopped/.test(e)), errors.join("\n"));
    const hits = await (await ask("/_tap/api/search?q=zebras")).json();
    assert.deepEqual(hits.map((h: { uuid: string }) => h.uuid), ["v1"], "a new reader answers");
    await readToEnd(live, 2000); // the page follows again, from the new reader, and sees what it missed
    faulty.close();
  });

  it("a running tap serves the viewer, and stopping it ends open event streams at once (the drain is not held)", async () => {
    await using tap = await startTestTap("http://127.0.0.1:9", { SESSIONTAP_DRAIN_MS: "10000" });
    const res = await fetch(`${tap.url}/_tap/api/events?dir=a-session-not-there-yet`);
    const reader = res.body!.getReader();
    assert.match(await readUntil(reader, (t) => t.includes("event: ready")), /event: ready/);
    assert.equal((await fetch(`${tap.url}/_tap/`)).status, 200);
    const started = Date.now();
    await tap.close();
    assert.ok(Date.now() - started < 5000, `stopped in ${Date.now() - started} ms`);
    await readToEnd(reader, 1000);
  });
});
