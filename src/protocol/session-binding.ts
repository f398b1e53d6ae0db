/**
 * A session's identity, bound before anything is appended to it, and whether a request may append to it
 * (docs/DESIGN.md "Who a session belongs to"). Pure.
 *
 * A session is bound, by its first mirrored request, to the fingerprint of the credential that opened it
 * and to its working directory. A later request of the same session id is the same owner when:
 * - its working directory is the bound one (or either is unknown: a title request names none), and
 * - its credential is the bound one — or, for a bearer token, which Claude Code's OAuth refresh replaces in
 *   a long session, another bearer token of the same account and device (`metadata.user_id`), the binding
 *   then moving to the new token. An API key does not change between a user's requests; a request with
 *   another key, or none, is someone else.
 * Anything else is someone else's request carrying this session's id: it starts a session of its own and
 * never becomes a branch of this one (what `restore` brings back).
 */
import { kindOf } from "./session-id.ts";

/** What a session is bound to (fingerprints only, never a credential). */
export interface SessionBinding {
  credential: string | null;
  /** The account and device the opening request named (bearer tokens only need it), or null. */
  claims: string | null;
  cwd: string | null;
}

/** Who a request says it is. */
export type RequestOwner = SessionBinding;

/** The verdict on one request: the same owner (`next`: the binding to keep, when it changed), or another one (`why`). */
export type BindingVerdict =
  | { same: true; next: SessionBinding | null }
  | { same: false; why: "credential" | "cwd" };

/** Judges `request` against the session's `binding`. */
export function judgeBinding(binding: SessionBinding, request: RequestOwner): BindingVerdict {
  if (binding.cwd !== null && request.cwd !== null && binding.cwd !== request.cwd) return { same: false, why: "cwd" };
  const sameCredential = binding.credential === request.credential;
  const refreshed = !sameCredential && binding.credential !== null && request.credential !== null &&
    kindOf(binding.credential) === "bearer" && kindOf(request.credential) === "bearer" &&
    binding.claims !== null && !binding.claims.startsWith("device:") && binding.claims === request.claims;
  if (!sameCredential && !refreshed) return { same: false, why: "credential" };
  // Without a credential only the claims and the working directory tell the owner: what the binding holds must be matched.
  if (request.credential === null && binding.claims !== null && request.claims !== binding.claims) return { same: false, why: "credential" };
  if (request.credential === null && binding.claims === null && binding.cwd !== null && request.cwd === null) return { same: false, why: "cwd" };
  const next = {
    credential: request.credential,
    claims: binding.claims ?? request.claims,
    cwd: binding.cwd ?? request.cwd,
  };
  const changed = next.credential !== binding.credential || next.claims !== binding.claims || next.cwd !== binding.cwd;
  return { same: true, next: changed ? next : null };
}
