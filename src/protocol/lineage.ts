/**
 * Exactly-once planning (docs/DESIGN.md "Exactly once"): which of a request's messages the session has not
 * mirrored yet, and where they hang in the tree. Pure and side-effect free: it reads the session's index
 * and returns a plan; the caller advances the index only after the write succeeded.
 *
 * The index maps a message's chain hash (its content and everything before it) to the uuid of the record
 * that holds it. A request's longest mirrored prefix is found by its chain hashes, so a re-sent history is
 * never written twice, identical text at two positions is two records, and a history that forks from an
 * earlier point (a rewind or an edit) branches from the last record both versions share.
 */
import { chainHash, messageHash } from "./message-hash.ts";
import { isObject, type Json } from "./json.ts";

/** The mirrored lineage of one conversation, as planning reads it: index key → the uuid of the record holding that position. */
export interface LineageView {
  get(key: string): string | undefined;
}

/** A request message with its identity. */
export interface HashedMessage {
  role: string;
  content: unknown;
  hash: string;
  /** The conversation's position after this message (a system message does not move it). */
  chain: string | null;
  /** The index key of this message's record: its chain, or for a system message its own slot. */
  key: string;
}

/**
 * The index key of a `role:"system"` message: a slot beside the conversation position it follows.
 * System messages carry environment context that Claude Code rebuilds (or empties) on its own, so they
 * never take part in the conversation's identity; a changed one must not fork the history behind it.
 */
export function systemKey(parentChain: string | null, hash: string): string {
  return chainHash(parentChain, `system:${hash}`);
}

/** Hashes a request's `messages` in order; entries that are not messages are skipped. */
export function hashMessages(messages: unknown[]): HashedMessage[] {
  const out: HashedMessage[] = [];
  let parent: string | null = null;
  for (const m of messages) {
    if (!isObject(m) || typeof m.role !== "string") continue;
    const role = m.role;
    const hash = messageHash(role, m.content);
    if (m.role === "system") {
      out.push({ role: m.role, content: (m as Json).content, hash, chain: parent, key: systemKey(parent, hash) });
      continue;
    }
    const chain = chainHash(parent, hash);
    out.push({ role: m.role, content: (m as Json).content, hash, chain, key: chain });
    parent = chain;
  }
  return out;
}

/** What a request adds: the messages from `start` on, hanging from `parentUuid`. */
export interface Plan {
  start: number;
  parentUuid: string | null;
  /** Indexes (≥ start) of history messages the tap never saw answered: everything up to the last assistant. */
  reconstructedBefore: number;
}

/**
 * Plans a request against the session's index: longest mirrored prefix, then the new suffix.
 *
 * @example // messages [u1, a1, u2] with u1 and a1 mirrored: { start: 2, parentUuid: <a1's uuid>, … }
 */
export function planRequest(index: LineageView, messages: HashedMessage[]): Plan {
  let start = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (index.get(messages[i].key) !== undefined) {
      start = i + 1;
      break;
    }
  }
  const parentKey = start > 0 ? messages[start - 1].key : null;
  const parentUuid = parentKey !== null ? (index.get(parentKey) ?? null) : null;
  // In the new suffix, everything up to and including its last assistant message is history the tap never
  // saw answered (it started mid-session, or a write was lost); the trailing user turn is what is new.
  let reconstructedBefore = start;
  for (let i = messages.length - 1; i >= start; i--) {
    if (messages[i].role === "assistant") {
      reconstructedBefore = i + 1;
      break;
    }
  }
  return { start, parentUuid, reconstructedBefore };
}
