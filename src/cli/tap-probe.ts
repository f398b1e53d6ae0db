// Who answers at a tap's address (docs/DESIGN.md "The launcher"): a tap of this user's proves it with the mirror
// root's key before anything of the user's goes there.
import { createHmac, randomBytes } from "node:crypto";
import { isIP } from "node:net";
import { join } from "node:path/posix";
import { existingBindingKey } from "../storage/binding-files.ts";
import { type FsAdapter, nodeFs, readIfThere } from "../storage/fs-adapter.ts";
import { replaceFile } from "../storage/publish.ts";
import { isObject, jsonObject } from "../protocol/json.ts";
import { sameSecret } from "../protocol/session-id.ts";
import { describe } from "../utils/describe-error.ts";
import { isLoopback } from "../viewer/hosts.ts";

/** `mine`: proven this user's; `unproven`: answers like a sessiontap, no proof. `health` is null when it shows only its status. */
export type Probe =
  | { kind: "mine" | "unproven"; url: string; status: string; health: Record<string, unknown> | null }
  | { kind: "other"; url: string; httpStatus: number }
  | { kind: "none"; url: string; why: string };

/** The address a local client reaches a tap listening on `host` by. */
export function localAddress(host: string): string {
  const reach = host === "0.0.0.0" ? "127.0.0.1" : host === "::" || host === "[::]" ? "::1" : host;
  return reach.includes(":") && !reach.startsWith("[") ? `[${reach}]` : reach;
}

/** HMAC under the root's secret over the nonce and the tap's address: a squatter relaying the nonce elsewhere gets the wrong address's. */
export function healthProof(bindingKey: string, nonce: string, at: string): string | null {
  if (!/^[0-9a-f]{32,128}$/.test(nonce)) return null;
  const key = createHmac("sha256", bindingKey).update("sessiontap health proof").digest();
  return createHmac("sha256", key).update(`${nonce} ${at}`).digest("hex");
}

/** The root's secret, or null (none made yet, or unsafe: the tap's own start says so). */
export async function proofKey(mirror: boolean, root: string): Promise<string | null> {
  return mirror ? await existingBindingKey(nodeFs, root).catch(() => null) : null;
}

/** Asks `base`'s health with a fresh challenge, sending nothing else; only a proven tap is then sent `token`, for its details. */
export async function probeTap(
  fetcher: typeof fetch,
  base: string,
  key: string | null,
  token: string | null,
  { timeoutMs = 2000, details = true } = {},
): Promise<Probe> {
  if (!URL.canParse(base)) return { kind: "none", url: base, why: `"${base}" is not a URL` };
  const url = new URL("/_tap/health", base);
  const ask = async (query: string, headers: Record<string, string> = {}) => {
    const response = await fetcher(`${url.href}${query}`, { signal: AbortSignal.timeout(timeoutMs), redirect: "manual", headers });
    const text = await boundedText(response).catch(() => null);
    return { status: response.status, body: text === null ? null : jsonObject(text) };
  };
  try {
    const nonce = randomBytes(16).toString("hex");
    const { status, body } = await ask(`?challenge=${nonce}`);
    if (status !== 200 || !isObject(body) || (body.status !== "ok" && body.status !== "degraded")) {
      return { kind: "other", url: url.origin, httpStatus: status };
    }
    // A name (localhost) may also lead to an address another user holds: only a tap asked at an address literal is proven.
    const literal = isIP(url.hostname.replace(/^\[|\]$/g, "")) !== 0;
    const expected = key === null || !literal ? null : healthProof(key, nonce, `${url.hostname}:${url.port || (url.protocol === "https:" ? "443" : "80")}`);
    const kind = expected !== null && typeof body.proof === "string" && sameSecret(body.proof, expected) ? "mine" : "unproven";
    if (!details) return { kind, url: url.origin, status: body.status, health: null };
    const second = await ask("", kind === "mine" && token !== null ? { authorization: `Bearer ${token}` } : {});
    const health = second.status === 200 && isObject(second.body) && "runtime" in second.body ? second.body : null;
    return { kind, url: url.origin, status: body.status, health };
  } catch (error) {
    return { kind: "none", url: url.origin, why: (error as Error).name === "TimeoutError" ? "timed out" : describe(error) };
  }
}

/** A body of at most `max` bytes, or null past that (the read is then cancelled): whoever holds a port may answer without end. */
export async function boundedText(response: Response, max = 1024 * 1024): Promise<string | null> {
  const reader = response.body?.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (let size = 0, part = await reader?.read(); part !== undefined && !part.done; part = await reader!.read()) {
    size += part.value.byteLength;
    if (size > max) {
      await reader!.cancel();
      return null;
    }
    text += decoder.decode(part.value, { stream: true });
  }
  return text + decoder.decode();
}

/** "pid N, version V" of a sessiontap's health, for a line that names it. */
export function whichTap(health: Record<string, unknown> | null): string {
  if (health === null) return "it names its pid only with its token";
  return `${typeof health.pid === "number" ? `pid ${health.pid}, ` : ""}version ${String(health.version)}`;
}

export function unproven(config: { mirror: boolean; mirrorDir: string }): string {
  const why = config.mirror
    ? `a tap with its mirror off, or mirroring to another root than ${config.mirrorDir}, cannot`
    : "a tap proves itself with its mirror root's key, and the mirror is off here";
  return `something that could not prove it is this user's sessiontap (${why})`;
}

/** Where a tap whose clients' uids cannot be read leaves its token for its user's doctor (docs/DESIGN.md "Trust boundaries"). */
const TOKEN_FILE = ".tap-token";

export function leaveToken(fs: FsAdapter, root: string, port: number, token: string): Promise<void> {
  return replaceFile(fs, join(root, TOKEN_FILE), `${port} ${token}\n`);
}

/** The token the tap on `base`'s loopback port left under `root`: never sent to another port, where another user may listen. */
export async function tokenLeftFor(fs: FsAdapter, root: string, base: string): Promise<string | null> {
  const [port, token] = ((await readIfThere(fs, join(root, TOKEN_FILE)).catch(() => null)) ?? "").trim().split(" ");
  const url = URL.canParse(base) ? new URL(base) : null;
  return url !== null && isLoopback(url.hostname) && port === (url.port || "80") && token ? token : null;
}
