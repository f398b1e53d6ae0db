/**
 * The local CA and the leaf certificates it signs (docs/DESIGN.md "The local CA"), with @peculiar/x509 over
 * WebCrypto: ECDSA P-256 keys, a CA whose name constraints permit only the proxy's known hosts (a stolen
 * key signs nothing a verifier accepts for any other name), and a short-lived leaf per host, kept in memory.
 * No I/O: PEM text in and out.
 */
import { type X509, x509 } from "./x509.ts";
import { AsnConvert } from "@peculiar/asn1-schema";
import { GeneralName, GeneralSubtree, GeneralSubtrees, id_ce_nameConstraints, NameConstraints } from "@peculiar/asn1-x509";
import { withinName } from "./known-hosts.ts";

/** The one key and signature algorithm used throughout. */
const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
const DAY_MS = 86_400_000;
/** How long a CA is made for, and how close to its end a new one is made instead. */
export const CA_DAYS = 3650;
export const CA_RENEW_DAYS = 30;
/** How long a leaf is made for; it is made anew a day before its end. */
export const LEAF_DAYS = 7;

/** A CA ready to sign. */
export interface LocalCa {
  cert: X509.X509Certificate;
  key: CryptoKey;
  /** The certificate alone (what NODE_EXTRA_CA_CERTS names). */
  certPem: string;
}

/** A certificate and its private key, PEM. */
export interface KeyPair {
  certPem: string;
  keyPem: string;
}

/** A random positive serial number, hex (RFC 5280 §4.1.2.2: at most 20 octets). */
function serial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] &= 0x7f;
  bytes[0] |= 0x01;
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The name constraints extension (critical, as RFC 5280 §4.2.1.10 asks) permitting `names` only. */
export function nameConstraints(names: readonly string[]): X509.Extension {
  const permitted = new GeneralSubtrees(names.map((n) => new GeneralSubtree({ base: new GeneralName({ dNSName: n }) })));
  return new x509.Extension(id_ce_nameConstraints, true, AsnConvert.serialize(new NameConstraints({ permittedSubtrees: permitted })));
}

/** The dNSNames a CA's name constraints permit, or null when it has none (it would sign for anything). */
export function permittedNames(cert: X509.X509Certificate): string[] | null {
  const ext = cert.getExtension(id_ce_nameConstraints);
  if (ext === null) return null;
  const parsed = AsnConvert.parse(ext.value, NameConstraints);
  return [...(parsed.permittedSubtrees ?? [])].flatMap((s) => (s.base.dNSName === undefined ? [] : [s.base.dNSName.toLowerCase()]));
}

/** PEM of a private key (PKCS #8, as node:tls reads it). */
async function keyPem(key: CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await crypto.subtle.exportKey("pkcs8", key), "PRIVATE KEY");
}

/**
 * Makes a CA constrained to `names`: the private key and the certificate, in one PEM text (the key file),
 * so the pair is written and read as one.
 */
export async function createCa(names: readonly string[], now: number): Promise<string> {
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=sessiontap local proxy CA ${new Date(now).toISOString().slice(0, 10)}`,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(now + CA_DAYS * DAY_MS),
    keys,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      nameConstraints(names),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return `${await keyPem(keys.privateKey)}${cert.toString("pem")}\n`;
}

/** Reads a key file made by createCa; throws when it holds no such pair, or the key is not the certificate's. */
export async function readCa(text: string): Promise<LocalCa> {
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

/** Why `ca` should not be used for `names` at `now` (a phrase), or null when it covers them. */
export function caProblem(ca: LocalCa, names: readonly string[], now: number): string | null {
  if (ca.cert.notAfter.getTime() - now < CA_RENEW_DAYS * DAY_MS) return `it expires on ${ca.cert.notAfter.toISOString().slice(0, 10)}`;
  const permitted = permittedNames(ca.cert);
  if (permitted === null) return "it carries no name constraints";
  const missing = names.filter((n) => !permitted.some((p) => withinName(n, p)));
  if (missing.length > 0) return `it does not cover ${missing.slice(0, 3).join(", ")}${missing.length > 3 ? ` and ${missing.length - 3} more` : ""}`;
  return null;
}

/** A server certificate for `host` signed by `ca` (valid from a day back for clocks that lag). */
export async function issueLeaf(ca: LocalCa, host: string, now: number): Promise<KeyPair & { notAfter: number }> {
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
  const notAfter = now + LEAF_DAYS * DAY_MS;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${host}`,
    issuer: ca.cert.subject,
    notBefore: new Date(now - DAY_MS),
    notAfter: new Date(notAfter),
    publicKey: keys.publicKey,
    signingKey: ca.key,
    signingAlgorithm: ALG,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: "dns", value: host }]),
      await x509.AuthorityKeyIdentifierExtension.create(ca.cert, false),
    ],
  });
  return { certPem: `${cert.toString("pem")}\n`, keyPem: await keyPem(keys.privateKey), notAfter };
}
