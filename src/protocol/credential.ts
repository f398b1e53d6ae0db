/**
 * Who opened a session, as the mirror may remember it (docs/DESIGN.md "Who a session belongs to"): a keyed
 * fingerprint of the request's credential — an HMAC under the tap's own secret, so the credential itself is
 * never kept and the fingerprint cannot be tested against a guessed key elsewhere — and of the account and
 * device Claude Code names in `metadata.user_id`. Pure (node:crypto's HMAC only).
 *
 * An API key (`x-api-key`) stays the same through a session. A bearer token may not: Claude Code's OAuth
 * access token is refreshed in the middle of a long session, so a bearer's fingerprint alone would split
 * it; what stays is the account and device the request names beside it (see session-bindings.ts).
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/**
 * The header that carries the tap's token on API traffic (Claude Code sends it from
 * `ANTHROPIC_CUSTOM_HEADERS="x-sessiontap-token: <token>"`); never forwarded upstream.
 */
export const TOKEN_HEADER = "x-sessiontap-token";

/** True when `given` is `token`, compared in time that does not depend on where they differ. */
export function tokenMatches(given: string | null, token: string): boolean {
  const a = createHash("sha256").update(given ?? "").digest();
  const b = createHash("sha256").update(token).digest();
  return timingSafeEqual(a, b) && given !== null && given.length === token.length;
}

/** What kind of credential opened a request: one that stays (an API key), or one that may be refreshed (a bearer token). */
export type CredentialKind = "key" | "bearer";

/** A request's credential, as a fingerprint: `key:<hex>` or `bearer:<hex>`; null when it carries none. */
export type CredentialTag = string;

/** The HMAC of `parts` under `secret`, as 32 hex characters. */
function mac(secret: string, parts: string[]): string {
  return createHmac("sha256", secret).update(parts.join("\u0000")).digest("hex").slice(0, 32);
}

/** The fingerprint of the credential `headers` carry (the API key first, as the API reads it), or null. */
export function credentialTag(headers: Headers, secret: string): CredentialTag | null {
  const key = headers.get("x-api-key");
  if (key !== null && key !== "") return `key:${mac(secret, ["x-api-key", key])}`;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers.get("authorization") ?? "")?.[1];
  if (bearer !== undefined) return `bearer:${mac(secret, ["bearer", bearer])}`;
  return null;
}

/** The kind of a fingerprint. */
export function kindOf(tag: CredentialTag): CredentialKind {
  return tag.startsWith("bearer:") ? "bearer" : "key";
}

/**
 * The fingerprint of the account and device a request body names in `metadata.user_id` (Claude Code's
 * JSON form: `account_uuid`, `device_id`), or null when it names no account.
 */
export function claimsTag(body: unknown, secret: string): string | null {
  const userId = (body as { metadata?: { user_id?: unknown } } | null)?.metadata?.user_id;
  if (typeof userId !== "string" || !userId.startsWith("{")) return null;
  let parsed: { account_uuid?: unknown; device_id?: unknown };
  try {
    parsed = JSON.parse(userId);
  } catch {
    return null;
  }
  const account = typeof parsed.account_uuid === "string" ? parsed.account_uuid : "";
  const device = typeof parsed.device_id === "string" ? parsed.device_id : "";
  return account === "" ? null : mac(secret, ["account", account, device]);
}

/** A short, stable name for who a request is, for the session it starts of its own (8 hex). */
export function ownerName(secret: string, credential: CredentialTag | null, cwd: string | null): string {
  return mac(secret, ["owner", credential ?? "", cwd ?? ""]).slice(0, 8);
}
