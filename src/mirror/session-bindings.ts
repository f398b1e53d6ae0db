// Binds each session before anything is appended to it (docs/DESIGN.md "Who a session belongs to"): its first mirrored request binds it to the fingerprint of
// its credential and to its working directory (binding-files.ts keeps that, fingerprints only); a later request carrying the same session id from…
import type { CommitJob } from "../protocol/commit-job.ts";
import { dirName, judgeBinding, ownerName, type SessionBinding } from "../protocol/session-id.ts";
import type { BindingFiles } from "../storage/binding-files.ts";
import type { EventFields } from "../storage/events-log.ts";

/** What the bindings report to. */
export interface BindingSink {
  log(action: string, fields: EventFields): void;
  fail(stage: string, error: unknown, fields: EventFields): void;
  /** A request carried another owner's session id (`dir`), and went to a session of its own (`as`). */
  split(dir: string, as: string, why: string): void;
}

/** The bindings of one mirror root. */
export class SessionBindings {
  private readonly known = new Map<string, SessionBinding>();

  constructor(
    readonly files: BindingFiles,
    private readonly secret: string,
    private readonly sink: BindingSink,
    /** Bindings kept in memory at most (the least recently used are read again from their files). */
    private readonly max: number,
  ) {}

  /** The job as it is to be written: its session's own, or given a session of its own. Never rejects. */
  resolve(job: CommitJob): Promise<CommitJob> {
    if (job.base.sessionId === null || job.owner === undefined) return Promise.resolve(job);
    // A binding that cannot be read or kept is counted and said; the commit is written as it came, never lost.
    return this.judge(job).catch((error) => {
      this.sink.fail("binding", error, { dir: job.sessionDir });
      return job;
    });
  }

  private async judge(job: CommitJob): Promise<CommitJob> {
    const dir = job.sessionDir;
    const request: SessionBinding = { credential: job.owner!.credential, claims: job.owner!.claims, cwd: job.base.cwd ?? null };
    const binding = this.known.get(dir) ?? (await this.files.read(dir));
    if (binding === null) {
      let created: boolean;
      try {
        created = await this.files.create(dir, request);
      } catch (error) {
        // Not kept on disk (it is said): this process still holds the session to its first owner.
        this.sink.fail("binding", error, { dir });
        created = true;
      }
      if (created) {
        this.remember(dir, request);
        return job;
      }
      this.known.delete(dir); // another writer bound it first: judge against theirs
      return await this.judge(job);
    }
    const verdict = judgeBinding(binding, request);
    if (verdict.same) {
      if (verdict.next !== null) await this.files.replace(dir, verdict.next);
      this.remember(dir, verdict.next ?? binding);
      return job;
    }
    const ownId = `${job.base.sessionId}-from-${ownerName(this.secret, request.credential, request.cwd)}`;
    const ownDir = dirName(ownId);
    this.sink.split(dir, ownDir, verdict.why);
    this.sink.log("session-split", { dir, as: ownDir, why: verdict.why, route: job.route });
    // The session of its own is bound like any other: to this request's owner.
    return await this.resolve({ ...job, sessionDir: ownDir, base: { ...job.base, sessionId: ownId }, split: true });
  }

  /** Keeps a binding in memory, the most recently used last, at most `max`. */
  private remember(dir: string, binding: SessionBinding): void {
    this.known.delete(dir);
    this.known.set(dir, binding);
    for (const oldest of this.known.keys()) {
      if (this.known.size <= this.max) break;
      this.known.delete(oldest);
    }
  }
}
