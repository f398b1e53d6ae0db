// Where the mirror keeps who each session belongs to (docs/DESIGN.md "Who a session belongs to"): the root's own secret, `<root>/.binding-key` (32 random
// bytes, made once, 0600, never printed), under which credentials are fingerprinted, and one small file per session, `<root>/.bindings/<session…
import { randomBytes } from "node:crypto";
import type { SessionBinding } from "../protocol/session-id.ts";
import { Redactor } from "../protocol/secrets.ts";
import type { FsAdapter } from "./fs-adapter.ts";
import { writerTag } from "./process-identity.ts";
import { join } from "node:path/posix";
import { checkTrusted, ensureTrustedDir, UnsafePathError } from "./trusted-path.ts";

/** The secret's file under the root. */
export const KEY_FILE = ".binding-key";
/** The bindings' directory under the root. */
export const BINDINGS_DIR = ".bindings";

/**
 * The root's secret: read, or made on first use. Two taps starting at once agree: it is written whole aside
 * and linked into place, never replacing one there, so the other never reads it empty or half written.
 */
export async function bindingKey(fs: FsAdapter, root: string): Promise<string> {
  const path = join(root, KEY_FILE);
  if ((await fs.lstat(path)) === null) {
    const key = randomBytes(32).toString("hex");
    const aside = `${path}.${await writerTag(fs)}-${randomBytes(4).toString("hex")}.tmp`;
    await fs.createExclusive(aside, `${key}\n`, true);
    try {
      if (await fs.link(aside, path)) return key;
    } finally {
      await fs.unlink(aside);
    }
  }
  const key = await existingBindingKey(fs, root);
  if (key === null) throw new Error(`${path} vanished while it was read`);
  return key;
}

/** The root's secret if a tap made it, else null; the launcher proves a tap with it (docs/DESIGN.md "The launcher"). */
export async function existingBindingKey(fs: FsAdapter, root: string): Promise<string | null> {
  const path = join(root, KEY_FILE);
  const info = await fs.lstat(path);
  if (info === null) return null;
  checkTrusted(path, info, "file");
  if (fs.posixModes !== false && (info.mode & 0o077) !== 0) {
    throw new UnsafePathError(`${path} can be read by other users (mode ${(info.mode & 0o777).toString(8)}); chmod 600 it`);
  }
  const key = (await fs.readText(path)).trim();
  if (!/^[0-9a-f]{64}$/.test(key)) throw new Error(`${path} does not hold a binding key; remove it and start again`);
  return key;
}

/** The redactor of what is read from `root`: keyed by the root's secret, or by one of this run's where the root has none (a store read elsewhere). */
export async function rootRedactor(fs: FsAdapter, root: string): Promise<Redactor> {
  return new Redactor((await existingBindingKey(fs, root)) ?? randomBytes(32).toString("hex"));
}

/** The bindings of one root. */
export class BindingFiles {
  constructor(
    private readonly fs: FsAdapter,
    private readonly root: string,
  ) {}

  private pathOf(sessionDir: string): string {
    return join(this.root, BINDINGS_DIR, `${sessionDir}.json`);
  }

  /** The binding of a session directory, or null when it has none (a file that is not ours or not one is refused). */
  async read(sessionDir: string): Promise<SessionBinding | null> {
    const path = this.pathOf(sessionDir);
    const info = await this.fs.lstat(path);
    if (info === null) return null;
    checkTrusted(path, info, "file");
    const value = JSON.parse(await this.fs.readText(path)) as Partial<SessionBinding>;
    const str = (v: unknown) => (typeof v === "string" ? v : null);
    return { credential: str(value.credential), claims: str(value.claims), cwd: str(value.cwd) };
  }

  /** Makes `.bindings` ready before the first session is bound. */
  async prepare(): Promise<void> {
    await ensureTrustedDir(this.fs, this.root, join(this.root, BINDINGS_DIR));
  }

  /** Binds a session first (false when another writer bound it first: read theirs). */
  async create(sessionDir: string, binding: SessionBinding): Promise<boolean> {
    await ensureTrustedDir(this.fs, this.root, join(this.root, BINDINGS_DIR));
    return await this.fs.createExclusive(this.pathOf(sessionDir), JSON.stringify(binding) + "\n", true);
  }

  /** Replaces a session's binding (a refreshed token, a working directory first named), by rename. */
  async replace(sessionDir: string, binding: SessionBinding): Promise<void> {
    await ensureTrustedDir(this.fs, this.root, join(this.root, BINDINGS_DIR));
    const path = this.pathOf(sessionDir);
    const aside = `${path}.${await writerTag(this.fs)}.tmp`;
    await this.fs.createExclusive(aside, JSON.stringify(binding) + "\n", true);
    await this.fs.rename(aside, path);
  }
}
