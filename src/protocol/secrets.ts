// Secrets in a conversation (secretlint's recommended rules, and Anthropic's keys) replaced by a keyed placeholder (docs/DESIGN.md "Secrets"). Pure.
import { Buffer } from "node:buffer";
import { createHmac } from "node:crypto";
import { lintSource } from "@secretlint/core";
import { rules as recommended } from "@secretlint/secretlint-rule-preset-recommend";
import { isObject, type Json } from "./json.ts";
import { messageHash } from "./lineage.ts";

export type Finding = { index: number; kind: string; value: string };

// Each rule of the preset on its own: a preset's own rule cannot be disabled (secretlint 13.1 registers it whatever its `disabled` says).
const CONFIG = {
  rules: recommended
    // A transcript is not a file whose author may waive a finding with a `secretlint-disable` comment.
    .filter((rule) => rule.meta.id !== "@secretlint/secretlint-rule-filter-comments")
    .map((rule) => ({ id: rule.meta.id, rule, options: rule.meta.id === "@secretlint/secretlint-rule-aws" ? { enableIDScanRule: true } : {} })),
};

// What the preset lacks: Anthropic's admin keys and OAuth tokens, and an AWS secret key ending in `+` or `/` (no word boundary after it).
const OWN: [RegExp, (kind: string) => string][] = [
  [
    /(?<![\w-])sk-ant-(api|admin|oat|ort)\d\d-[\w-]{32,}/g,
    (k) => ({ api: "anthropic-api-key", admin: "anthropic-admin-key", oat: "anthropic-oauth-token" })[k] ?? "anthropic-refresh-token",
  ],
  [/(?:aws_?)?secret_?access_?key["']?\s*(?::|=>|=)\s*["']?(?<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])/gi, () => "aws-secret-access-key"],
];
// Texts are linted many at once, joined by what every rule stops at: a lint's fixed cost is most of a small one's (~0.4 ms on Bun).
const SEP = "\n\0\n";
const BATCH = 1 << 20;

const kebab = (id: string) => id.replace(/([a-z\d])([A-Z])/g, "$1-$2").replace(/([A-Z]+)([A-Z][a-z])/g, "$1-$2").replace(/_/g, "-").toLowerCase();

// A loop, since a record may nest deeper than the stack.
function mapStrings(value: unknown, swap: (s: string) => string): unknown {
  const top: Record<string, unknown> = { value };
  for (const stack: [Record<string, unknown>, string][] = [[top, "value"]]; stack.length > 0;) {
    const [parent, key] = stack.pop()!;
    const v = parent[key];
    if (typeof v === "string") parent[key] = swap(v);
    else if (Array.isArray(v) || isObject(v)) {
      const copy = (parent[key] = Array.isArray(v) ? [...v] : { ...v }) as Record<string, unknown>;
      for (const k of Object.keys(copy)) stack.push([copy, k]);
    }
  }
  return top.value;
}

export function stringsOf(value: unknown): string[] {
  const out: string[] = [];
  mapStrings(value, (s) => (out.push(s), s));
  return out;
}

export async function findSecrets(texts: readonly string[]): Promise<Finding[]> {
  const found: Finding[] = [];
  for (let first = 0, last = 0; first < texts.length; first = last) {
    for (let size = 0; last < texts.length && (last === first || size + texts[last].length <= BATCH); last++) size += texts[last].length + SEP.length;
    for (const f of await findIn(texts.slice(first, last))) found.push({ ...f, index: f.index + first });
  }
  return found;
}

async function findIn(texts: string[]): Promise<Finding[]> {
  const content = texts.join(SEP);
  const hits = OWN.flatMap(([pattern, kind]) =>
    [...content.matchAll(pattern)].map((m) => ({ at: m.index + m[0].lastIndexOf(m.groups?.secret ?? m[0]), value: m.groups?.secret ?? m[0], kind: kind(m[1]) }))
  );
  const { messages } = await lintSource({ source: { content, filePath: "record.txt", ext: ".txt", contentType: "text" }, options: { config: CONFIG } });
  for (const m of messages) {
    // A range may start at the label before the secret (the AWS secret key's does); the message's data holds the secret itself.
    const [start, end] = m.range;
    const values = Object.values(m.data ?? {}).filter((v): v is string => typeof v === "string");
    const at = values.map((v) => ({ at: content.indexOf(v, start), value: v })).find((h) => h.at >= start && h.at < end);
    hits.push({ ...(at ?? { at: start, value: content.slice(start, end) }), kind: kebab(m.messageId) });
  }
  const starts: number[] = [];
  texts.reduce((at, t) => (starts.push(at), at + t.length + SEP.length), 0);
  const found = new Map<string, Finding>();
  for (const hit of hits) {
    const index = starts.findLastIndex((s) => s <= hit.at);
    const value = hit.value.slice(0, Math.max(0, starts[index] + texts[index].length - hit.at)).trim();
    if (value !== "" && !found.has(`${index} ${value}`)) found.set(`${index} ${value}`, { index, kind: hit.kind, value });
  }
  return [...found.values()];
}

/** Replaces secrets with `[REDACTED <kind> <8 hex>]`, an HMAC under a key of the mirror root's: one secret, one placeholder. */
export class Redactor {
  private readonly key: Uint8Array;
  /** Names this key in the hashes it seals, so a record sealed under another tap's key is read by its content. */
  private readonly tag: string;

  constructor(rootKey: string) {
    this.key = createHmac("sha256", rootKey).update("sessiontap redaction key").digest();
    this.tag = createHmac("sha256", this.key).update("lineage tag").digest("hex").slice(0, 8);
  }

  /** A message hash under a pad of the record's uuid: its owner's lineage still knows the record, no one else can test a guess with it. */
  seal(uuid: string, hash: string): string {
    return `${this.tag}:${xor(hash, this.pad(uuid))}`;
  }

  unseal(record: Record<string, unknown>): string | null {
    const [tag, sealed] = typeof record.sessiontap_hash === "string" ? record.sessiontap_hash.split(":") : [];
    return tag === this.tag && typeof record.uuid === "string" && /^[0-9a-f]{64}$/.test(sealed ?? "") ? xor(sealed, this.pad(record.uuid)) : null;
  }

  private pad(uuid: string): Uint8Array {
    return createHmac("sha256", this.key).update(`lineage ${uuid}`).digest();
  }

  placeholder(kind: string, secret: string): string {
    return `[REDACTED ${kind} ${createHmac("sha256", this.key).update(secret).digest("hex").slice(0, 8)}]`;
  }

  async redact<T>(values: T[]): Promise<T[]> {
    const swaps = new Map<string, string>();
    for (const f of await findSecrets(values.flatMap((v) => stringsOf(v)))) if (!swaps.has(f.value)) swaps.set(f.value, this.placeholder(f.kind, f.value));
    if (swaps.size === 0) return values;
    const longestFirst = [...swaps].sort(([a], [b]) => b.length - a.length); // a secret inside a longer one goes with it
    const swap = (s: string) => longestFirst.reduce((text, [secret, placeholder]) => text.split(secret).join(placeholder), s);
    return values.map((v) => mapStrings(v, swap) as T);
  }
}

const xor = (hex: string, pad: Uint8Array) => Buffer.from(Buffer.from(hex, "hex").map((b, i) => b ^ pad[i])).toString("hex");

const blocksOf = (record: Json): unknown[] => (isObject(record.message) && Array.isArray(record.message.content) ? record.message.content : []);

// A thinking block that held a secret is left out (the API refuses a changed one); a changed message keeps its original hash, sealed.
export async function redactRecords<T>(records: T[], redactor: Redactor): Promise<T[]> {
  const redacted = await redactor.redact(records);
  return redacted.map((r, i) => {
    const [before, after] = [records[i] as Json, r as Json];
    if (after === before || !isObject(before.message) || !isObject(after.message) || typeof after.uuid !== "string") return r;
    const was = blocksOf(before);
    const kept = blocksOf(after).filter((b, j) => !(isObject(b) && b.type === "thinking" && b.thinking !== (was[j] as Json).thinking));
    const message = Array.isArray(after.message.content) ? { ...after.message, content: kept } : after.message;
    const hash = messageHash(before.message.role, before.message.content);
    return { ...after, message, ...(hash !== messageHash(message.role, message.content) && { sessiontap_hash: redactor.seal(after.uuid, hash) }) } as T;
  });
}
