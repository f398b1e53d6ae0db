// `sessiontap doctor` tells which way Claude Code reaches the tap (docs/DESIGN.md "Providers", "Proxy mode"):
// the base URL of the API it is set to use — Anthropic's, Vertex AI's or Bedrock's — or the tap's proxy
// with its CA, and fails clearly when that way leads to no tap, or to one that would refuse or not mirror
// what Claude Code sends. Real taps in this process (one with its proxy on), real files, the real command.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import net from "node:net";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { startTestTap, type TestTap, withTap } from "../support/tap.ts";
import { type ProxyTap, startProxyTap } from "../support/proxy-tap.ts";
import { cli, scratchDir } from "../support/recover.ts";

type Check = { check: string; status: string; detail: string };
/** A loopback port nothing listens on, free a moment ago (not port 1: Deno's fetch refuses it before connecting). */
const closedPort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
const BEDROCK = { CLAUDE_CODE_USE_BEDROCK: "1", AWS_REGION: "us-east-1" };
const VERTEX = { CLAUDE_CODE_USE_VERTEX: "1", CLOUD_ML_REGION: "us-east5", ANTHROPIC_VERTEX_PROJECT_ID: "p" };

describe("doctor: the way Claude Code reaches the tap", { timeout: 60_000 }, () => {
  const scratch = scratchDir("sessiontap-doctor-route-");
  let stub: StubUpstream;
  let tap: TestTap;
  let proxied: ProxyTap;
  /** doctor's checks with `env`, against the tap at `url` (the one a user found or named). */
  const doctor = async (env: Record<string, string>, url: string, root: string) => {
    const out = await cli(["doctor", "--json", "--url", url, "--mirror-dir", root, "--claude-dir", `${scratch.dir}/claude`], env, { cwd: scratch.dir });
    const checks = JSON.parse(out.stdout) as Check[];
    return { code: out.code, checks, by: (name: string) => checks.filter((c) => c.check === name) };
  };
  const one = (checks: Check[]) => {
    assert.equal(checks.length, 1, JSON.stringify(checks));
    return checks[0];
  };

  before(async () => {
    mkdirSync(`${scratch.dir}/claude`);
    writeFileSync(`${scratch.dir}/claude/settings.json`, JSON.stringify({ cleanupPeriodDays: 365 }));
  });
  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    proxied = await startProxyTap(stub.url, []);
  });
  after(async () => {
    await proxied?.close();
    scratch.cleanup();
  });

  describe("base-URL mode", () => {
    it("Vertex AI: ANTHROPIC_VERTEX_BASE_URL at the tap is the way, named with the provider; exit 0", async () => {
      const { code, checks, by } = await doctor({ ...VERTEX, ANTHROPIC_VERTEX_BASE_URL: `${tap.url}/v1` }, tap.url, tap.root);
      assert.equal(code, 0, JSON.stringify(checks));
      const base = one(by("ANTHROPIC_VERTEX_BASE_URL"));
      assert.equal(base.status, "ok");
      assert.match(
        base.detail,
        /reaches a tap: Claude Code on Google Vertex AI \(CLAUDE_CODE_USE_VERTEX in the environment\) goes through it \(base-URL mode\)/,
      );
      assert.deepEqual(by("ANTHROPIC_BASE_URL"), [], "the Anthropic API's base URL is not Vertex's way");
    });

    it("a provider's base URL that reaches no tap fails, and one set for a provider Claude Code is not on is a warning", async () => {
      const dead = `http://127.0.0.1:${await closedPort()}`;
      const { code, by } = await doctor(
        { ...VERTEX, ANTHROPIC_VERTEX_BASE_URL: `${dead}/v1`, ANTHROPIC_BEDROCK_BASE_URL: tap.url },
        tap.url,
        tap.root,
      );
      assert.equal(code, 1);
      const base = one(by("ANTHROPIC_VERTEX_BASE_URL"));
      assert.equal(base.status, "fail");
      // Nothing answers there, so Claude Code's requests fail: said, with the bypass for this provider's variable.
      assert.match(
        base.detail,
        new RegExp(`^${dead}/v1 in the environment: nothing answers at ${dead} \\(connection refused\\)\\. Claude Code's requests fail`),
      );
      assert.match(base.detail, /or go around it: unset ANTHROPIC_VERTEX_BASE_URL$/);
      const unused = one(by("ANTHROPIC_BEDROCK_BASE_URL"));
      assert.equal(unused.status, "warn");
      assert.match(unused.detail, /Claude Code is not on AWS Bedrock \(CLAUDE_CODE_USE_BEDROCK=1\): it ignores it/);
    });

    it("a base URL that names the tap's address by a name (localhost): it cannot prove itself there, so doctor sends no token and says to name the address", async () => {
      const byName = tap.url.replace("127.0.0.1", "localhost");
      const { by } = await doctor({ ANTHROPIC_BASE_URL: byName }, byName, tap.root);
      const check = one(by("tap"));
      assert.equal(check.status, "fail");
      assert.match(
        check.detail,
        /could not prove it is this user's tap mirroring to .*\(a tap proves itself for its address: name that, not localhost\); doctor sent it no token/,
      );
      assert.equal(one(by("ANTHROPIC_BASE_URL")).status, "fail");
    });

    it("Bedrock signing with AWS keys: the tap would refuse every request, and doctor says what works instead", async () => {
      const { code, by } = await doctor({ ...BEDROCK, ANTHROPIC_BEDROCK_BASE_URL: tap.url }, tap.url, tap.root);
      assert.equal(code, 1);
      assert.equal(one(by("ANTHROPIC_BEDROCK_BASE_URL")).status, "ok");
      const signing = one(by("Bedrock credentials"));
      assert.equal(signing.status, "fail");
      assert.match(
        signing.detail,
        /signs each request with your AWS keys for the tap's address, which the tap refuses: run the tap in proxy mode instead, .*"AWS Bedrock"/,
      );
      assert.deepEqual(
        (await doctor({ ...BEDROCK, ANTHROPIC_BEDROCK_BASE_URL: tap.url, AWS_BEARER_TOKEN_BEDROCK: "key" }, tap.url, tap.root)).by("Bedrock credentials"),
        [],
      );
      const skipped = await doctor({ ...BEDROCK, ANTHROPIC_BEDROCK_BASE_URL: tap.url, CLAUDE_CODE_SKIP_BEDROCK_AUTH: "1" }, tap.url, tap.root);
      assert.deepEqual(skipped.by("Bedrock credentials"), [], "no credentials, to an upstream that is not AWS (a gateway that signs)");
      assert.equal(skipped.code, 0);
      const toAws = await startTestTap("https://bedrock-runtime.us-east-1.amazonaws.com"); // never reached: doctor reads its health only
      try {
        const unsigned = await doctor({ ...BEDROCK, ANTHROPIC_BEDROCK_BASE_URL: toAws.url, CLAUDE_CODE_SKIP_BEDROCK_AUTH: "1" }, toAws.url, toAws.root);
        assert.equal(unsigned.code, 1);
        assert.match(
          one(unsigned.by("Bedrock credentials")).detail,
          /sends no credentials, and the tap's upstream bedrock-runtime\.us-east-1\.amazonaws\.com is AWS/,
        );
      } finally {
        await toAws.close();
      }
    });

    it("Bedrock with nothing set: Claude Code talks to AWS directly; doctor names proxy mode first", async () => {
      const { code, by } = await doctor(BEDROCK, tap.url, tap.root);
      assert.equal(code, 1);
      const base = one(by("ANTHROPIC_BEDROCK_BASE_URL"));
      assert.equal(base.status, "fail");
      assert.match(base.detail, /^not set, nor is HTTPS_PROXY, so Claude Code on AWS Bedrock .* talks to bedrock-runtime\.us-east-1\.amazonaws\.com directly/);
      assert.match(base.detail, /use the tap's proxy mode: sessiontap serve --proxy-port N prints/);
    });
  });

  describe("proxy mode", () => {
    const viaProxy = (extra: Record<string, string> = {}) => ({
      ...BEDROCK,
      HTTPS_PROXY: `http://127.0.0.1:${proxied.proxyPort}`,
      NODE_EXTRA_CA_CERTS: proxied.proxy!.ca.certPath,
      ...extra,
    });

    it("HTTPS_PROXY at the tap's proxy and NODE_EXTRA_CA_CERTS at its CA: the way, named with the host it mirrors; exit 0", async () => {
      const { code, checks, by } = await doctor(viaProxy(), proxied.url, proxied.root);
      assert.equal(code, 0, JSON.stringify(checks));
      const proxy = one(by("HTTPS_PROXY"));
      assert.equal(proxy.status, "ok");
      assert.match(
        proxy.detail,
        /is the tap's proxy: Claude Code on AWS Bedrock .* goes through it to bedrock-runtime\.us-east-1\.amazonaws\.com, which it mirrors \(proxy mode\)/,
      );
      assert.match(one(by("NODE_EXTRA_CA_CERTS")).detail, /is the tap's CA$/);
      assert.deepEqual(by("ANTHROPIC_BEDROCK_BASE_URL"), []);
      assert.deepEqual(by("Bedrock credentials"), [], "the signature is valid at AWS in proxy mode");
    });

    it("NODE_EXTRA_CA_CERTS unset, or naming a file without the tap's CA, fails with the line to export; a bundle holding it is fine", async () => {
      const ca = proxied.proxy!.ca.certPath;
      const unset = one((await doctor(viaProxy({ NODE_EXTRA_CA_CERTS: "" }), proxied.url, proxied.root)).by("NODE_EXTRA_CA_CERTS"));
      assert.deepEqual([unset.status, unset.detail], ["fail", `not set, so Claude Code refuses the proxy's certificates: export NODE_EXTRA_CA_CERTS=${ca}`]);
      writeFileSync(`${scratch.dir}/other.pem`, "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
      const other = one((await doctor(viaProxy({ NODE_EXTRA_CA_CERTS: `${scratch.dir}/other.pem` }), proxied.url, proxied.root)).by("NODE_EXTRA_CA_CERTS"));
      assert.equal(other.status, "fail");
      assert.match(other.detail, /does not hold the tap's CA, so Claude Code refuses its certificates: export NODE_EXTRA_CA_CERTS=/);
      writeFileSync(`${scratch.dir}/bundle.pem`, `-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n${proxied.caPem}`);
      const bundle = one((await doctor(viaProxy({ NODE_EXTRA_CA_CERTS: `${scratch.dir}/bundle.pem` }), proxied.url, proxied.root)).by("NODE_EXTRA_CA_CERTS"));
      assert.equal(bundle.status, "ok");
      assert.match(bundle.detail, /holds the tap's CA$/);
    });

    it("an HTTPS_PROXY that is not the tap's proxy fails: nothing there (Claude Code's requests then fail), or a tap that runs none", async () => {
      const nothing = await doctor(viaProxy({ HTTPS_PROXY: "http://127.0.0.1:1" }), proxied.url, proxied.root);
      assert.equal(nothing.code, 1);
      const dead = one(nothing.by("HTTPS_PROXY")).detail;
      assert.match(dead, /^http:\/\/127\.0\.0\.1:1 in the environment: nothing answers at 127\.0\.0\.1:1 .*Claude Code's requests fail/);
      assert.match(dead, /Start the tap \(sessiontap serve --proxy-port 1\), or go around it: unset HTTPS_PROXY$/);
      const none = one((await doctor(viaProxy({ HTTPS_PROXY: "http://127.0.0.1:8788" }), tap.url, tap.root)).by("HTTPS_PROXY"));
      assert.equal(none.status, "fail");
      assert.match(none.detail, /but the tap at http:\/\/127\.0\.0\.1:\d+ runs no proxy: start it with --proxy-port 8788 \(SESSIONTAP_PROXY_PORT\)$/);
      const elsewhere = one((await doctor(viaProxy(), tap.url, tap.root)).by("HTTPS_PROXY"));
      assert.equal(elsewhere.status, "fail", "the tap doctor looked at runs no proxy, though another tap's answers there");
      const unknownTap = one((await doctor(viaProxy(), "http://127.0.0.1:1", proxied.root)).by("HTTPS_PROXY"));
      assert.equal(unknownTap.status, "warn", "a sessiontap proxy answers, but whose tap doctor could not ask");
      assert.match(unknownTap.detail, /is a sessiontap proxy, but not that of the tap at http:\/\/127\.0\.0\.1:1: name its tap: sessiontap doctor --url URL$/);
    });

    it("a region the CA does not cover, or a NO_PROXY that sends the host around the proxy, fails: nothing would be mirrored", async () => {
      const uncovered = one((await doctor(viaProxy({ AWS_REGION: "xx-nowhere-9" }), proxied.url, proxied.root)).by("HTTPS_PROXY"));
      assert.equal(uncovered.status, "fail");
      assert.match(
        uncovered.detail,
        /bedrock-runtime\.xx-nowhere-9\.amazonaws\.com, where Claude Code on AWS Bedrock .* goes, is not a host its CA covers: a blind tunnel/,
      );
      const around = await doctor(viaProxy({ NO_PROXY: "localhost,.amazonaws.com" }), proxied.url, proxied.root);
      assert.equal(around.code, 1);
      assert.match(one(around.by("NO_PROXY")).detail, /sends bedrock-runtime\.us-east-1\.amazonaws\.com around the proxy/);
    });

    it("Vertex AI and the Anthropic API through the proxy too, each named by its own host", async () => {
      const vertex = one((await doctor({ ...viaProxy(), CLAUDE_CODE_USE_BEDROCK: "", ...VERTEX }, proxied.url, proxied.root)).by("HTTPS_PROXY"));
      assert.match(vertex.detail, /Claude Code on Google Vertex AI .* goes through it to us-east5-aiplatform\.googleapis\.com, which it mirrors/);
      const anthropic = one((await doctor({ ...viaProxy(), CLAUDE_CODE_USE_BEDROCK: "" }, proxied.url, proxied.root)).by("HTTPS_PROXY"));
      assert.equal(anthropic.status, "ok");
      assert.match(anthropic.detail, /Claude Code on the Anthropic API goes through it to api\.anthropic\.com/);
    });

    it("a host SESSIONTAP_PROXY_UPSTREAM sends elsewhere is named with where it really goes", async () => {
      await using routed = await startProxyTap(stub.url, ["bedrock-runtime.us-east-1.amazonaws.com"]);
      const env = { ...viaProxy(), HTTPS_PROXY: `http://127.0.0.1:${routed.proxyPort}`, NODE_EXTRA_CA_CERTS: routed.proxy!.ca.certPath };
      const { code, checks, by } = await doctor(env, routed.url, routed.root);
      assert.equal(code, 0, JSON.stringify(checks));
      const proxy = one(by("HTTPS_PROXY"));
      assert.equal(proxy.status, "ok");
      assert.equal(
        proxy.detail.replace(/^.* is the tap's proxy: /, ""),
        `Claude Code on AWS Bedrock (CLAUDE_CODE_USE_BEDROCK in the environment) goes through it to bedrock-runtime.us-east-1.amazonaws.com, which it mirrors ` +
          `and sends to ${stub.url} (SESSIONTAP_PROXY_UPSTREAM), not to bedrock-runtime.us-east-1.amazonaws.com itself (proxy mode)`,
      );
    });
  });
});
