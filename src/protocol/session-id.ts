// Who a request is: its ids, their names on disk, its owner's fingerprints (docs/DESIGN.md "Who a session belongs to"). Pure.
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { type Json, jsonObject } from "./json.ts";

/** All the engine sees of a request's headers: a credential stays on the relay, at most its fingerprint goes. */
export type IdentityHeaders = ReturnType<typeof identityHeaders> & { credential?: string | null };

export function identityHeaders(headers: Headers) {
  return {
    session: headers.get("x-claude-code-session-id"),
    agent: headers.get("x-claude-code-agent-id"),
    parentAgent: headers.get("x-claude-code-parent-agent-id"),
    userAgent: headers.get("user-agent"),
  };
}

const userIdOf = (body: unknown) => (body as { metadata?: { user_id?: unknown } } | null)?.metadata?.user_id;

function userIdJson(body: unknown): Json | null {
  const userId = userIdOf(body);
  return typeof userId === "string" && userId.startsWith("{") ? jsonObject(userId) : null;
}

function sessionFromMetadata(body: unknown): string | null {
  const id = userIdJson(body)?.session_id;
  if (typeof id === "string" && id !== "") return id;
  const userId = userIdOf(body);
  return typeof userId === "string" ? /_session_([0-9a-fA-F-]{36})$/.exec(userId)?.[1] ?? null : null;
}

/** The session header first, then `metadata.user_id`: JSON with `session_id`, or the legacy `…_session_<uuid>`. */
export function resolveIdentity(headers: IdentityHeaders, body: unknown) {
  const trimmed = (s: string | null) => (s !== null && s.trim() !== "" ? s.trim() : null);
  return {
    sessionId: trimmed(headers.session) ?? sessionFromMetadata(body),
    agentId: trimmed(headers.agent),
    parentAgentId: trimmed(headers.parentAgent),
    claudeCode: headers.session !== null || /^claude-cli\//.test(headers.userAgent ?? ""),
  };
}

// The one gate from an id to a file name: no name can hold a separator, climb out of its parent or be too long.
export function nameInside(id: string, suffix = ""): string | null {
  if (!/^[A-Za-z0-9._-]{1,128}$/.test(id) || id === "." || id === ".." || !/^[A-Za-z0-9._-]{0,16}$/.test(suffix)) return null;
  return id + suffix;
}

/** Without case, for case-insensitive filesystems. */
export function isReservedName(name: string): boolean {
  const lower = name.toLowerCase();
  return lower.startsWith(".") || lower === "unknown" || lower.startsWith("inv-") || lower.startsWith("session-mirror-events");
}

export function transcriptName(id: string): string | null {
  return /^[A-Za-z0-9]/.test(id) ? nameInside(id, ".jsonl") : null;
}

export function dirName(id: string | null): string {
  if (id === null) return "unknown";
  const name = nameInside(id);
  if (name !== null && !isReservedName(name)) return name;
  return "inv-" + createHash("sha256").update(id, "utf8").digest("hex").slice(0, 16);
}

export const TOKEN_HEADER = "x-sessiontap-token";

export function sameSecret(given: string | null, secret: string): boolean {
  const sha = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(sha(given ?? ""), sha(secret)) && given !== null && given.length === secret.length;
}

// Under the tap's own secret: the credential is never kept, and its fingerprint cannot be tested against a guessed key elsewhere.
function mac(secret: string, parts: string[]): string {
  return createHmac("sha256", secret).update(parts.join("\u0000")).digest("hex").slice(0, 32);
}

export function credentialTag(headers: Headers, secret: string): string | null {
  const key = headers.get("x-api-key");
  if (key !== null && key !== "") return `key:${mac(secret, ["x-api-key", key])}`;
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers.get("authorization") ?? "")?.[1];
  return bearer === undefined ? null : `bearer:${mac(secret, ["bearer", bearer])}`;
}

export function claimsTag(body: unknown, secret: string): string | null {
  const parsed = userIdJson(body);
  const account = typeof parsed?.account_uuid === "string" ? parsed.account_uuid : "";
  const device = typeof parsed?.device_id === "string" ? parsed.device_id : "";
  if (account !== "") return mac(secret, ["account", account, device]);
  // Claude Code without an account (Bedrock, Vertex, a gateway) still names its install: what tells a credential-less owner.
  return device === "" ? null : `device:${mac(secret, ["device", device])}`;
}

export function ownerName(secret: string, credential: string | null, cwd: string | null): string {
  return mac(secret, ["owner", credential ?? "", cwd ?? ""]).slice(0, 8);
}

export interface SessionBinding {
  credential: string | null;
  claims: string | null;
  cwd: string | null;
}

// The same owner (`next`: the binding to keep, if changed): the bound credential or an OAuth refresh of its account, else its claims or cwd.
export function judgeBinding(
  binding: SessionBinding,
  request: SessionBinding,
): { same: true; next: SessionBinding | null } | { same: false; why: "credential" | "cwd" } {
  if (binding.cwd !== null && request.cwd !== null && binding.cwd !== request.cwd) return { same: false, why: "cwd" };
  const bearer = (tag: string | null) => tag?.startsWith("bearer:") === true;
  const refreshed = bearer(binding.credential) && bearer(request.credential) && binding.claims?.startsWith("device:") === false &&
    binding.claims === request.claims;
  if (binding.credential !== request.credential && !refreshed) return { same: false, why: "credential" };
  if (request.credential === null && binding.claims !== null && request.claims !== binding.claims) return { same: false, why: "credential" };
  if (request.credential === null && binding.claims === null && binding.cwd !== null && request.cwd === null) return { same: false, why: "cwd" };
  const next = { credential: request.credential, claims: binding.claims ?? request.claims, cwd: binding.cwd ?? request.cwd };
  const changed = next.credential !== binding.credential || next.claims !== binding.claims || next.cwd !== binding.cwd;
  return { same: true, next: changed ? next : null };
}
