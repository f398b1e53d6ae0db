// The mirror engine (docs/DESIGN.md "Off the relay path"): everything the mirror does besides copying bytes — reading requests, folding answers, writing the
// tree and the store, guarding Claude Code's transcripts — driven by the relay's messages.
import { randomBytes } from "node:crypto";
import { Guard } from "../guard/guard.ts";
import { Redactor } from "../protocol/secrets.ts";
import { describe } from "../utils/describe-error.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { tempSpoolPlace } from "../storage/spool.ts";
import { PgSink } from "../store/pg-sink.ts";
import type { EngineQueries, EngineSettings, FromEngine, ToEngine } from "./messages.ts";
import { Mirror, type Replayed } from "./mirror.ts";
import { engineHealth } from "./health.ts";
import { type FollowerSink, prepareRequest, ResponseFollower } from "./response-follower.ts";
import { UnseenRequests } from "./unseen.ts";

/** What the engine is given by its host. */
export interface EngineDeps {
  fs: FsAdapter;
  clock: () => number;
  /** Sends a message to the relay (a Worker's postMessage, or a call in the same thread). */
  post: (message: FromEngine) => void;
}

/** The mirror's half of a tap. */
export class MirrorEngine {
  readonly mirror: Mirror;
  readonly store: PgSink | null;
  guard: Guard | null = null;
  /** The responses being followed, by the relay's id; a message about any other id is ignored. */
  private readonly followers = new Map<number, ResponseFollower>();
  private readonly sink: FollowerSink;
  /** Requests forwarded and not mirrored (docs/DESIGN.md "Nothing forwarded unseen"). */
  private readonly unseen: UnseenRequests;
  private wrote = new Set<string>();
  private wroteTimer: ReturnType<typeof setTimeout> | null = null;
  /** A line for the tap's stderr, which the relay's thread owns. */
  private readonly stderr = (line: string) => this.deps.post({ t: "stderr", line });

  constructor(
    private readonly settings: EngineSettings,
    private readonly deps: EngineDeps,
  ) {
    // Every mirror write is told to the viewer (in the relay's thread), batched per turn of the event loop.
    const fs = observeWrites(deps.fs, (path) => this.noteWrite(path));
    const s = settings;
    // The shared store: every commit also goes there; with SESSIONTAP_STORE_ONLY only there. It logs through the mirror.
    // Keyed like exports, so one secret has one placeholder everywhere (a suite's engine without a root key gets one for the run).
    const redactor = s.redact === "off" ? null : new Redactor(s.bindingKey ?? randomBytes(32).toString("hex"));
    this.store = s.store === null ? null : new PgSink({
      url: s.store,
      fs: deps.fs,
      root: s.root,
      includeThinking: s.includeThinking,
      redactor,
      maxSessions: s.maxSessions,
      log: (action, fields) => this.mirror.log(action, fields),
      stderr: this.stderr,
      clock: deps.clock,
    });
    this.mirror = new Mirror({
      ...s, // root, maxBytes, retentionDays, maxSessions, includeThinking, sync, lockWaitMs, maxQueued
      fs,
      clock: deps.clock,
      stderr: this.stderr,
      store: this.store,
      files: !(s.store !== null && s.storeOnly),
      tempSpool: s.spoolTmpDir === null ? undefined : tempSpoolPlace(deps.fs, s.root, s.spoolTmpDir),
      bindingKey: s.bindingKey ?? null,
      redactor: s.redact === "all" ? redactor : null,
    });
    const mirror = this.mirror;
    this.sink = {
      commit: (job) => mirror.commit(job),
      skip: (reason, fields) => mirror.skip(reason, fields),
      truncated: (fields) => mirror.truncated(fields),
      gaveUp: (fields) => mirror.gaveUp(fields),
      log: (action, fields) => mirror.log(action, fields),
      clock: deps.clock,
      maxMessageBytes: settings.maxMessageBytes,
    };
    this.unseen = new UnseenRequests((action, fields) => mirror.log(action, fields));
  }

  /** Starts the guard (when on), the store, and replays what earlier runs spooled; call once, before traffic. */
  async start(): Promise<{ replayed: Replayed; guard: boolean }> {
    const s = this.settings;
    if (s.guard ?? (await this.isDirectory(s.claudeDir))) {
      const guard = (this.guard = new Guard({
        fs: this.deps.fs,
        claudeDir: s.claudeDir,
        clock: this.deps.clock,
        stderr: this.stderr,
        log: (action, fields) => this.mirror.log(action, fields),
        onAlerts: (alerts) => this.deps.post({ t: "alerts", alerts }),
        ...s.guardTimings,
      }));
      // A session a borrowed id was given is no Claude Code session of this machine's: nothing to watch.
      this.mirror.onCommitted((job) => job.split !== true && guard.observe(job));
    }
    const replayed = await this.mirror.start();
    return { replayed, guard: this.guard !== null };
  }

  /** Handles one message from the relay; never throws. */
  receive(message: ToEngine): void {
    try {
      this.handle(message);
    } catch (error) {
      this.mirror.fail(message.t === "body" ? "prepare" : message.t === "head" ? "response" : "stream", error);
      if ("id" in message && message.id !== null) this.followers.delete(message.id);
    }
  }

