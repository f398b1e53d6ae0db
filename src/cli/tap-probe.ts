/**
 * What answers at a tap's address, from its `/_tap/health`: a sessiontap (with its health, or only its
 * status when it shows details with its token alone), something else, or nothing. serve names what holds
 * a port it cannot take, the launcher reuses a tap already serving, doctor checks the tap Claude Code uses.
 */
import { describe } from "../utils/describe-error.ts";
import { isObject } from "../protocol/json.ts";
import { type FsAdapter, readIfThere, removeIfThere } from "../storage/fs-adapter.ts";
import { isLoopback } from "../viewer/hosts.ts";

/** What a probe found. */
export type Probe =
  | { kind: "sessiontap"; url: string; health: Record<string, unknown> }
  | { kind: "locked"; url: string; status: string }
  | { kind: "other"; url: string; httpStatus: number }
  | { kind: "none"; url: string; why: string };

/** Asks `base`'s `/_tap/health` (bounded by `timeoutMs`), sending `token` when there is one. */
export async function probeTap(fetcher: typeof fetch, base: string, token: string | null, timeoutMs = 2000): Promise<Probe> {
  let url: URL;
  try {
    url = new URL("/_tap/health", base.endsWith("/") ? base : `${base}/`);
  } catch {
    return { kind: "none", url: base, why: `"${base}" is not a URL` };
  }
  try {
    const headers: Record<string, string> = token === null ? {} : { authorization: `Bearer ${token}` };
    const response = await fetcher(url, { signal: AbortSignal.timeout(timeoutMs), redirect: "manual", headers });
    const body = (await response.json().catch(() => null)) as unknown;
    if (response.status === 200 && isObject(body) && (body.status === "ok" || body.status === "degraded") && "runtime" in body) {
      return { kind: "sessiontap", url: url.origin, health: body };
    }
    if (response.status === 200 && isObject(body) && Object.keys(body).join() === "status") {
      return { kind: "locked", url: url.origin, status: String(body.status) };
    }
    return { kind: "other", url: url.origin, httpStatus: response.status };
  } catch (error) {
    return { kind: "none", url: url.origin, why: (error as Error).name === "TimeoutError" ? "timed out" : describe(error) };
  }
}

/** "pid N, sessiontap V" of a sessiontap's health, for a line that names it. */
export function whichTap(health: Record<string, unknown>): string {
  const pid = typeof health.pid === "number" ? `pid ${health.pid}, ` : "";
  return `${pid}version ${String(health.version)}`;
}

/** Where a tap whose clients' uids cannot be read leaves its token for its user's doctor (docs/DESIGN.md "Trust boundaries"). */
const TOKEN_FILE = ".tap-token";

export async function leaveToken(fs: FsAdapter, root: string, port: number, token: string): Promise<void> {
  const aside = `${root}/${TOKEN_FILE}.${port}.tmp`;
  await removeIfThere(fs, aside);
  await fs.createExclusive(aside, `${port} ${token}\n`, true);
  await fs.rename(aside, `${root}/${TOKEN_FILE}`);
}

/** The token the tap on `base`'s loopback port left under `root`: never sent to another port, where another user may listen. */
export async function tokenLeftFor(fs: FsAdapter, root: string, base: string): Promise<string | null> {
  const [port, token] = ((await readIfThere(fs, `${root}/${TOKEN_FILE}`).catch(() => null)) ?? "").trim().split(" ");
  const url = URL.canParse(base) ? new URL(base) : null;
  return url !== null && isLoopback(url.hostname) && port === (url.port || "80") && token ? token : null;
}
