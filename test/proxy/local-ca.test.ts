// The proxy's local CA (docs/DESIGN.md "The local CA"): made on first use in a directory of the user's own
// (0700) with its key 0600, used again by the next start, made anew when the hosts it must cover change,
// and constrained by X.509 name constraints to the proxy's known hosts, so that its key, stolen, signs
// nothing a client accepts for any other name: a leaf made with the key for another host fails
// verification by the runtime's own TLS client, and the very same leaf passes under a CA that differs only
// by having no constraints. A key or directory others can read stops the start with one line.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { connect, createServer } from "node:tls";
import { tmpdir } from "node:os";
import { x509 } from "../../src/proxy/local-ca.ts"; // loaded after its polyfill, however the files load
import { constraintsOf, issueLeaf, readCa } from "../../src/proxy/local-ca.ts";
import { AsnConvert } from "@peculiar/asn1-schema";
import { GeneralName, GeneralSubtree, GeneralSubtrees, id_ce_nameConstraints, NameConstraints } from "@peculiar/asn1-x509";
import { hostTable } from "../../src/config/proxy-settings.ts";
import { cli } from "../support/recover.ts";
import { startTestTap, type TestTap } from "../support/tap.ts";

/** Does a client trusting only `caPem` accept `leaf` for `host`? "ok", or the client's error code. */
async function verifies(caPem: string, leaf: { certPem: string; keyPem: string }, host: string): Promise<string> {
  const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (s) => s.end());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const port = (server.address() as { port: number }).port;
  try {
    return await new Promise<string>((resolve) => {
      const c = connect({ host: "127.0.0.1", port, ...(isIP(host) ? {} : { servername: host }), ca: caPem }, () => {
        resolve(c.authorized ? "ok" : "unauthorized");
        c.destroy();
      });
      c.on("error", (e: Error) => resolve(String((e as { code?: string }).code ?? e.message)));
    });
  } finally {
    server.close();
  }
}

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

/** OpenSSL's own word on `args` (its exit status and what it printed). */
function openssl(...args: string[]): { status: number | null; out: string } {
  const run = spawnSync("openssl", args, { encoding: "utf8" });
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
}

