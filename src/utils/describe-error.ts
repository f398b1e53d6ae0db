/** Errors as one short, content-free line for stderr, health and the events log (docs/DESIGN.md "Health and exit"). */
import { networkFailure, withoutRuntimeAdvice } from "./network-error.ts";

/**
 * An error as one short, content-free line: its code (or class) and its first line, without repeating
 * the code (Bun's messages start with it), with a `cause`'s text where the message says nothing ("fetch
 * failed"), and with URLs cut to their origin (a path or query may carry a secret).
 *
 * @example describe(Object.assign(new Error("EACCES: permission denied, open '/m/s.jsonl'"), { code: "EACCES" }))
 *   // → "EACCES: permission denied, open '/m/s.jsonl'"
 */
export function describe(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  const name = error instanceof Error ? error.name : typeof error;
  let message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error ? (error as { cause?: unknown }).cause : undefined;
  if (cause instanceof Error && /^(fetch failed|network error)?$/i.test(message.trim())) message = cause.message;
  message = message.split("\n")[0].replace(/\b(https?:\/\/[^/\s)]+)[^\s)]*/g, "$1").slice(0, 200).trim();
  const label = typeof code === "string" && code !== "" ? code : name;
  // A failed connection in our words, never the runtime's (docs/DESIGN.md "Never in the way").
  const failure = networkFailure(typeof code === "string" ? code : "", name, message);
  if (failure !== null) return failure;
  message = withoutRuntimeAdvice(message);
  if (message === "" || message === label) return label;
  return message.startsWith(label) ? message : `${label}: ${message}`;
}

/**
 * describe() for an error met while answering a request: quoted text, URLs and paths are left out of the
 * message too, since a runtime's message may quote the request's URL, and a path or query may carry a
 * secret (a key pasted into a query string).
 */
export function describeBare(error: unknown): string {
  return describe(error)
    .replace(/'[^']*'?|"[^"]*"?|`[^`]*`?/g, "…")
    .replace(/\b[a-z][a-z0-9+.-]*:\/\/\S*/gi, "…")
    .replace(/(^|\s)\/\S*/g, "$1…");
}
