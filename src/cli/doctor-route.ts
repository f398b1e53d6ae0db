/**
 * `doctor`'s check of the way Claude Code reaches the tap (docs/DESIGN.md "Providers", "Proxy mode"): which
 * API it talks to (`CLAUDE_CODE_USE_BEDROCK`, `CLAUDE_CODE_USE_VERTEX`, else Anthropic's), then that API's
 * base URL (`ANTHROPIC_BASE_URL`, `ANTHROPIC_VERTEX_BASE_URL`, `ANTHROPIC_BEDROCK_BASE_URL`), which must be
 * a tap, else `HTTPS_PROXY`, which must be a tap's proxy (cli/doctor-proxy.ts); with neither, Claude Code
 * talks to the API itself and nothing is mirrored. Each variable is read as Claude Code will see it
 * (cli/doctor-check.ts).
 */
import { isAwsHost } from "../protocol/providers/aws-signature.ts";
import { isObject } from "../protocol/json.ts";
import { join } from "../storage/paths.ts";
import type { CommandIo } from "./command-io.ts";
import { type Check, claudeSetting, isTruthy, requestsFail, type Setting, type SettingsFile } from "./doctor-check.ts";
import { proxyChecks } from "./doctor-proxy.ts";
import { type Probe, probe } from "./doctor-tap.ts";

/** The API Claude Code talks to, and how it reaches it. */
export interface ClaudeRoute {
  provider: "anthropic" | "vertex" | "bedrock";
  /** "Claude Code on AWS Bedrock (CLAUDE_CODE_USE_BEDROCK in the environment)", for the checks' lines. */
  who: string;
  /** The base-URL variable of that API, and its value. */
  baseVar: string;
  base: Setting | null;
  /** The host Claude Code talks to when no base URL is set. */
  host: string;
}

const BASE_VARS = { anthropic: "ANTHROPIC_BASE_URL", vertex: "ANTHROPIC_VERTEX_BASE_URL", bedrock: "ANTHROPIC_BEDROCK_BASE_URL" } as const;
const NAMES = { anthropic: "the Anthropic API", vertex: "Google Vertex AI", bedrock: "AWS Bedrock" } as const;

/** The API Claude Code will talk to, as its settings and environment choose it (Bedrock wins over Vertex, as in Claude Code). */
export function claudeRoute(settings: SettingsFile[], env: CommandIo["env"]): ClaudeRoute {
  const get = (name: string) => claudeSetting(settings, env, name);
  const bedrock = get("CLAUDE_CODE_USE_BEDROCK");
  const vertex = get("CLAUDE_CODE_USE_VERTEX");
  const provider = isTruthy(bedrock) ? "bedrock" : isTruthy(vertex) ? "vertex" : "anthropic";
  const on = provider === "bedrock" ? bedrock : provider === "vertex" ? vertex : null;
  const region = provider === "bedrock"
    ? get("AWS_REGION")?.value ?? get("AWS_DEFAULT_REGION")?.value ?? "us-east-1"
    : get("CLOUD_ML_REGION")?.value ?? "us-east5";
  const host = provider === "bedrock"
    ? `bedrock-runtime.${region}.amazonaws.com`
    : provider === "vertex"
    ? region === "global" ? "aiplatform.googleapis.com" : `${region}-aiplatform.googleapis.com`
    : "api.anthropic.com";
  const who = `Claude Code on ${NAMES[provider]}${on === null ? "" : ` (CLAUDE_CODE_USE_${provider.toUpperCase()} ${on.where})`}`;
  return { provider, who, baseVar: BASE_VARS[provider], base: get(BASE_VARS[provider]), host };
}

