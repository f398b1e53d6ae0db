// Browsers and the network (docs/RELIABILITY.md "Trust boundaries", holes 6 and 7). A cross-site page could make a user's browser
// POST through the tap (a no-cors text/plain request was forwarded and mirrored); now a request carrying
// `Sec-Fetch-Site: cross-site` (or same-site) or a foreign `Origin` is refused with 403 before anything is
// forwarded or mirrored. With a token (required beyond loopback), every /_tap/ route but the bare health
// status needs it, as a bearer token or the login link's HttpOnly, SameSite=Strict cookie; API traffic is
// forwarded as before. In-process tap against a stub; the real process is in processes.test.ts.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { crossSiteRefusal, type RequestFacts } from "../../src/server/request-guard.ts";
import { Conversation } from "../support/client.ts";
import { cli } from "../support/recover.ts";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { allRecords, type TestTap, withTap } from "../support/tap.ts";

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);
const facts = (over: Partial<RequestFacts>): RequestFacts => ({
  method: "POST",
  path: "/v1/messages",
  host: "127.0.0.1:8787",
  origin: null,
  secFetchSite: null,
  secFetchMode: null,
  ...over,
});

/** A Messages API body as a page could send it (no custom headers: the session travels in metadata). */
const pageBody = JSON.stringify({
  model: "claude-test",
  max_tokens: 10,
  stream: true,
  metadata: { user_id: JSON.stringify({ session_id: "planted-by-a-page" }) },
  messages: [{ role: "user", content: "a page wrote this" }],
});

describe("which browser requests are refused (pure)", () => {
  it("cross-site and same-site fetches, and foreign or opaque origins, are refused; Claude Code and the viewer itself are not", () => {
    assert.equal(crossSiteRefusal(facts({}), LOOPBACK), null, "Claude Code sends neither header");
    assert.match(String(crossSiteRefusal(facts({ secFetchSite: "cross-site" }), LOOPBACK)), /another site/);
    assert.match(String(crossSiteRefusal(facts({ secFetchSite: "same-site", origin: "http://localhost:3000" }), LOOPBACK)), /another site/);
    for (const origin of ["http://evil.example", "null", "http://localhost:3000", "http://127.0.0.1:8788", "file://", "http://127.0.0.1.evil.example:8787"]) {
      assert.match(String(crossSiteRefusal(facts({ origin }), LOOPBACK)), /another origin/, origin);
    }
    assert.equal(crossSiteRefusal(facts({ origin: "http://127.0.0.1:8787", secFetchSite: "same-origin" }), LOOPBACK), null, "the viewer's own requests");
    assert.match(
      String(crossSiteRefusal(facts({ origin: "http://evil.example:8787", host: "evil.example:8787" }), LOOPBACK)),
      /another origin/,
      "a rebound name is no own origin",
    );
    assert.equal(crossSiteRefusal(facts({ origin: "http://tap.lan:8787", host: "tap.lan:8787" }), null), null, "beyond loopback, the address it was sent to");
    assert.equal(
      crossSiteRefusal(facts({ method: "GET", path: "/_tap/", secFetchSite: "cross-site", secFetchMode: "navigate" }), LOOPBACK),
      null,
      "a person following a link to the viewer",
    );
    assert.ok(
      crossSiteRefusal(facts({ method: "GET", path: "/v1/models", secFetchSite: "cross-site", secFetchMode: "navigate" }), LOOPBACK) !== null,
      "but not to the API",
    );
    assert.ok(
      crossSiteRefusal(facts({ method: "POST", path: "/_tap/login", secFetchSite: "cross-site", secFetchMode: "navigate" }), LOOPBACK) !== null,
      "and never a POST",
    );
  });
});

describe("a page in the user's browser cannot post through the tap", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  withTap((started) => ({ stub, tap } = started));

  it("a no-cors text/plain POST (Sec-Fetch-Site: cross-site), or one with a foreign Origin: 403, not forwarded, not mirrored", async () => {
    const before = stub.requests.length;
    const headerSets: Record<string, string>[] = [
      { "sec-fetch-site": "cross-site", "sec-fetch-mode": "no-cors", "sec-fetch-dest": "empty" },
      { origin: "http://evil.example" },
      { origin: "null" },
      { origin: "http://localhost:3000", "sec-fetch-site": "same-site" },
    ];
    for (const headers of headerSets) {
      const res = await fetch(`${tap.url}/v1/messages`, {
        method: "POST",
        headers: { "content-type": "text/plain;charset=UTF-8", ...headers },
        body: pageBody,
      });
      assert.equal(res.status, 403, JSON.stringify(headers));
      const body = await res.json();
      assert.equal(body.type, "error");
      assert.equal(body.error.type, "permission_error");
      assert.equal(res.headers.get("access-control-allow-origin"), null);
    }
    await tap.engine!.query("mirror.flush", 2000);
    assert.equal(stub.requests.length, before, "nothing reached the upstream");
    assert.ok(!existsSync(`${tap.root}/planted-by-a-page`), "nothing was mirrored");
    const sessions = await (await fetch(`${tap.url}/_tap/api/sessions`, { headers: { "sec-fetch-site": "cross-site" } })).status;
    assert.equal(sessions, 403, "nor can a page read the viewer's API");
  });

  it("Claude Code's own requests (no Origin, no Sec-Fetch-Site) and the viewer's same-origin ones go on", async () => {
    assert.equal((await new Conversation(tap, "claude-code-session").say("hello")).status, 200);
    await tap.engine!.query("mirror.flush", 2000);
    assert.equal(allRecords(`${tap.root}/claude-code-session`).length, 2);
    const own = await fetch(`${tap.url}/_tap/api/sessions`, { headers: { origin: tap.url, "sec-fetch-site": "same-origin" } });
    assert.equal(own.status, 200);
    const navigated = await fetch(`${tap.url}/_tap/`, {
      headers: { "sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate", "sec-fetch-dest": "document" },
    });
    assert.equal(navigated.status, 200, "a link to the viewer from elsewhere opens it");
  });
});

