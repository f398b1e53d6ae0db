/**
 * What the proxy counts and says (docs/DESIGN.md "Proxy mode"): every refusal and failed handshake is one
 * events-log line and a count by reason, never a host the proxy does not know, a path or a header; a
 * client that refuses the proxy's certificate (or hangs up in the handshake) also gets one stderr line,
 * again at most once a minute, naming NODE_EXTRA_CA_CERTS, since that is nearly always the cause.
 */
import type { EventFields } from "../storage/events-log.ts";
import { REMIND_MS } from "../utils/alarm.ts";
import type { Provider } from "./known-hosts.ts";

/** What health shows of the proxy. */
export interface ProxyCounts {
  /** CONNECTs answered with a tunnel to a host the proxy does not know (never decrypted). */
  tunnels: number;
  /** CONNECTs to a known host whose TLS the proxy terminated. */
  terminated: number;
  /** Requests forwarded from terminated connections, by provider. */
  forwarded: Record<Provider, number>;
  /** CONNECTs to a host that matches a provider's pattern but not a name the CA covers (tunnelled blind). */
  uncovered: number;
  /** Proxy requests refused, by reason. */
  refused: Record<string, number>;
  /** Terminated connections whose TLS or HTTP failed, by reason. */
  failed: Record<string, number>;
  /** Connections the proxy itself failed (a bug: each is one stderr line too). */
  internalErrors: number;
}

/** The proxy's counters and its events-log and stderr lines. */
export class ProxyStats {
  private readonly counts: ProxyCounts = {
    tunnels: 0,
    terminated: 0,
    forwarded: { anthropic: 0, vertex: 0, bedrock: 0 },
    uncovered: 0,
    refused: {},
    failed: {},
    internalErrors: 0,
  };
  private readonly uncoveredSeen = new Set<string>();
  private lastHint = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly log: (action: string, fields: EventFields) => void,
    private readonly stderr: (line: string) => void,
    private readonly clock: () => number,
    private readonly certPath: string,
  ) {}

  /** A CONNECT (or anything sent instead) the proxy answered with an error. */
  refused(reason: string, status: number): void {
    this.counts.refused[reason] = (this.counts.refused[reason] ?? 0) + 1;
    this.log("proxy-refused", { reason, status });
  }

  /** A terminated connection that failed before or between its requests. */
  failed(host: string, reason: string, detail: string | null = null): void {
    this.counts.failed[reason] = (this.counts.failed[reason] ?? 0) + 1;
    this.log("proxy-failed", { host, reason, ...(detail === null ? {} : { detail }) });
    // A client that refuses the certificate says so with an alert, or (Bun's TLS) just hangs up mid-handshake.
    if ((reason === "certificate-refused" || reason === "closed-in-handshake") && this.clock() - this.lastHint >= REMIND_MS) {
      this.lastHint = this.clock();
      this.stderr(
        `sessiontap: a client ${
          reason === "certificate-refused" ? "refused" : "hung up on"
        } the proxy's certificate for ${host}, most likely because it does not trust the tap's CA: start it with NODE_EXTRA_CA_CERTS=${this.certPath}`,
      );
    }
  }

  /** The proxy failed a connection itself: counted, logged, and said on stderr. */
  internalError(error: string): void {
    this.counts.internalErrors++;
    this.log("proxy-error", { error });
    this.stderr(`sessiontap: proxy: internal error on a connection (${error}); the connection was closed`);
  }

  /** A tunnel opened to a host the proxy does not know. */
  tunnel(): void {
    this.counts.tunnels++;
  }

  /** A host shaped like `provider`'s that the CA cannot sign for: tunnelled, and said once per host. */
  uncovered(host: string, provider: Provider): void {
    this.counts.uncovered++;
    if (this.uncoveredSeen.has(host) || this.uncoveredSeen.size >= 64) return;
    this.uncoveredSeen.add(host);
    this.log("proxy-uncovered", { host, provider });
  }

  /** A known host's TLS terminated. */
  terminated(): void {
    this.counts.terminated++;
  }

  /** A request forwarded from a terminated connection. */
  forwarded(provider: Provider): void {
    this.counts.forwarded[provider]++;
  }

  /** A copy of the counts. */
  snapshot(): ProxyCounts {
    return structuredClone(this.counts);
  }
}
