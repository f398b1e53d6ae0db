// What the tap leaves behind (SPEC §2–§4), run as a child process: with the mirror off nothing at all
// is written under the mirror root; with it on, credentials appear in no output and no file.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { serveTap } from "../support/child.ts";
import { startStub, type StubUpstream, textReply } from "../support/stub-upstream.ts";

const CHILD_MS = 30_000;

/** Every file under `dir` (recursively), as paths. */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = `${dir}/${name}`;
    if (statSync(path).isDirectory()) out.push(path + "/", ...filesUnder(path));
    else out.push(path);
  }
  return out;
}

/** A Messages API request as Claude Code sends it, with credentials. */
function messages(url: string, secrets: Record<string, string>, stream: boolean, text: string): Promise<Response> {
  return fetch(`${url}/v1/messages?beta=true`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-claude-code-session-id": "privacy-session", ...secrets },
    body: JSON.stringify({ model: "m", stream, max_tokens: 10, messages: [{ role: "user", content: text }] }),
  });
}

describe("cli: what the tap writes", () => {
  let scratch: string;
  let stub: StubUpstream;
  before(async () => {
    scratch = mkdtempSync(`${tmpdir()}/sessiontap-privacy-`);
    stub = await startStub();
  });
  after(async () => {
    await stub?.close();
    rmSync(scratch, { recursive: true, force: true });
  });

  for (
    const [label, args, env] of [
      ["--no-mirror", ["--no-mirror"], {}],
      ["SESSIONTAP_MIRROR=off", [], { SESSIONTAP_MIRROR: "off" }],
    ] as const
  ) {
    it(`${label}: nothing at all is written under the mirror root`, { timeout: CHILD_MS }, async () => {
      const existing = `${scratch}/${label.replace(/\W/g, "")}-existing`;
      const absent = `${scratch}/${label.replace(/\W/g, "")}-absent`;
      mkdirSync(existing);
      for (const root of [existing, absent]) {
        const { tap, url } = await serveTap(["--upstream", stub.url, "--mirror-dir", root, ...args], { env: { HOME: scratch, ...env } });
        try {
          assert.match(tap.stdout(), /mirror\s+off/);
          const events = textReply("not mirrored");
          stub.enqueue({ kind: "sse", chunks: events }, { kind: "json", status: 200, body: { type: "message", content: [] } });
          assert.equal(await (await messages(url, {}, true, "hello")).text(), events.join(""));
          assert.equal((await messages(url, {}, false, "hello again")).status, 200);
          const health = await (await fetch(`${url}/_tap/health`)).json();
          assert.equal(health.mirror, "off");
        } finally {
          tap.signal("SIGTERM");
        }
        assert.equal((await tap.exit()).code, 0);
      }
      assert.deepEqual(filesUnder(existing), []);
      assert.equal(existsSync(absent), false, `${absent} was created`);
    });
  }

  it("credentials appear in no output and no file under the mirror root", { timeout: CHILD_MS }, async () => {
    const secrets = {
      "x-api-key": "sk-ant-api03-PRIVACYSECRET-apikey",
      authorization: "Bearer PRIVACYSECRET-bearer",
      cookie: "session=PRIVACYSECRET-cookie",
      "proxy-authorization": "Basic PRIVACYSECRET-proxy",
    };
    await using own = await startStub();
    const root = `${scratch}/credentials-mirror`;
    const { tap, url } = await serveTap(["--upstream", own.url, "--mirror-dir", root], { env: { HOME: scratch } });
    try {
      const events = textReply("mirrored answer");
      own.enqueue(
        { kind: "sse", chunks: events },
        { kind: "json", status: 401, body: { type: "error", error: { type: "authentication_error", message: "invalid x-api-key" } } },
        { kind: "reset-after", chunks: events.slice(0, 2) },
      );
      assert.equal(await (await messages(url, secrets, true, "first question")).text(), events.join(""));
      assert.equal((await messages(url, secrets, false, "second question")).status, 401);
      await (await messages(url, secrets, true, "third question")).text().catch(() => "reset");
      assert.equal(own.requests[0].headers["x-api-key"], secrets["x-api-key"], "credentials must still be forwarded");
      await own.close(); // once: `await using` does not close it again
      // The upstream is gone now: the failure is logged (stderr, events log) without credentials.
      assert.equal((await messages(url, secrets, true, "fourth question")).status, 502);
    } finally {
      tap.signal("SIGTERM");
    }
    assert.equal((await tap.exit()).code, 0);
    const files = filesUnder(root).filter((f) => !f.endsWith("/"));
    assert.ok(files.some((f) => f.endsWith(".jsonl")), `the mirror wrote nothing: ${files}`);
    assert.match(tap.stderr(), /upstream 127\.0\.0\.1:\d+ broke off an answer mid-stream \(/, "the first upstream failure is said on stderr");
    const texts = [["stdout", tap.stdout()], ["stderr", tap.stderr()], ...files.map((f) => [f, readFileSync(f, "latin1")])];
    for (const [where, text] of texts) {
      assert.ok(!/PRIVACYSECRET/.test(text), `a credential appears in ${where}`);
    }
  });
});