describe("a tap with a token", () => {
  const TOKEN = "correct-horse-battery-staple-42";
  let tap: TestTap;
  withTap((started) => ({ tap } = started), { env: { SESSIONTAP_TOKEN: TOKEN } });
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${tap.url}${path}`, { headers, redirect: "manual" });

  it("every /_tap/ route needs it; health without it is the bare status", async () => {
    for (const path of ["/_tap/api/sessions", "/_tap/api/search?q=x", "/_tap/api/events", "/_tap/api/sessions/x/export", "/_tap/nothing", "/_tap"]) {
      const res = await get(path);
      assert.equal(res.status, 401, path);
      assert.match(String(res.headers.get("www-authenticate")), /^Bearer/, path);
      await res.body?.cancel();
    }
    for (const wrong of ["Bearer nope-nope-nope-nope-nope", `Basic ${btoa(`x:${TOKEN}`)}`, `Bearer ${TOKEN}x`]) {
      assert.equal((await get("/_tap/api/sessions", { authorization: wrong })).status, 401, wrong);
    }
    const page = await get("/_tap/");
    assert.equal(page.status, 401);
    assert.match(await page.text(), /<form method="get" action="\/_tap\/login">/, "the page asks for the token");
    assert.deepEqual(Object.keys(await (await get("/_tap/health")).json()), ["status"]);
    const full = await (await get("/_tap/health", { authorization: `Bearer ${TOKEN}` })).json();
    assert.ok("mirror" in full && "runtime" in full);
    assert.equal((await get("/_tap/api/sessions", { authorization: `Bearer ${TOKEN}` })).status, 200);
  });

  it("the login link sets an HttpOnly, SameSite=Strict cookie that opens the viewer; a wrong link sets none", async () => {
    const wrong = await get("/_tap/login?token=guess-guess-guess-guess");
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers.get("set-cookie"), null);
    const login = await get(`/_tap/login?token=${encodeURIComponent(TOKEN)}`);
    assert.equal(login.status, 303);
    assert.equal(login.headers.get("location"), "/_tap/");
    const cookie = String(login.headers.get("set-cookie"));
    assert.match(cookie, /; HttpOnly/);
    assert.match(cookie, /; SameSite=Strict/);
    assert.match(cookie, /; Path=\/_tap/);
    assert.ok(!cookie.includes(TOKEN), "the cookie is not the token itself");
    const jar = cookie.split(";")[0];
    assert.equal((await get("/_tap/", { cookie: jar })).status, 200);
    assert.equal((await get("/_tap/api/sessions", { cookie: jar })).status, 200);
    assert.equal((await get("/_tap/api/sessions", { cookie: "sessiontap_access=forged" })).status, 401);
  });

  it("API traffic is forwarded and mirrored without it (the API key authenticates that upstream)", async () => {
    assert.equal((await new Conversation(tap, "with-a-token").say("hello")).status, 200);
    await tap.engine!.query("mirror.flush", 2000);
    assert.equal(allRecords(`${tap.root}/with-a-token`).length, 2);
    assert.ok(!readdirSync(tap.root).some((n) => n.includes(TOKEN)));
  });

  it("doctor reads the tap's details with SESSIONTAP_TOKEN, and says what is missing without it", async () => {
    const run = async (env: Record<string, string>) =>
      JSON.parse(
        (await cli(["doctor", "--json", "--url", tap.url, "--mirror-dir", tap.root], { CLAUDE_CONFIG_DIR: `${tap.root}/../claude`, ...env })).stdout,
      ) as { check: string; status: string; detail: string }[];
    assert.equal((await run({ SESSIONTAP_TOKEN: TOKEN })).find((c) => c.check === "tap")?.status, "ok");
    const without = (await run({})).find((c) => c.check === "tap");
    assert.equal(without?.status, "fail");
    assert.match(String(without?.detail), /shows its details only with its token \(set SESSIONTAP_TOKEN\)/);
  });

  it("a weak token is a usage error that does not echo it", async () => {
    const r = await cli(["serve", "--token", "short"]);
    assert.equal(r.code, 2);
    assert.equal(r.stderr, "sessiontap: token (--token / SESSIONTAP_TOKEN) must be at least 16 characters\n");
    const spaced = await cli(["list"], { SESSIONTAP_TOKEN: "has a space in it, sixteen+" });
    assert.equal(spaced.code, 2);
    assert.doesNotMatch(spaced.stderr, /has a space/);
    const odd = await cli(["serve", "--token", "sixteen-chars-but-with!"]);
    assert.equal(odd.code, 2, "a bearer token holds letters, digits and - . _ ~ + / only");
    assert.match(odd.stderr, /^sessiontap: token \(--token \/ SESSIONTAP_TOKEN\) must be letters, digits/);
  });
});
