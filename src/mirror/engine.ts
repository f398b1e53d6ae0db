// The mirror engine (docs/DESIGN.md "Off the relay path"): everything the mirror does besides copying bytes, driven by the relay's messages;
// its public methods are what the tap's owner calls (utils/worker-call.ts).
import { randomBytes } from "node:crypto";
import { Guard, type GuardAlert, type GuardHealth } from "../guard/guard.ts";
import { Redactor } from "../protocol/secrets.ts";
import { looksLikeConversation } from "../protocol/providers/recognise.ts";
import { describe, plural } from "../utils/describe-error.ts";
import type { EventFields } from "../storage/events-log.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { PgSink, type StoreHealth } from "../store/pg-sink.ts";
import type { BodyCopy, EngineSettings, FromEngine, ToEngine } from "./messages.ts";
import { Mirror, type MirrorStats, type Replayed, type Unwritten } from "./mirror.ts";
import { mirrorProblems, storeProblems } from "./problems.ts";
import { prepareRequest, ResponseFollower } from "./response-follower.ts";

export const HEALTH_WAIT_MS = 2000;

/** The engine's part of `GET /_tap/health` (docs/DESIGN.md "Health and exit"). */
export interface EngineHealth {
  problems: string[];
  mirror: Record<string, unknown>;
  store: StoreHealth | "off";
  guard: GuardHealth | "off";
}

export interface EngineDeps {
  fs: FsAdapter;
  clock: () => number;
  post: (message: FromEngine) => void;
}

export class MirrorEngine {
  readonly mirror: Mirror;
  readonly store: PgSink | null;
  guard: Guard | null = null;
  private readonly followers = new Map<number, ResponseFollower>();
  private readonly stderr = (line: string) => this.deps.post({ t: "stderr", line });
  private readonly log = (action: string, fields?: EventFields) => this.mirror.log(action, fields);
  /** What the store and the guard are each handed. */
  private readonly around = () => ({ fs: this.deps.fs, clock: this.deps.clock, stderr: this.stderr, log: this.log });
  private readonly unseen = new UnseenRequests(this.log);

  constructor(
    private readonly settings: EngineSettings,
    private readonly deps: EngineDeps,
  ) {
    const s = settings;
    // Keyed like exports, so one secret has one placeholder everywhere (a suite's engine without a root key gets one for the run).
    const redactor = s.redact === "off" ? null : new Redactor(s.bindingKey ?? randomBytes(32).toString("hex"));
    const { store, mirrorDir: root, includeThinking, maxSessions } = s;
    this.store = store === null ? null : new PgSink({ ...this.around(), url: store, root, includeThinking, redactor, maxSessions });
    this.mirror = new Mirror(s, { fs: deps.fs, clock: deps.clock, stderr: this.stderr, store: this.store, redactor: s.redact === "all" ? redactor : null });
  }

  async start(): Promise<{ replayed: Replayed; guard: boolean }> {
    const s = this.settings;
    if (s.guard ?? (await this.isDirectory(s.claudeDir))) {
      const onAlerts = (alerts: GuardAlert[]) => this.deps.post({ t: "alerts", alerts });
      const guard = (this.guard = new Guard({ ...this.around(), claudeDir: s.claudeDir, onAlerts, ...s.guardTimings }));
      // A session a borrowed id was given is no Claude Code session of this machine's: nothing to watch.
      this.mirror.committed = (job) => job.split !== true && guard.observe(job);
    }
    const replayed = await this.mirror.start();
    return { replayed, guard: this.guard !== null };
  }

  receive(m: ToEngine): void {
    switch (m.t) {
      case "begin":
        this.followers.set(m.id, new ResponseFollower(this.mirror, m.identity, m.at, m.request?.model ?? null));
        return;
      case "body": {
        const copy = m.copy;
        return this.step(m.id, "prepare", (f) => f.body("bytes" in copy ? prepareRequest(f.identity, copy.bytes, this.settings) : { reason: copy.skipped }));
      }
      case "head":
        return this.step(m.id, "response", (f) => f.response(m.status, m.requestId, m.framing, m.coded));
      case "chunks": {
        let at = 0;
        for (let i = 0; i < m.index.length; i += 2) {
          const from = at;
          this.step(m.index[i], "stream", (f) => f.feed(m.bytes.subarray(from, from + m.index[i + 1])));
          at += m.index[i + 1];
        }
        this.deps.post({ t: "ack", bytes: m.bytes.byteLength });
        return;
      }
      case "end":
      case "cut":
        this.step(m.id, "stream", (f) => m.t === "end" ? f.end() : f.cut(m.by));
        this.followers.delete(m.id);
        return;
      case "fail":
        this.mirror.fail(m.stage, new Error(m.error));
        if (m.id !== null) this.followers.delete(m.id);
        return;
      case "log":
        return this.mirror.log(m.action, m.fields);
      case "unseen":
        return this.unseen.note(m.shape, m.reason, m.copy, m.refused === true);
    }
  }

