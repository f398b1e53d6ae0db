// A store that refuses the tap for its settings is a configuration error, not an outage
// (docs/RELIABILITY.md "Shared store"): a database that does not exist, or a role the server does not
// know, was retried in silence for ever as if the network were down. Now health is degraded and names it
// (`misconfigured`), stderr says it once with the fix, the events log once, and it is tried again only
// once a minute; commits wait in the spool meanwhile and the client is unaffected. Against the real
// PostgreSQL the suite starts.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { configurationProblem } from "../../src/store/pg-client.ts";
import { serveTap } from "../support/child.ts";
import { Conversation } from "../support/client.ts";
import { clusterUrl, pollAsync, storeHealth } from "../support/pg.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";
import { readEvents } from "../support/tap.ts";

describe("a store refused for its settings", () => {
  let stub: StubUpstream;
  let dir: string;
  before(async () => {
    stub = await startStub();
    dir = mkdtempSync(`${tmpdir()}/sessiontap-store-config-`);
  });
  after(async () => {
    await stub.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("tells settings from reachability by SQLSTATE", () => {
    assert.match(String(configurationProblem({ code: "28P01" })), /wrong password/);
    assert.match(String(configurationProblem({ code: "28000" })), /authentication failed/);
    assert.match(String(configurationProblem({ code: "3D000" })), /database does not exist/);
    for (const code of ["ECONNREFUSED", "ETIMEDOUT", "57P01", "08006", undefined]) assert.equal(configurationProblem({ code }), null, String(code));
  });

  for (
    const [label, url, says] of [
      ["a database that does not exist", () => withPath(clusterUrl(), "/no_such_database_here"), /database does not exist/],
      ["a role the server does not know", () => withUser(clusterUrl(), "no_such_role_here"), /authentication failed/],
    ] as const
  ) {
    it(`${label}: degraded and named, one stderr line, one events-log line, the client unaffected`, { timeout: 60_000 }, async () => {
      const root = `${dir}/${label.replace(/\W+/g, "-")}`;
      const { tap, url: tapUrl } = await serveTap(["--upstream", stub.url, "--mirror-dir", root, "--store", url()]);
      try {
        const store = await pollAsync(() => storeHealth(tapUrl), (h) => h.status === "misconfigured", 20_000, "the store to be misconfigured");
        assert.match(String(store.misconfigured), says);
        const health = await (await fetch(`${tapUrl}/_tap/health`)).json() as { status: string; problems: string[] };
        assert.equal(health.status, "degraded");
        assert.ok(health.problems.some((p) => /^store: misconfigured: /.test(p) && says.test(p)), JSON.stringify(health.problems));
        assert.equal((await new Conversation(tapUrl, "config").say("hello")).status, 200, "the client is unaffected");
        assert.equal((await new Conversation(tapUrl, "config").say("again")).status, 200);
        await pollAsync(() => storeHealth(tapUrl), (h) => h.spooled === 2, 10_000, "both commits spooled");
        const lines = tap.stderr().split("\n").filter((l) => l.includes("store"));
        assert.equal(lines.length, 1, `one line: ${lines.join(" | ")}`);
        assert.match(lines[0], says);
        assert.match(lines[0], /SESSIONTAP_STORE/, "it names the fix");
        assert.doesNotMatch(lines[0], /unreachable/, "not said to be a network outage");
        const states = readEvents(root).filter((e) => e.action === "store").map((e) => e.status);
        assert.deepEqual(states, ["misconfigured"], "once in the events log, however often it is written to");
      } finally {
        tap.signal("SIGTERM");
        await tap.exit(10_000);
      }
    });
  }
});

function withPath(url: string, path: string): string {
  const u = new URL(url);
  u.pathname = path;
  return u.toString();
}

function withUser(url: string, user: string): string {
  const u = new URL(url);
  u.username = user;
  return u.toString();
}
