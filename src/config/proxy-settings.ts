// The forward proxy's settings and the API hosts it decrypts (docs/DESIGN.md "Proxy mode"); parse.ts reads them. Pure.
import type { Provider } from "../protocol/providers/recognise.ts";

/** Why the proxy could not start (its CA, a setting, its port): `serve` prints the message and exits 2. */
export class ProxyStartError extends Error {
  override name = "ProxyStartError";
}

export type { Provider };

const GCP_REGIONS = ("africa-south1 asia-east1 asia-east2 asia-northeast1 asia-northeast2 asia-northeast3 asia-south1 asia-south2 asia-southeast1 " +
  "asia-southeast2 australia-southeast1 australia-southeast2 europe-central2 europe-north1 europe-north2 europe-southwest1 europe-west1 europe-west2 " +
  "europe-west3 europe-west4 europe-west6 europe-west8 europe-west9 europe-west10 europe-west12 me-central1 me-central2 me-west1 northamerica-northeast1 " +
  "northamerica-northeast2 northamerica-south1 southamerica-east1 southamerica-west1 us-central1 us-east1 us-east4 us-east5 us-south1 us-west1 us-west2 " +
  "us-west3 us-west4").split(" ");
const AWS_REGIONS = ("af-south-1 ap-east-1 ap-east-2 ap-northeast-1 ap-northeast-2 ap-northeast-3 ap-south-1 ap-south-2 ap-southeast-1 ap-southeast-2 " +
  "ap-southeast-3 ap-southeast-4 ap-southeast-5 ap-southeast-7 ca-central-1 ca-west-1 eu-central-1 eu-central-2 eu-north-1 eu-south-1 eu-south-2 " +
  "eu-west-1 eu-west-2 eu-west-3 il-central-1 me-central-1 me-south-1 mx-central-1 sa-east-1 us-east-1 us-east-2 us-gov-east-1 us-gov-west-1 us-west-1 " +
  "us-west-2").split(" ");

// A name constraint permits a name and all under it, never a pattern (`*-aiplatform.googleapis.com` would take all of
// googleapis.com), so each region's host is named; a host its pattern matches but no name is tunnelled blind.
const TABLE: readonly { provider: Provider; pattern: RegExp; names: readonly string[] }[] = [
  { provider: "anthropic", pattern: /^api\.anthropic\.com$/, names: ["api.anthropic.com"] },
  {
    provider: "vertex",
    pattern: /^(?:[a-z0-9-]+-)?aiplatform\.googleapis\.com$/,
    names: ["aiplatform.googleapis.com", ...GCP_REGIONS.map((r) => `${r}-aiplatform.googleapis.com`)],
  },
  { provider: "bedrock", pattern: /^bedrock-runtime\.[a-z0-9-]+\.amazonaws\.com$/, names: AWS_REGIONS.map((r) => `bedrock-runtime.${r}.amazonaws.com`) },
];

export type Recognised = { kind: "terminate" | "uncovered"; provider: Provider } | { kind: "unknown" };

/** The table, with the hosts a setting adds (lower case, spoken to as api.anthropic.com is). */
export function hostTable(added: readonly string[] = []) {
  const recognise = (host: string): Recognised => {
    const row = TABLE.find((r) => r.pattern.test(host.toLowerCase()));
    if (added.includes(host.toLowerCase())) return { kind: "terminate", provider: "anthropic" };
    return row === undefined ? { kind: "unknown" } : { kind: row.names.includes(host.toLowerCase()) ? "terminate" : "uncovered", provider: row.provider };
  };
  return {
    recognise,
    terminates: (host: string) => recognise(host).kind === "terminate",
    names: () => [...new Set([...TABLE.flatMap((r) => r.names), ...added])].sort(),
  };
}

const HOST_NAME = /^(?=.{1,253}$)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

// A name constraint permits every name under its own, so an added host must name one site. Short of the Public Suffix
// List, the rule: two labels at least; a third where the top one is a country's and the second has at most three letters
// (co.uk, com.au); and no domain above a host the table names (amazonaws.com, anthropic.com), which it names one by one.
export function widerThanASite(host: string): boolean {
  const labels = host.split(".");
  if (labels.length < 2 || (labels.length === 2 && labels[1].length === 2 && labels[0].length <= 3)) return true;
  return TABLE.some((row) => row.names.some((name) => name.endsWith(`.${host}`)));
}

/** True for a host name (not an address, not a pattern). */
export function isHostName(name: string): boolean {
  return HOST_NAME.test(name) && !/^[\d.]+$/.test(name);
}
