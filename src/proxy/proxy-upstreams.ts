/**
 * The upstreams the proxy forwards to, one health each (docs/DESIGN.md "Health and exit"): the real hosts
 * over TLS, or what SESSIONTAP_PROXY_UPSTREAM names. Each says on stderr when it cannot be reached and
 * when it answers again, lists a problem in health while it fails, and writes `upstream-error` to the
 * events log, as the base-URL upstream does.
 */
import type { EventFields } from "../storage/events-log.ts";
import { describe } from "../utils/describe-error.ts";
import type { ForwardDeps } from "../tap/forward.ts";
import { UpstreamHealth, upstreamProblems } from "../utils/upstream-health.ts";

/** Most upstreams kept (one per known host and port; a bound all the same). */
const MAX_UPSTREAMS = 256;

/** The proxy's upstreams. */
export class ProxyUpstreams {
  private readonly known = new Map<string, UpstreamHealth>();

  constructor(
    private readonly clock: () => number,
    private readonly stderr: (line: string) => void,
    private readonly log: (action: string, fields: EventFields) => void,
  ) {}

  /** What the forwarder tells about `upstream`. */
  reporter(upstream: string): ForwardDeps["upstreamHealth"] {
    let health = this.known.get(upstream);
    if (health === undefined) {
      health = new UpstreamHealth(upstream, this.clock, this.stderr, "Check the network, or SESSIONTAP_PROXY_UPSTREAM where it names the host");
      if (this.known.size < MAX_UPSTREAMS) this.known.set(upstream, health);
    }
    const h = health;
    return {
      failed: (error, how) => {
        h.failed(error, how);
        this.log("upstream-error", { how, error: describe(error), upstream: new URL(upstream).host });
      },
      answered: () => h.answered(),
    };
  }

  /** Each upstream's state, by origin. */
  states(): Record<string, unknown> {
    return Object.fromEntries([...this.known].map(([url, h]) => [url, h.state()]));
  }

  /** The problems of the upstreams failing now. */
  problems(): string[] {
    return [...this.known.values()].flatMap((h) => upstreamProblems(h.state()));
  }
}