  /** The engine's one error boundary: a throw forgets that follower (its response is not mirrored), counted once; so does a skip. */
  private step(id: number, stage: "prepare" | "response" | "stream", step: (f: ResponseFollower) => void): void {
    const follower = this.followers.get(id);
    if (follower === undefined) return;
    try {
      step(follower);
      if (follower.skipped) this.followers.delete(id);
    } catch (error) {
      this.mirror.fail(stage, error);
      this.followers.delete(id);
    }
  }

  health(): EngineHealth {
    const { mirror, guard } = this;
    const store = this.store?.health() ?? null;
    const problems = mirrorProblems(mirror.stats, mirror.alarms, mirror.queue.longestWaitMs(), mirror.locks.waiting);
    return {
      problems: [...problems, ...(store === null ? [] : storeProblems(store)), ...(guard?.problems() ?? [])],
      mirror: {
        root: mirror.root,
        ...mirror.stats,
        writes: mirror.alarms.get("writes").state(),
        eventsLog: mirror.alarms.get("eventsLog").state(),
        eventsLogFailures: mirror.events.failures,
        sessionsInMemory: mirror.writer.size,
        notMirrored: this.unseen.report(),
      },
      store: store ?? "off",
      guard: guard?.health() ?? "off",
    };
  }

  stats(): MirrorStats & { following: number } {
    return { ...this.mirror.stats, following: this.followers.size };
  }

  async stop(boundMs: number): Promise<Unwritten> {
    this.guard?.stop();
    return await this.mirror.stop(boundMs);
  }

  /** The guard is on by default only where Claude Code keeps its config. */
  private async isDirectory(path: string): Promise<boolean> {
    try {
      return (await this.deps.fs.lstat(path))?.isDirectory === true;
    } catch (error) {
      this.stderr(`sessiontap: guard off: cannot look at ${path} (${describe(error)}); SESSIONTAP_GUARD=on turns it on anyway`);
      return false;
    }
  }
}

/** `refused`: the tap answered these itself; `said`: the line doctor and the viewer show. */
type UnseenShape = { shape: string; reason: string; requests: number; refused: boolean; said: string };

/** Shapes kept apart at most; later ones are counted together, so memory stays bounded whatever paths arrive. */
const MAX_SHAPES = 64;
const OTHER = { shape: "(other paths)", reason: "more shapes than health lists" };

/** Requests forwarded and not mirrored, by path shape and reason (docs/DESIGN.md "Nothing forwarded unseen"). */
class UnseenRequests {
  private readonly shapes = new Map<string, Omit<UnseenShape, "said">>();
  private total = 0;

  constructor(private readonly log: (action: string, fields: EventFields) => void) {}

  note(shape: string, reason: string, copy: BodyCopy, refused: boolean): void {
    if (!refused && !("bytes" in copy && looksLikeConversation(copy.bytes))) return;
    const key = `${refused ? "refused" : "forwarded"} ${shape} ${reason}`;
    const first = !this.shapes.has(key) && this.shapes.size < MAX_SHAPES;
    const at = first || this.shapes.has(key) ? key : OTHER.shape;
    const entry = this.shapes.get(at) ?? (first ? { shape, reason, requests: 0, refused } : { ...OTHER, requests: 0, refused: false });
    this.shapes.set(at, entry);
    entry.requests++;
    this.total++;
    if (refused) this.log("refuse", { shape, reason, refused: entry.requests });
    else if (first) this.log("unmirrored", { shape, reason, note: "a conversation-shaped request forwarded, not mirrored; counted in health from now on" });
  }

  report(): { requests: number; shapes: UnseenShape[] } {
    const shapes = [...this.shapes.values()].sort((a, b) => b.requests - a.requests);
    const said = (s: Omit<UnseenShape, "said">) =>
      `${plural(s.requests, "request")} to ${s.shape} ${s.refused ? "refused, not forwarded" : "forwarded, not mirrored"} (${s.reason})`;
    return { requests: this.total, shapes: shapes.map((s) => ({ ...s, said: said(s) })) };
  }
}