  private handle(m: ToEngine): void {
    switch (m.t) {
      case "begin":
        this.followers.set(m.id, new ResponseFollower(this.sink, m.identity, m.at, m.request?.model ?? null));
        return;
      case "body": {
        const copy = m.copy;
        return this.contain(
          m.id,
          "prepare",
          (f) => f.body("bytes" in copy ? prepareRequest(f.identity, copy.bytes, this.settings) : { reason: copy.skipped }),
        );
      }
      case "head":
        return this.contain(m.id, "response", (f) => f.response(m.status, m.requestId, m.framing, m.coded));
      case "chunks": {
        let at = 0;
        for (let i = 0; i < m.index.length; i += 2) {
          const id = m.index[i];
          const length = m.index[i + 1];
          const from = at;
          this.contain(id, "stream", (f) => f.feed(m.bytes.subarray(from, from + length)));
          at += length;
        }
        this.deps.post({ t: "ack", bytes: m.bytes.byteLength });
        return;
      }
      case "end":
        return this.last(m.id, (f) => f.end());
      case "cut":
        return this.last(m.id, (f) => f.cut(m.by));
      case "fail":
        this.mirror.fail(m.stage, new Error(m.error));
        if (m.id !== null) this.followers.delete(m.id);
        return;
      case "log":
        return this.mirror.log(m.action, m.fields);
      case "unseen":
        return this.unseen.note(m.shape, m.reason, m.copy, m.refused === true);
      case "query":
        void this.query(m.name, m.arg).then(
          (value) => this.deps.post({ t: "reply", q: m.q, value }),
          (error) => this.deps.post({ t: "reply", q: m.q, error: describe(error) }),
        );
        return;
    }
  }

  /** Runs the last step of a follower and forgets it. */
  private last(id: number, step: (f: ResponseFollower) => void): void {
    this.contain(id, "stream", step);
    this.followers.delete(id);
  }

  /**
   * Runs `step` for follower `id`, if it is followed; a throw forgets that follower (its response is not
   * mirrored), counted once. A skipped request is forgotten too: what the relay still sends about it is ignored.
   */
  private contain(id: number, stage: "prepare" | "response" | "stream", step: (f: ResponseFollower) => void): void {
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

  /** Answers a query of the tap's owner. */
  private async query(name: keyof EngineQueries, arg: unknown): Promise<unknown> {
    switch (name) {
      case "health": {
        const health = engineHealth(this.mirror, this.guard);
        health.mirror.notMirrored = this.unseen.report();
        return health;
      }
      case "flush":
        await this.mirror.flush(Number(arg));
        return null;
      case "stats":
        return { ...this.mirror.stats, following: this.followers.size };
      case "sweep":
        this.mirror.sweeper.maybe();
        await this.mirror.sweeper.settled();
        return null;
      case "guardInspect":
        return this.guard?.inspect(String(arg)) ?? null;
      case "guardHealth":
        return this.guard?.health() ?? null;
      case "guardLookNow":
        await this.guard?.lookNow(String(arg));
        return null;
      case "stop":
        return await this.stop(Number(arg));
    }
  }

  /** The engine's last act: stop the guard, flush (bounded), spool what could not be written, close the store. */
  async stop(boundMs: number): Promise<EngineQueries["stop"]["value"]> {
    this.guard?.stop();
    const unwritten = await this.mirror.stop(boundMs);
    this.flushWrote();
    return unwritten;
  }

  private noteWrite(path: string): void {
    this.wrote.add(path);
    if (this.wroteTimer === null) this.wroteTimer = setTimeout(() => this.flushWrote(), 0);
  }

  private flushWrote(): void {
    if (this.wroteTimer !== null) clearTimeout(this.wroteTimer);
    this.wroteTimer = null;
    if (this.wrote.size === 0) return;
    const paths = [...this.wrote];
    this.wrote = new Set();
    this.deps.post({ t: "wrote", paths });
  }

  /** True when `path` is a directory (the guard is on by default only where Claude Code keeps its config). */
  private async isDirectory(path: string): Promise<boolean> {
    try {
      return (await this.deps.fs.lstat(path))?.isDirectory === true;
    } catch (error) {
      this.stderr(`sessiontap: guard off: cannot look at ${path} (${describe(error)}); SESSIONTAP_GUARD=on turns it on anyway`);
      return false;
    }
  }
}

/** Wraps `fs` so every append, link and exclusive create that took effect calls `wrote(path)`. */
export function observeWrites(fs: FsAdapter, wrote: (path: string) => void): FsAdapter {
  // Every other operation is the wrapped adapter's own (through the prototype, so a class-based adapter keeps its methods).
  const observed: FsAdapter = Object.create(fs);
  return Object.assign(observed, {
    async append(path: string, data: string, sync: boolean) {
      await fs.append(path, data, sync);
      wrote(path);
    },
    async appendExisting(path: string, data: string, sync: boolean) {
      const appended = await fs.appendExisting(path, data, sync);
      if (appended) wrote(path);
      return appended;
    },
    async link(existing: string, path: string) {
      const linked = await fs.link(existing, path);
      if (linked) wrote(path);
      return linked;
    },
    async createExclusive(path: string, data: string, sync: boolean) {
      const created = await fs.createExclusive(path, data, sync);
      if (created) wrote(path);
      return created;
    },
  });
}
