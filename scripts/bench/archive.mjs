// A large mirror archive for the viewer's search (the gap scenario's third part): many finished sessions
// of Claude Code records, as the tap writes them, so that `GET /_tap/api/search` has a year of use to read.
// Deterministic: the same sessions, words and times every run. Written once per bench run and copied into
// each tap target's mirror root before it starts.
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const WORDS = ("the a tool file read write test build error value function module return import export change line branch commit " +
  "request answer stream event session mirror record message prompt model token cache system user assistant result output").split(" ");

/** A text of about `bytes` characters from the word list, seeded by `seed`. */
function text(seed, bytes) {
  let x = seed * 2654435761 >>> 0;
  const words = [];
  let n = 0;
  while (n < bytes) {
    x = (x * 1103515245 + 12345) >>> 0;
    const w = WORDS[x % WORDS.length];
    words.push(w);
    n += w.length + 1;
  }
  return words.join(" ");
}

/** The search term the bench looks for: in one record of every 50th session. */
export const ARCHIVE_QUERY = "zebracorn";

/**
 * Writes `sessions` sessions of `records` records each (user and assistant alternating, ~`recordBytes`
 * of text each) under `dir` (0700 directories, 0600 files); resolves with the bytes written.
 */
export function writeArchive(dir, { sessions = 1000, records = 40, recordBytes = 1000 } = {}) {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  let total = 0;
  const start = Date.parse("2026-01-01T00:00:00.000Z");
  for (let s = 0; s < sessions; s++) {
    const sessionId = `00000000-0000-4000-8000-${String(s).padStart(12, "0")}`;
    const lines = [];
    let parent = null;
    for (let r = 0; r < records; r++) {
      const uuid = `${sessionId.slice(0, 24)}${String(s * records + r).padStart(12, "0")}`;
      const user = r % 2 === 0;
      const body = text(s * records + r, recordBytes) + (s % 50 === 0 && r === 2 ? ` ${ARCHIVE_QUERY}` : "");
      const content = user ? body : [{ type: "text", text: body }];
      const message = user ? { role: "user", content } : {
        type: "message",
        role: "assistant",
        id: `msg_${uuid}`,
        model: "claude-sonnet-4-5",
        content,
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 200 },
      };
      lines.push(JSON.stringify({
        parentUuid: parent,
        isSidechain: false,
        type: user ? "user" : "assistant",
        uuid,
        timestamp: new Date(start + s * 3_600_000 + r * 10_000).toISOString(),
        sessionId,
        cwd: `/home/user/project-${s % 20}`,
        version: "2.1.332",
        userType: "external",
        entrypoint: "cli",
        message,
        source: "sessiontap",
      }));
      parent = uuid;
    }
    const sessionDir = join(dir, sessionId);
    mkdirSync(sessionDir, { mode: 0o700 });
    const data = lines.join("\n") + "\n";
    writeFileSync(join(sessionDir, "2026-01-01T00-00-00.000Z.jsonl"), data, { mode: 0o600 });
    total += data.length;
  }
  return total;
}

/** Copies the archive at `from` into the mirror root `to` (made 0700 when absent). */
export function copyArchive(from, to) {
  mkdirSync(to, { recursive: true, mode: 0o700 });
  cpSync(from, to, { recursive: true });
}
