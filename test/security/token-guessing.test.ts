// Guessing the token (docs/RELIABILITY.md "Trust boundaries"): `aaaaaaaaaaaaaaaa` and `1234567890123456`
// were accepted, and 5,000 wrong guesses went through at 7,353/s, none logged. Now a guessable token is a
// usage error (a generated one is offered), wrong tokens from one client are slowed down (after a few, that
// client waits, longer each time), and every failure is counted in health and the events log — never the
// guess itself. In-process for the rules; a real tap process for the client's address and the record.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { tokenBits, WEAK_TOKEN_BITS } from "../../src/config/parse.ts";
import { createApp } from "../../src/server/app.ts";
import { TokenGate } from "../../src/server/request-guard.ts";
import { serveTap, type TapChild } from "../support/child.ts";
import { pollAsync } from "../support/poll.ts";
import { cli } from "../support/recover.ts";

const TOKEN = "k3J9-xQp2_vLm7Rw8ZtB4nYc"; // 24 characters of mixed classes, no runs

describe("a guessable token is refused", () => {
  it("repeats, sequences and repeated blocks count for little; a random token for its length", () => {
    for (
      const weak of [
        "aaaaaaaaaaaaaaaa",
        "1234567890123456",
        "abcdefghijklmnop",
        "abcabcabcabcabca",
        "zyxwvutsrqponmlk",
        "aaaaaaaabbbbbbbb",
        "1111111111111111111111111111",
      ]
    ) {
      assert.ok(tokenBits(weak) < WEAK_TOKEN_BITS, `${weak}: ${tokenBits(weak).toFixed(1)} bits`);
    }
    for (const strong of [TOKEN, "Xq7#pL2v!Rm9$wK4", "hVqL0wWb7u1Zp3QmT2sYdK9xRf5cNg8aE6jB4oIl_-A"]) {
      assert.ok(tokenBits(strong) >= WEAK_TOKEN_BITS, `${strong}: ${tokenBits(strong).toFixed(1)} bits`);
    }
  });

  for (const weak of ["aaaaaaaaaaaaaaaa", "1234567890123456"]) {
    it(`serve --token ${weak} is a usage error that does not echo it and says how to get a good one`, async () => {
      const r = await cli(["serve", "--token", weak]);
      assert.equal(r.code, 2);
      assert.match(r.stderr, /too easy to guess/);
      assert.match(r.stderr, /leave it out and one is generated/);
      assert.ok(!r.stderr.includes(weak), "the token is never echoed");
    });
  }
});

describe("wrong tokens from one client are slowed down and counted", () => {
  let now = 1_000_000;
  const told: Record<string, unknown>[] = [];
  const gate = new TokenGate(TOKEN, { clock: () => now, onFailure: (fields) => told.push(fields) });
  const app = createApp({
    forward: async () => new Response("forwarded"),
    // start-tap puts the gate's counts in health the same way.
    health: () => ({ status: "ok", token: gate.stats() }),
    gate,
  });
  const get = (peer: string, token: string | null, path = "/_tap/api/sessions") =>
    app.request(`http://10.0.0.1:8787${path}`, { headers: { host: "10.0.0.1:8787", ...(token === null ? {} : { authorization: `Bearer ${token}` }) } }, {
      peer: { address: peer, port: 40_000 },
    });

  it("a few wrong tries are answered 401; then that client waits (429, retry-after), longer each time, even with the right token", async () => {
    for (let i = 0; i < TokenGate.FREE_FAILURES; i++) assert.equal((await get("10.0.0.9", `wrong-guess-${i}-xxxxxxxx`)).status, 401);
    const slowed = await get("10.0.0.9", "wrong-guess-again-xxxxxx");
    assert.equal(slowed.status, 429);
    const first = Number(slowed.headers.get("retry-after"));
    assert.ok(first >= 1, `retry-after ${first}`);
    assert.equal((await get("10.0.0.9", TOKEN)).status, 429, "no guess is even tried while the client waits");
    assert.equal((await get("10.0.0.8", TOKEN)).status, 404, "another client is not slowed (the route itself is not there)");
    now += first * 1000;
    assert.equal((await get("10.0.0.9", "wrong-guess-after-wait-x")).status, 401);
    const longer = Number((await get("10.0.0.9", "wrong-guess-once-more-xx")).headers.get("retry-after"));
    assert.ok(longer > first, `the wait grows: ${first} s, then ${longer} s`);
    now += longer * 1000;
    assert.equal((await get("10.0.0.9", TOKEN, "/_tap/health")).status, 200, "the right token, after the wait");
    assert.equal((await get("10.0.0.9", "wrong-guess-after-success")).status, 401, "a success starts the count afresh");
  });

  it("a request with no token at all is not a failure; health counts the failures; what is told never holds a guess", async () => {
    const before = gate.stats().failures;
    for (let i = 0; i < 10; i++) assert.equal((await get("10.0.0.7", null)).status, 401);
    assert.equal(gate.stats().failures, before, "no token is no guess");
    const health = await (await get("10.0.0.7", TOKEN, "/_tap/health")).json() as { token?: { failures: number; slowed: number; clients: number } };
    // The first test's tries: FREE_FAILURES + 2 wrong tokens read, 3 tries refused while 10.0.0.9 waited.
    assert.deepEqual(health.token, { failures: TokenGate.FREE_FAILURES + 2, slowed: 3, clients: 1 });
    assert.ok(told.length > 0);
    assert.ok(!JSON.stringify(told).includes("wrong-guess"), `no guess told: ${JSON.stringify(told)}`);
    assert.ok(told.every((t) => t.peer === "10.0.0.9"), "the client is named");
  });
});

describe("a real tap slows a guessing client and records it", () => {
  let scratch: string;
  let tap: TapChild;
  let url: string;
  before(async () => {
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-guess-`);
    ({ tap, url } = await serveTap(["--mirror-dir", `${scratch}/mirror`, "--token", TOKEN], { env: { HOME: scratch } }));
  });
  after(async () => {
    tap.signal("SIGTERM");
    await tap.exit(10_000);
    rmSync(scratch, { recursive: true, force: true });
  });

  it("20 wrong guesses: the first few are 401, the next 429; the events log and stderr say so without the guesses", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await fetch(`${url}/_tap/api/sessions`, { headers: { authorization: `Bearer guess-number-${i}-padding` } });
      statuses.push(res.status);
      await res.body?.cancel();
    }
    assert.deepEqual(statuses.slice(0, TokenGate.FREE_FAILURES), Array(TokenGate.FREE_FAILURES).fill(401));
    assert.equal(statuses[TokenGate.FREE_FAILURES], 429, `then slowed: ${statuses}`);
    // Health with the right token is itself refused until the wait is over (each such try counted as slowed).
    const health = await pollAsync(
      async () =>
        await (await fetch(`${url}/_tap/health`, { headers: { authorization: `Bearer ${TOKEN}` } })).json() as { token?: { failures: number; slowed: number } },
      (h) => h.token !== undefined,
      10_000,
      "the wait to pass",
    );
    assert.equal(health.token!.failures, statuses.filter((s) => s === 401).length, "every wrong token read is counted");
    assert.ok(health.token!.slowed >= statuses.filter((s) => s === 429).length, "and every try refused unread");
    await tap.waitFor("stderr", /wrong token/);
    const events = readFileSync(`${scratch}/mirror/session-mirror-events.jsonl`, "utf8");
    assert.match(events, /"action":"token-failure"/);
    assert.match(events, /"peer":"127\.0\.0\.1"/);
    assert.doesNotMatch(events + tap.stderr(), /guess-number/, "never a guess");
  });
});
