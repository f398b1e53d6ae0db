/**
 * The API hosts the proxy terminates (docs/DESIGN.md "Proxy mode"): a small table, one entry per provider,
 * each with the pattern that recognises its hosts and the names the local CA may sign for it. X.509 name
 * constraints only permit whole subtrees (a name and everything under it), so a pattern such as
 * `*-aiplatform.googleapis.com` cannot be a constraint without permitting all of googleapis.com: the
 * table names each regional host instead, and a host that matches a pattern but no name is tunnelled
 * blind (the CA could not sign for it) and counted. Pure.
 */

/** Whose wire format a host speaks. */
export type Provider = "anthropic" | "vertex" | "bedrock";

/** One row of the table. */
export interface KnownHost {
  provider: Provider;
  /** Recognises the provider's hosts (lower case). */
  pattern: RegExp;
  /** The names the CA is constrained to for this provider (each permits itself and names under it). */
  names: readonly string[];
}

/** Google Cloud regions (Vertex AI serves Claude from some of them; the CA covers all). */
const GCP_REGIONS = [
  "africa-south1",
  "asia-east1",
  "asia-east2",
  "asia-northeast1",
  "asia-northeast2",
  "asia-northeast3",
  "asia-south1",
  "asia-south2",
  "asia-southeast1",
  "asia-southeast2",
  "australia-southeast1",
  "australia-southeast2",
  "europe-central2",
  "europe-north1",
  "europe-north2",
  "europe-southwest1",
  "europe-west1",
  "europe-west2",
  "europe-west3",
  "europe-west4",
  "europe-west6",
  "europe-west8",
  "europe-west9",
  "europe-west10",
  "europe-west12",
  "me-central1",
  "me-central2",
  "me-west1",
  "northamerica-northeast1",
  "northamerica-northeast2",
  "northamerica-south1",
  "southamerica-east1",
  "southamerica-west1",
  "us-central1",
  "us-east1",
  "us-east4",
  "us-east5",
  "us-south1",
  "us-west1",
  "us-west2",
  "us-west3",
  "us-west4",
];

/** AWS regions (Bedrock serves Claude from some of them; the CA covers all). */
const AWS_REGIONS = [
  "af-south-1",
  "ap-east-1",
  "ap-east-2",
  "ap-northeast-1",
  "ap-northeast-2",
  "ap-northeast-3",
  "ap-south-1",
  "ap-south-2",
  "ap-southeast-1",
  "ap-southeast-2",
  "ap-southeast-3",
  "ap-southeast-4",
  "ap-southeast-5",
  "ap-southeast-7",
  "ca-central-1",
  "ca-west-1",
  "eu-central-1",
  "eu-central-2",
  "eu-north-1",
  "eu-south-1",
  "eu-south-2",
  "eu-west-1",
  "eu-west-2",
  "eu-west-3",
  "il-central-1",
  "me-central-1",
  "me-south-1",
  "mx-central-1",
  "sa-east-1",
  "us-east-1",
  "us-east-2",
  "us-gov-east-1",
  "us-gov-west-1",
  "us-west-1",
  "us-west-2",
];

/** The built-in table. */
export const KNOWN_HOSTS: readonly KnownHost[] = [
  { provider: "anthropic", pattern: /^api\.anthropic\.com$/, names: ["api.anthropic.com"] },
  {
    provider: "vertex",
    // The global endpoint has no region prefix.
    pattern: /^(?:[a-z0-9-]+-)?aiplatform\.googleapis\.com$/,
    names: ["aiplatform.googleapis.com", ...GCP_REGIONS.map((r) => `${r}-aiplatform.googleapis.com`)],
  },
  { provider: "bedrock", pattern: /^bedrock-runtime\.[a-z0-9-]+\.amazonaws\.com$/, names: AWS_REGIONS.map((r) => `bedrock-runtime.${r}.amazonaws.com`) },
];

/** What the table says of one host. */
export type Recognised =
  | { kind: "terminate"; provider: Provider }
  /** It matches a provider's pattern, but the CA may not sign for it: tunnelled blind, and counted. */
  | { kind: "uncovered"; provider: Provider }
  | { kind: "unknown" };

/** True when `host` is `name` or a name under it (how a dNSName constraint permits, RFC 5280 §4.2.1.10). */
export function withinName(host: string, name: string): boolean {
  return host === name || host.endsWith(`.${name}`);
}

/** The table with the user's added hosts (each mirrored like api.anthropic.com). */
export class HostTable {
  private readonly added: ReadonlySet<string>;

  constructor(added: readonly string[] = [], private readonly table: readonly KnownHost[] = KNOWN_HOSTS) {
    this.added = new Set(added.map((h) => h.toLowerCase()));
  }

  /** Every name the CA must be constrained to, sorted and without repeats. */
  names(): string[] {
    return [...new Set([...this.table.flatMap((row) => row.names), ...this.added])].sort();
  }

  /** What the proxy does with a CONNECT to `host`. */
  recognise(host: string): Recognised {
    const h = host.toLowerCase();
    if (this.added.has(h)) return { kind: "terminate", provider: "anthropic" };
    for (const row of this.table) {
      if (!row.pattern.test(h)) continue;
      return row.names.includes(h) ? { kind: "terminate", provider: row.provider } : { kind: "uncovered", provider: row.provider };
    }
    return { kind: "unknown" };
  }

  /** True when `host` is one the proxy terminates (for a setting that names it). */
  terminates(host: string): boolean {
    return this.recognise(host).kind === "terminate";
  }
}
