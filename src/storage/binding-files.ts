// Who each session belongs to (docs/DESIGN.md "Who a session belongs to"): the root's secret `<root>/.binding-key` (32 random bytes, 0600,
// never printed), under which credentials are fingerprinted, and one file per session, `<root>/.bindings/<session>.json`.
import { randomBytes } from "node:crypto";
import type { SessionBinding } from "../protocol/session-id.ts";
import { Redactor } from "../protocol/secrets.ts";
import type { FsAdapter } from "./fs-adapter.ts";
import { publishNew, replaceFile } from "./publish.ts";
import { join } from "node:path/posix";
import { checkTrusted, ensureTrustedDir, UnsafePathError } from "./trusted-path.ts";

export const KEY_FILE = ".binding-key";
const BINDINGS_DIR = ".bindings";

/** Read, or made on first use; written aside and linked into place, so two taps starting at once agree and never read it half written. */
export async function bindingKey(fs: FsAdapter, root: string): Promise<string> {
  const path = join(root, KEY_FILE);
  if ((await fs.lstat(path)) === null) {
    const key = randomBytes(32).toString("hex");
    if ((await publishNew(fs, path, `${key}\n`)).kind === "created") return key;
  }
  const key = await existingBindingKey(fs, root);
  if (key === null) throw new Error(`${path} vanished while it was read`);
  return key;
}

/** Null until a tap made it; the launcher proves a tap with it (docs/DESIGN.md "The launcher"). */
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

/** Keyed by the root's secret, or by one of this run's where the root has none (a store read elsewhere). */
export async function rootRedactor(fs: FsAdapter, root: string): Promise<Redactor> {
  return new Redactor((await existingBindingKey(fs, root)) ?? randomBytes(32).toString("hex"));
}

export class BindingFiles {
  constructor(
    private readonly fs: FsAdapter,
    private readonly root: string,
  ) {}

  private pathOf(sessionDir: string): string {
    return join(this.root, BINDINGS_DIR, `${sessionDir}.json`);
  }

  /** Null when the session has none; a file that is not ours or not one is refused. */
  async read(sessionDir: string): Promise<SessionBinding | null> {
    const path = this.pathOf(sessionDir);
    const info = await this.fs.lstat(path);
    if (info === null) return null;
    checkTrusted(path, info, "file");
    const value = JSON.parse(await this.fs.readText(path)) as Partial<SessionBinding>;
    const str = (v: unknown) => (typeof v === "string" ? v : null);
    return { credential: str(value.credential), claims: str(value.claims), cwd: str(value.cwd) };
  }

  prepare(): Promise<void> {
    return ensureTrustedDir(this.fs, this.root, join(this.root, BINDINGS_DIR));
  }

  /** False when another writer bound it first: read theirs. */
  async create(sessionDir: string, binding: SessionBinding): Promise<boolean> {
    await this.prepare();
    return await this.fs.createExclusive(this.pathOf(sessionDir), JSON.stringify(binding) + "\n", true);
  }

  async replace(sessionDir: string, binding: SessionBinding): Promise<void> {
    await this.prepare();
    await replaceFile(this.fs, this.pathOf(sessionDir), JSON.stringify(binding) + "\n");
  }
}
