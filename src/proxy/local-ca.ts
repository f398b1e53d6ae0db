// The local CA and the leaves it signs (docs/DESIGN.md "The local CA"): ECDSA P-256, constrained to the proxy's hosts.
import "reflect-metadata";
import type * as X509 from "@peculiar/x509";
import { AsnConvert } from "@peculiar/asn1-schema";
import { GeneralName, GeneralSubtree, GeneralSubtrees, id_ce_nameConstraints, NameConstraints } from "@peculiar/asn1-x509";
import { dirname } from "node:path/posix";
import { createSecureContext, type SecureContext } from "node:tls";
import { ProxyStartError } from "../config/proxy-settings.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { publishNew, replaceFile } from "../storage/publish.ts";
import { currentUid, ensurePrivateDir, untrusted } from "../storage/trusted-path.ts";

// Bun ran reflect-metadata and tsyringe (CommonJS) in an order of its own: a dynamic import starts after the polyfill.
export const x509: typeof X509 = await import("@peculiar/x509");

const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
const [DAY_MS, CA_DAYS, CA_RENEW_DAYS, LEAF_DAYS] = [86_400_000, 3650, 30, 7];
const ALL_ADDRESSES = ["0.0.0.0/0", "::/0"];

type LocalCa = Awaited<ReturnType<typeof readCa>>;

// Critical, as RFC 5280 §4.2.1.10 asks; every address is excluded, since names alone leave IP addresses unconstrained.
function nameConstraints(names: readonly string[]): X509.Extension {
  const subtrees = (bases: GeneralName[]) => new GeneralSubtrees(bases.map((base) => new GeneralSubtree({ base })));
  const permittedSubtrees = subtrees(names.map((dNSName) => new GeneralName({ dNSName })));
  const excludedSubtrees = subtrees(ALL_ADDRESSES.map((iPAddress) => new GeneralName({ iPAddress })));
  return new x509.Extension(id_ce_nameConstraints, true, AsnConvert.serialize(new NameConstraints({ permittedSubtrees, excludedSubtrees })));
}

export function constraintsOf(cert: X509.X509Certificate): { names: string[]; excluded: string[] } | null {
  const ext = cert.getExtension(id_ce_nameConstraints);
  if (ext === null) return null;
  const parsed = AsnConvert.parse(ext.value, NameConstraints);
  const names = [...(parsed.permittedSubtrees ?? [])].flatMap((s) => (s.base.dNSName === undefined ? [] : [s.base.dNSName.toLowerCase()]));
  return { names, excluded: [...(parsed.excludedSubtrees ?? [])].flatMap((s) => s.base.iPAddress ?? []) };
}

async function certify(subject: string, issuer: LocalCa | null, days: number, now: number, extensions: X509.Extension[]) {
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
  const keyId = await (issuer ? x509.AuthorityKeyIdentifierExtension.create(issuer.cert, false) : x509.SubjectKeyIdentifierExtension.create(keys.publicKey));
  const cert = await x509.X509CertificateGenerator.create({
    subject,
    issuer: issuer?.cert.subject ?? subject,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + days * DAY_MS),
    publicKey: keys.publicKey,
    signingKey: issuer?.key ?? keys.privateKey,
    signingAlgorithm: ALG,
    extensions: [...extensions, keyId],
  });
  const keyPem = x509.PemConverter.encode(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY");
  return { certPem: `${cert.toString("pem")}\n`, keyPem, notAfter: cert.notAfter.getTime() };
}

export async function readCa(text: string) {
  const blocks = [...text.matchAll(/-----BEGIN ([A-Z ]+)-----[\s\S]+?-----END \1-----/g)];
  const keyBlock = blocks.find((b) => b[1] === "PRIVATE KEY")?.[0];
  const certBlock = blocks.find((b) => b[1] === "CERTIFICATE")?.[0];
  if (keyBlock === undefined || certBlock === undefined) throw new Error("it holds no private key and certificate");
  const cert = new x509.X509Certificate(certBlock);
  const key = await crypto.subtle.importKey("pkcs8", x509.PemConverter.decodeFirst(keyBlock), ALG, false, ["sign"]);
  const probe = new TextEncoder().encode("sessiontap");
  const signature = await crypto.subtle.sign(ALG, key, probe);
  if (!(await crypto.subtle.verify(ALG, await cert.publicKey.export(ALG, ["verify"]), signature, probe))) {
    throw new Error("its private key is not its certificate's");
  }
  return { cert, key, certPem: `${cert.toString("pem")}\n` };
}

