/**
 * One TLS context per terminated host, made the first time a client asks for the host and kept in memory
 * only (its key is never written anywhere), made anew a day before its certificate ends.
 */
import { createSecureContext, type SecureContext } from "node:tls";
import { issueLeaf, type LocalCa } from "./certificates.ts";

const DAY_MS = 86_400_000;

/** The hosts' contexts. */
export class LeafCache {
  private readonly made = new Map<string, { context: Promise<SecureContext>; renewAt: number }>();

  constructor(private readonly ca: LocalCa, private readonly clock: () => number) {}

  /** The context serving `host` (a certificate the CA signed for it). */
  contextFor(host: string): Promise<SecureContext> {
    const now = this.clock();
    const known = this.made.get(host);
    if (known !== undefined && now < known.renewAt) return known.context;
    const context = issueLeaf(this.ca, host, now).then((leaf) => {
      entry.renewAt = leaf.notAfter - DAY_MS;
      return createSecureContext({ key: leaf.keyPem, cert: leaf.certPem + this.ca.certPem, minVersion: "TLSv1.2" });
    });
    const entry = { context, renewAt: Number.POSITIVE_INFINITY };
    // A leaf that could not be made is not kept: the next client asks again.
    context.catch(() => this.made.delete(host));
    this.made.set(host, entry);
    return context;
  }
}
