/**
 * Session and agent identity of a request, and the directory names they map to (docs/DESIGN.md "The mirror"). Pure.
 */
import { createHash } from "node:crypto";
import { isReservedName, nameInside } from "./id-name.ts";

/** Who a request belongs to. `sessionId` is null for sessionless traffic (the `unknown` directory). */
export interface RequestIdentity {
  sessionId: string | null;
  agentId: string | null;
  parentAgentId: string | null;
  /** The request comes from Claude Code: its session header, or its `claude-cli/…` user agent. */
  claudeCode: boolean;
}

const LEGACY_USER_ID = /_session_([0-9a-fA-F-]{36})$/;

/** Reads `metadata.user_id`: a JSON string with `session_id`, or the legacy `…_session_<uuid>` form. */
function sessionFromMetadata(body: unknown): string | null {
  if (typeof body !== "object" || body === null) return null;
  const metadata = (body as { metadata?: unknown }).metadata;
  if (typeof metadata !== "object" || metadata === null) return null;
  const userId = (metadata as { user_id?: unknown }).user_id;
  if (typeof userId !== "string" || userId === "") return null;
  if (userId.startsWith("{")) {
    try {
      const parsed = JSON.parse(userId) as { session_id?: unknown };
      if (typeof parsed.session_id === "string" && parsed.session_id !== "") return parsed.session_id;
    } catch {
      // Not JSON after all: fall through to the legacy form, which is a plain string.
    }
  }
  return LEGACY_USER_ID.exec(userId)?.[1] ?? null;
}

/** The identity headers of a request: all the engine ever sees of its headers. */
export interface IdentityHeaders {
  session: string | null;
  agent: string | null;
  parentAgent: string | null;
  userAgent: string | null;
  /** The fingerprint of the request's credential (credential.ts), when the relay keeps one; never the credential. */
  credential?: string | null;
}

/** The identity headers of `headers` (never anything else: credentials stay on the relay). */
export function identityHeaders(headers: Headers): IdentityHeaders {
  return {
    session: headers.get("x-claude-code-session-id"),
    agent: headers.get("x-claude-code-agent-id"),
    parentAgent: headers.get("x-claude-code-parent-agent-id"),
    userAgent: headers.get("user-agent"),
  };
}

/** Resolves identity: header first, then `metadata.user_id` (docs/DESIGN.md "The mirror"). */
export function resolveIdentity(headers: IdentityHeaders, body: unknown): RequestIdentity {
  const { session, agent, parentAgent } = headers;
  return {
    sessionId: session && session.trim() !== "" ? session.trim() : sessionFromMetadata(body),
    agentId: agent && agent.trim() !== "" ? agent.trim() : null,
    parentAgentId: parentAgent && parentAgent.trim() !== "" ? parentAgent.trim() : null,
    claudeCode: session !== null || /^claude-cli\//.test(headers.userAgent ?? ""),
  };
}

/**
 * The directory name for a session or agent id: the id itself when it is a plain name (see id-name.ts)
 * that the root does not keep for itself, else `inv-<first 16 hex of sha256(id)>`, so no id can leave the
 * root, take one of the tap's own names, or share another id's hashed directory.
 *
 * @example dirName("3f2a-…") // → "3f2a-…"; dirName("../etc") // → "inv-" + 16 hex; dirName(null) // → "unknown"
 */
export function dirName(id: string | null): string {
  if (id === null) return "unknown";
  const name = nameInside(id);
  if (name !== null && !isReservedName(name)) return name;
  return "inv-" + createHash("sha256").update(id, "utf8").digest("hex").slice(0, 16);
}