/** The checks of the way Claude Code reaches the tap; `tap` is what answered at `tapUrl`, the tap doctor looked at. */
export async function routeChecks(
  route: ClaudeRoute,
  settings: SettingsFile[],
  io: CommandIo,
  tap: { url: string; probe: Probe },
  token: string | null,
  claudeDir: string,
): Promise<Check[]> {
  const out: Check[] = [];
  for (const [provider, name] of Object.entries(BASE_VARS)) {
    const unused = provider === route.provider ? null : claudeSetting(settings, io.env, name);
    if (unused !== null && provider !== "anthropic") {
      out.push({
        check: name,
        status: "warn",
        detail: `set ${unused.where}, but Claude Code is not on ${NAMES[provider as "vertex"]} (CLAUDE_CODE_USE_${provider.toUpperCase()}=1): it ignores it`,
      });
    }
  }
  const check = route.baseVar;
  const base = route.base;
  if (base === null) {
    const proxy = claudeSetting(settings, io.env, "HTTPS_PROXY") ?? claudeSetting(settings, io.env, "https_proxy");
    if (proxy !== null) return [...out, ...(await proxyChecks(route, proxy, settings, io, tap))];
    const suggest = `${tap.url}${route.provider === "vertex" ? "/v1" : ""}`;
    const proxyMode =
      'the tap\'s proxy mode: sessiontap serve --proxy-port N prints the HTTPS_PROXY and NODE_EXTRA_CA_CERTS lines to export (docs/providers.md, "Proxy mode")';
    const fix = route.provider === "bedrock"
      ? `use ${proxyMode}, where your AWS signature stays valid, or export ${check}=${suggest} with a Bedrock API key (docs/providers.md, "AWS Bedrock")`
      : `export ${check}=${suggest} (or set it under "env" in ${join(claudeDir, "settings.json")}), or use ${proxyMode}`;
    out.push({ check, status: "fail", detail: `not set, nor is HTTPS_PROXY, so ${route.who} talks to ${route.host} directly and nothing is mirrored: ${fix}` });
    return out;
  }
  const fromEnv = io.env[check];
  if (base.fromSettings !== null && fromEnv !== undefined && fromEnv !== "" && fromEnv !== base.value) {
    out.push({ check, status: "warn", detail: `the environment says ${fromEnv}, but Claude Code applies ${base.value} from ${base.fromSettings} over it` });
  }
  const same = new URL(tap.url).origin === safeOrigin(base.value);
  const target = same ? tap.probe : await probe(io, base.value, token);
  if (!target.ok && target.down) {
    // Never in the way: a base URL that reaches nothing stops Claude Code, so say so and how to go around the tap.
    out.push({
      check,
      status: "fail",
      detail: `${base.value} ${base.where}: ${target.why}. ${requestsFail(check, base.fromSettings, "sessiontap serve, or run sessiontap claude")}`,
    });
    return out;
  }
  if (!target.ok) {
    out.push({ check, status: "fail", detail: `${base.value} ${base.where}: ${target.why}; Claude Code's requests go there and are not mirrored` });
    return out;
  }
  out.push({ check, status: "ok", detail: `${base.value} ${base.where} reaches a tap: ${route.who} goes through it (base-URL mode)` });
  if (route.provider === "bedrock") out.push(...bedrockCredentials(settings, io.env, target.health));
  return out;
}

/** The origin of `url`, or null when it is not a URL. */
export function safeOrigin(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/**
 * What base-URL mode can forward to AWS (docs/DESIGN.md "Bedrock's signatures"): a Bedrock API key, or no
 * credentials to an upstream that signs; a SigV4 signature for the tap's address, or nothing for AWS itself,
 * the tap refuses.
 */
function bedrockCredentials(settings: SettingsFile[], env: CommandIo["env"], health: Record<string, unknown>): Check[] {
  if (claudeSetting(settings, env, "AWS_BEARER_TOKEN_BEDROCK") !== null) return [];
  const check = "Bedrock credentials";
  const instead =
    'run the tap in proxy mode instead, where the signature stays valid (docs/providers.md, "AWS Bedrock"), or use a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK)';
  if (!isTruthy(claudeSetting(settings, env, "CLAUDE_CODE_SKIP_BEDROCK_AUTH"))) {
    return [{ check, status: "fail", detail: `Claude Code signs each request with your AWS keys for the tap's address, which the tap refuses: ${instead}` }];
  }
  const upstream = isObject(health.upstream) && typeof health.upstream.url === "string" ? health.upstream.url : null;
  const host = upstream === null ? null : safeOrigin(upstream)?.replace(/^\w+:\/\//, "") ?? null;
  if (host !== null && isAwsHost(host)) {
    return [{
      check,
      status: "fail",
      detail: `CLAUDE_CODE_SKIP_BEDROCK_AUTH sends no credentials, and the tap's upstream ${host} is AWS, which refuses such requests: ` +
        `point --upstream at a gateway of yours that signs, or ${instead}`,
    }];
  }
  return [];
}
