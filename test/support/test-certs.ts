// Certificates of a test's own (not the tap's): a CA and a server certificate for 127.0.0.1 and localhost,
// for the TLS servers a test runs itself (a stub upstream over TLS, the far end of a blind tunnel).
import { x509 } from "../../src/proxy/local-ca.ts"; // loaded after its polyfill, however the files load

const ALG = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
const DAY = 86_400_000;

/** A CA's certificate and a server's certificate and key, PEM. */
export interface TestCerts {
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** Makes a fresh CA and a server certificate it signed for 127.0.0.1 and localhost. */
export async function makeServerCerts(): Promise<TestCerts> {
  const caKeys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: "01",
    name: "CN=sessiontap test CA",
    keys: caKeys,
    signingAlgorithm: ALG,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + DAY),
    extensions: [new x509.BasicConstraintsExtension(true, undefined, true), new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true)],
  });
  const keys = await crypto.subtle.generateKey(ALG, true, ["sign", "verify"]) as CryptoKeyPair;
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: "02",
    subject: "CN=localhost",
    issuer: ca.subject,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: ALG,
    notBefore: new Date(Date.now() - DAY),
    notAfter: new Date(Date.now() + DAY),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([{ type: "ip", value: "127.0.0.1" }, { type: "dns", value: "localhost" }]),
    ],
  });
  const keyPem = x509.PemConverter.encode(await crypto.subtle.exportKey("pkcs8", keys.privateKey), "PRIVATE KEY");
  return { caPem: ca.toString("pem"), certPem: cert.toString("pem"), keyPem };
}