describe("the proxy's local CA", { timeout: 60_000 }, () => {
  let dir: string;
  let caDir: string;
  let tap: TestTap;
  const env = () => ({ SESSIONTAP_PROXY_PORT: "0", SESSIONTAP_CA_DIR: caDir });

  before(async () => {
    dir = mkdtempSync(`${tmpdir()}/sessiontap-ca-`);
    caDir = `${dir}/config/sessiontap`;
    tap = await startTestTap("http://127.0.0.1:9", env());
  });

  after(async () => {
    await tap?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("is made on first use: its directory 0700, its key 0600, its certificate beside it", () => {
    assert.equal(tap.proxy!.ca.made, "made");
    assert.equal(tap.proxy!.ca.certPath, `${caDir}/ca.pem`);
    assert.equal(modeOf(caDir), "700");
    assert.equal(modeOf(`${caDir}/ca-key.pem`), "600");
    assert.equal(modeOf(`${caDir}/ca.pem`), "600");
    const key = readFileSync(`${caDir}/ca-key.pem`, "utf8");
    const cert = readFileSync(`${caDir}/ca.pem`, "utf8");
    assert.match(key, /^-----BEGIN PRIVATE KEY-----/);
    assert.ok(key.includes(cert.trim()), "the key file holds the certificate too");
    assert.ok(!cert.includes("PRIVATE KEY"), "what NODE_EXTRA_CA_CERTS names holds no key");
  });

  it("is constrained to the known hosts, names only, no whole provider domain", () => {
    const cert = new x509.X509Certificate(readFileSync(`${caDir}/ca.pem`, "utf8"));
    const names = constraintsOf(cert)?.names;
    assert.deepEqual(names, hostTable().names());
    for (const host of ["api.anthropic.com", "us-east5-aiplatform.googleapis.com", "aiplatform.googleapis.com", "bedrock-runtime.us-east-1.amazonaws.com"]) {
      assert.ok(names!.includes(host), host);
    }
    for (const broad of ["anthropic.com", "googleapis.com", "amazonaws.com"]) assert.ok(!names!.includes(broad), broad);
    assert.equal(cert.getExtension("2.5.29.30")?.critical, true, "the constraints are critical");
  });

  it("a stolen key signs nothing another host's clients accept; the same leaf passes under a CA without the constraints", async () => {
    const caPem = readFileSync(`${caDir}/ca.pem`, "utf8");
    const ca = await readCa(readFileSync(`${caDir}/ca-key.pem`, "utf8"));
    // The same subject, key and key identifier, without name constraints: a leaf the key signed chains to either.
    const unconstrained = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: "7f01",
      name: ca.cert.subject,
      keys: { privateKey: ca.key, publicKey: await ca.cert.publicKey.export() },
      signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
      notBefore: ca.cert.notBefore,
      notAfter: ca.cert.notAfter,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(await ca.cert.publicKey.export()),
      ],
    });
    const good = await issueLeaf(ca, "api.anthropic.com", Date.now());
    assert.equal(await verifies(caPem, good, "api.anthropic.com"), "ok", "a leaf for a known host is accepted");
    for (const host of ["example.com", "oauth2.googleapis.com", "s3.amazonaws.com", "evil-api.anthropic.com", "api.anthropic.com.evil.example"]) {
      const forged = await issueLeaf(ca, host, Date.now());
      assert.notEqual(await verifies(caPem, forged, host), "ok", `a leaf for ${host} under the constrained CA`);
      assert.equal(await verifies(unconstrained.toString("pem"), forged, host), "ok", `the same leaf for ${host} without the constraints`);
    }
  });

  it("the key file is two PEM blocks OpenSSL reads: the key, then the certificate", () => {
    const key = `${caDir}/ca-key.pem`;
    assert.equal(openssl("pkey", "-in", key, "-noout").status, 0);
    const cert = openssl("x509", "-in", key, "-noout", "-subject");
    assert.equal(cert.status, 0, cert.out);
    assert.match(cert.out, /sessiontap local proxy CA/);
    assert.deepEqual(readFileSync(key, "utf8").split("\n").filter((l) => l.includes("-----")), [
      "-----BEGIN PRIVATE KEY-----",
      "-----END PRIVATE KEY-----",
      "-----BEGIN CERTIFICATE-----",
      "-----END CERTIFICATE-----",
    ]);
  });

  it("its key signs for no IP address: a leaf for IP:127.0.0.1 fails openssl verify and the runtime's TLS client", async () => {
    const ca = await readCa(readFileSync(`${caDir}/ca-key.pem`, "utf8"));
    const alg = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
    const keys = await crypto.subtle.generateKey(alg, true, ["sign", "verify"]) as CryptoKeyPair;
    const now = Date.now();
    const leaf = await x509.X509CertificateGenerator.create({
      subject: "CN=sessiontap-test-leaf",
      issuer: ca.cert.subject,
      notBefore: new Date(now - 86_400_000),
      notAfter: new Date(now + 86_400_000),
      publicKey: keys.publicKey,
      signingKey: ca.key,
      signingAlgorithm: alg,
      extensions: [
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: "ip", value: "127.0.0.1" }, { type: "ip", value: "::1" }]),
        await x509.AuthorityKeyIdentifierExtension.create(ca.cert, false),
      ],
    });
    const pair = {
      certPem: `${leaf.toString("pem")}\n`,
      keyPem: x509.PemConverter.encode(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY"),
    };
    writeFileSync(`${dir}/ip-leaf.pem`, pair.certPem);
    const verdict = openssl("verify", "-CAfile", `${caDir}/ca.pem`, `${dir}/ip-leaf.pem`);
    assert.notEqual(verdict.status, 0, verdict.out);
    assert.match(verdict.out, /excluded subtree violation/);
    assert.notEqual(await verifies(readFileSync(`${caDir}/ca.pem`, "utf8"), pair, "127.0.0.1"), "ok");
  });

  it("the next start uses the same CA", async () => {
    const cert = readFileSync(`${caDir}/ca.pem`, "utf8");
    await using again = await startTestTap("http://127.0.0.1:9", env());
    assert.equal(again.proxy!.ca.made, null);
    assert.equal(readFileSync(`${caDir}/ca.pem`, "utf8"), cert);
  });

  it("a host added by a setting makes a new CA that covers it, and says why", async () => {
    const before = readFileSync(`${caDir}/ca.pem`, "utf8");
    const home = `${dir}/home`;
    mkdirSync(home);
    const run = await cli(["serve", "--port", "0", "--no-mirror"], { ...env(), SESSIONTAP_PROXY_HOSTS: "gateway.example.com" }, {
      home,
      stopSignal: Promise.resolve("SIGTERM"),
    });
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stderr,
      /^sessiontap: made a new proxy CA in .* \(the old one: it does not cover gateway\.example\.com\); clients started with the old one must be restarted to trust it$/m,
    );
    const after = readFileSync(`${caDir}/ca.pem`, "utf8");
    assert.notEqual(after, before);
    assert.ok(constraintsOf(new x509.X509Certificate(after))!.names.includes("gateway.example.com"));
    assert.match(run.stdout, new RegExp(`^  export NODE_EXTRA_CA_CERTS=${caDir}/ca\\.pem$`, "m"));
    assert.match(run.stdout, /^ {2}export HTTPS_PROXY=http:\/\/127\.0\.0\.1:\d+$/m);
    assert.match(
      run.stdout,
      /^ {2}proxy {6}\S+ {2}\(CONNECT: decrypts api\.anthropic\.com, Vertex AI and Bedrock hosts, and gateway\.example\.com; sends each to itself; tunnels other hosts unread\)$/m,
    );
    assert.equal(modeOf(`${caDir}/ca-key.pem`), "600");
  });

  it("a host no longer set makes a new CA without it, and so does one that does not exclude IP addresses", async () => {
    const run = await cli(["serve", "--port", "0", "--no-mirror"], env(), { stopSignal: Promise.resolve("SIGTERM") });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /\(the old one: it covers gateway\.example\.com, no longer a host the proxy decrypts\)/);
    assert.deepEqual(constraintsOf(new x509.X509Certificate(readFileSync(`${caDir}/ca.pem`, "utf8"))), {
      names: hostTable().names(),
      excluded: ["0.0.0.0/0", "::/0"],
    });
    // A CA made before addresses were excluded: the same names, permitted only.
    const old = await readCa(readFileSync(`${caDir}/ca-key.pem`, "utf8"));
    const permitted = new GeneralSubtrees(hostTable().names().map((n) => new GeneralSubtree({ base: new GeneralName({ dNSName: n }) })));
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      name: old.cert.subject,
      keys: { privateKey: old.key, publicKey: await old.cert.publicKey.export() },
      signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
      notBefore: old.cert.notBefore,
      notAfter: old.cert.notAfter,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.Extension(id_ce_nameConstraints, true, AsnConvert.serialize(new NameConstraints({ permittedSubtrees: permitted }))),
      ],
    });
    const keyText = readFileSync(`${caDir}/ca-key.pem`, "utf8");
    writeFileSync(`${caDir}/ca-key.pem`, keyText.slice(0, keyText.indexOf("-----BEGIN CERTIFICATE")) + cert.toString("pem") + "\n", { mode: 0o600 });
    const again = await cli(["serve", "--port", "0", "--no-mirror"], env(), { stopSignal: Promise.resolve("SIGTERM") });
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /\(the old one: it does not exclude IP addresses\)/);
  });

  it("a key file others can read, or a directory open to them, stops the start with one line saying what to do", async () => {
    chmodSync(`${caDir}/ca-key.pem`, 0o644);
    let run = await cli(["serve", "--port", "0", "--no-mirror"], env(), { stopSignal: Promise.resolve("SIGTERM") });
    assert.equal(run.code, 2);
    assert.equal(
      run.stderr,
      `sessiontap: cannot start: the proxy's CA key ${caDir}/ca-key.pem is open to other users (mode 644); fix it (chmod 600) or remove it, and a new CA is made\n`,
    );
    chmodSync(`${caDir}/ca-key.pem`, 0o600);
    chmodSync(caDir, 0o755);
    run = await cli(["serve", "--port", "0", "--no-mirror"], env(), { stopSignal: Promise.resolve("SIGTERM") });
    assert.equal(run.code, 2);
    assert.equal(
      run.stderr,
      `sessiontap: cannot start: the proxy's CA directory ${caDir} is open to other users (mode 755); not used (chmod 700 it, or set SESSIONTAP_CA_DIR)\n`,
    );
    chmodSync(caDir, 0o700);
    writeFileSync(`${caDir}/ca-key.pem`, "not a key\n", { mode: 0o600 });
    run = await cli(["serve", "--port", "0", "--no-mirror"], env(), { stopSignal: Promise.resolve("SIGTERM") });
    assert.equal(run.code, 2);
    assert.match(
      run.stderr,
      /^sessiontap: cannot start: the proxy's CA key .* cannot be used \(it holds no private key and certificate\); remove it, and a new CA is made\n$/,
    );
  });

  it("a proxy upstream for a host the proxy does not terminate is refused at start", async () => {
    const run = await cli(["serve", "--port", "0", "--no-mirror"], { ...env(), SESSIONTAP_PROXY_UPSTREAM: "example.com=http://127.0.0.1:9" }, {
      stopSignal: Promise.resolve("SIGTERM"),
    });
    assert.equal(run.code, 2);
    assert.equal(
      run.stderr,
      "sessiontap: cannot start: SESSIONTAP_PROXY_UPSTREAM names example.com, a host the proxy does not terminate (add it to SESSIONTAP_PROXY_HOSTS)\n",
    );
  });
});
