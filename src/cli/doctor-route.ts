// `doctor`'s check of the way Claude Code reaches the tap (docs/DESIGN.md "Providers", "Proxy mode"): the base URL of
// the API it is set to use, which must reach a tap, else HTTPS_PROXY, which must be a tap's proxy (cli/doctor-proxy.ts).
import type { Config } from "../config/parse.ts";
import { isAwsHost } from "../protocol/headers.ts";
import { isObject } from "../protocol/json.ts";
import { join } from "../storage/paths.ts";
import type { CommandIo } from "./command-io.ts";
import { type Check, claudeSetting, isTruthy, requestsFail, type Setting, type SettingsFile } from "./doctor-check.ts";
import { proxyChecks } from "./doctor-proxy.ts";
import { type Probe, probe } from "./doctor-tap.ts";

/** The API Claude Code talks to; `who` names it for the checks' lines, `host` is where it goes with no base URL. */
export interface ClaudeRoute {
  provider: "anthropic" | "vertex" | "bedrock";
  who: string;
  baseVar: string;
  base: Setting | null;
  host: string;
}

const BASE_VARS = { anthropic: "ANTHROPIC_BASE_URL", vertex: "ANTHROPIC_VERTEX_BASE_URL", bedrock: "ANTHROPIC_BEDROCK_BASE_URL" } as const;
const NAMES = { anthropic: "the Anthropic API", vertex: "Google Vertex AI", bedrock: "AWS Bedrock" } as const;

/** As Claude Code's settings and environment choose it: Bedrock wins over Vertex, as in Claude Code. */
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

/** `tap` is the tap doctor looked at, and what answered there. */
export async function routeChecks(route: ClaudeRoute, settings: SettingsFile[], io: CommandIo, tap: { url: string; probe: Probe }, config: Readonly<Config>) {
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
      : `export ${check}=${suggest} (or set it under "env" in ${join(config.claudeDir, "settings.json")}), or use ${proxyMode}`;
    out.push({ check, status: "fail", detail: `not set, nor is HTTPS_PROXY, so ${route.who} talks to ${route.host} directly and nothing is mirrored: ${fix}` });
    return out;
  }
  const fromEnv = io.env[check];
  if (base.fromSettings !== null && fromEnv !== undefined && fromEnv !== "" && fromEnv !== base.value) {
    out.push({ check, status: "warn", detail: `the environment says ${fromEnv}, but Claude Code applies ${base.value} from ${base.fromSettings} over it` });
  }
  const same = new URL(tap.url).origin === safeOrigin(base.value);
  const target = same ? tap.probe : await probe(io, base.value, config);
  // Never in the way: a base URL that reaches nothing stops Claude Code, so say so and how to go around the tap.
  const detail = !target.ok && target.down
    ? `${base.value} ${base.where}: ${target.why}. ${requestsFail(check, base.fromSettings, "sessiontap serve, or run sessiontap claude")}`
    : !target.ok
    ? `${base.value} ${base.where}: ${target.why}; Claude Code's requests go there and are not mirrored`
    : `${base.value} ${base.where} reaches a tap${target.proven ? "" : " that could not prove it is yours"}: ${route.who} goes through it (base-URL mode)`;
  out.push({ check, status: !target.ok ? "fail" : target.proven ? "ok" : "warn", detail });
  if (!target.ok) return out;
  if (route.provider === "bedrock") out.push(...bedrockCredentials(settings, io.env, target.health));
  return out;
}

export function safeOrigin(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

/** Base-URL mode forwards a Bedrock API key, or no credentials to an upstream that signs; it refuses the rest (docs/DESIGN.md "Bedrock's signatures"). */
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