function caProblem(ca: LocalCa, names: readonly string[], now: number): string | null {
  if (ca.cert.notAfter.getTime() - now < CA_RENEW_DAYS * DAY_MS) return `it expires on ${ca.cert.notAfter.toISOString().slice(0, 10)}`;
  const constraints = constraintsOf(ca.cert);
  if (constraints === null) return "it carries no name constraints";
  const list = (hosts: string[]) => `${hosts.slice(0, 3).join(", ")}${hosts.length > 3 ? ` and ${hosts.length - 3} more` : ""}`;
  const missing = names.filter((n) => !constraints.names.includes(n));
  if (missing.length > 0) return `it does not cover ${list(missing)}`;
  const extra = constraints.names.filter((n) => !names.includes(n));
  if (extra.length > 0) return `it covers ${list(extra)}, no longer a host the proxy decrypts`;
  return ALL_ADDRESSES.every((a) => constraints.excluded.includes(a)) ? null : "it does not exclude IP addresses";
}

export function issueLeaf(ca: LocalCa, host: string, now: number) {
  return certify(`CN=${host}`, ca, LEAF_DAYS, now, [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    new x509.SubjectAlternativeNameExtension([{ type: "dns", value: host }]),
  ]);
}

/** Made when a client first asks and a day before its leaf ends; a leaf that failed is asked again. */
export function leafContexts(ca: LocalCa, clock: () => number): (host: string) => Promise<SecureContext> {
  const made = new Map<string, Promise<{ context: SecureContext; renewAt: number }>>();
  return async (host) => {
    const known = await made.get(host)?.catch(() => undefined);
    if (known !== undefined && clock() < known.renewAt) return known.context;
    const leaf = issueLeaf(ca, host, clock()).then(({ keyPem, certPem, notAfter }) => ({
      context: createSecureContext({ key: keyPem, cert: certPem + ca.certPem, minVersion: "TLSv1.2" }),
      renewAt: notAfter - DAY_MS,
    }));
    made.set(host, leaf);
    return (await leaf).context;
  };
}

// A key others could read is a key others could sign with.
async function readKeyFile(fs: FsAdapter, path: string): Promise<LocalCa | null> {
  const info = await fs.lstat(path);
  if (info === null) return null;
  const why = untrusted(info, "file") ??
    (fs.posixModes !== false && currentUid() >= 0 && (info.mode & 0o077) !== 0 ? `is open to other users (mode ${(info.mode & 0o777).toString(8)})` : null);
  if (why !== null) throw new ProxyStartError(`the proxy's CA key ${path} ${why}; fix it (chmod 600) or remove it, and a new CA is made`);
  try {
    return await readCa(await fs.readText(path));
  } catch (error) {
    throw new ProxyStartError(`the proxy's CA key ${path} cannot be used (${(error as Error).message}); remove it, and a new CA is made`);
  }
}

export async function loadOrMakeCa(fs: FsAdapter, dir: string, names: readonly string[], now: number) {
  await fs.mkdir(dirname(dir), 0o700);
  try {
    await ensurePrivateDir(fs, dir);
  } catch (error) {
    throw new ProxyStartError(`the proxy's CA directory ${(error as Error).message} (chmod 700 it, or set SESSIONTAP_CA_DIR)`);
  }
  const keyPath = `${dir}/ca-key.pem`;
  const certPath = `${dir}/ca.pem`;
  let ca = await readKeyFile(fs, keyPath);
  let made: string | null = null;
  const problem = ca === null ? null : caProblem(ca, names, now);
  if (ca === null || problem !== null) {
    const fresh = await certify(`CN=sessiontap local proxy CA ${new Date(now).toISOString().slice(0, 10)}`, null, CA_DAYS, now, [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      nameConstraints(names),
    ]);
    // One file holds the key and its certificate, so the pair is written and read as one.
    const pair = `${fresh.keyPem}\n${fresh.certPem}`;
    made = ca === null ? "made" : problem;
    if (ca !== null) await replaceFile(fs, keyPath, pair);
    // Two taps starting at once: the first to publish wins, and the other reads the winner's.
    else if ((await publishNew(fs, keyPath, pair)).kind !== "created") made = null;
    ca = await readKeyFile(fs, keyPath);
    if (ca === null) throw new ProxyStartError(`the proxy's CA key ${keyPath} vanished while it was being made`);
  }
  // A ca.pem that cannot be read fails the start: startProxy says which directory, and why.
  const current = (await fs.lstat(certPath))?.isFile ? await fs.readText(certPath) : "";
  if (current !== ca.certPem) await replaceFile(fs, certPath, ca.certPem);
  return { ca, certPath, keyPath, made };
}
