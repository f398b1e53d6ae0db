/**
 * Where the local CA lives (docs/DESIGN.md "The local CA"): `ca-key.pem` (the private key and its
 * certificate, 0600) and `ca.pem` (the certificate alone, what NODE_EXTRA_CA_CERTS names), in a directory
 * of the user's own, 0700. Made on first use; made again, replacing the old, when it no longer covers the
 * hosts the proxy terminates or nears its end. A key file open to other users, or not this user's, stops
 * the start: a key others could read is a key others could sign with.
 */
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { ensurePrivateDir } from "../storage/private-dir.ts";
import { currentUid, untrusted } from "../storage/trusted-path.ts";
import { caProblem, createCa, type LocalCa, readCa } from "./certificates.ts";
import { ProxyStartError } from "./proxy-error.ts";

/** The key file's name in the CA directory. */
export const CA_KEY_FILE = "ca-key.pem";
/** The certificate's name in the CA directory. */
export const CA_CERT_FILE = "ca.pem";

/** A CA ready to sign, where it lives, and what this start did to it. */
export interface StoredCa {
  ca: LocalCa;
  certPath: string;
  keyPath: string;
  /** "made": none was there; a phrase: why the old one was replaced; null: the one there was used. */
  made: "made" | string | null;
}

/** Reads the key file, after checking it is this user's regular file and closed to others. */
async function readKeyFile(fs: FsAdapter, path: string): Promise<LocalCa | null> {
  const info = await fs.lstat(path);
  if (info === null) return null;
  const why = untrusted(info, "file") ??
    (fs.posixModes !== false && currentUid() >= 0 && (info.mode & 0o077) !== 0 ? `is open to other users (mode ${(info.mode & 0o777).toString(8)})` : null);
  if (why !== null) throw new ProxyStartError(`the proxy's CA key ${path} ${why}; fix it (chmod 600) or remove it, and a new CA is made`);
  try {
    return await readCa(await fs.readText(path));
  } catch (error) {
    throw new ProxyStartError(`the proxy's CA key ${path} cannot be used (${(error as Error).message}); remove it, and a new CA is made`);
  }
}

/** Writes `text` beside `path` under a fresh name (0600, fsynced) and returns that name. */
async function writeAside(fs: FsAdapter, dir: string, name: string, text: string): Promise<string> {
  const aside = `${dir}/.${name}.${crypto.randomUUID()}.tmp`;
  if (!(await fs.createExclusive(aside, text, true))) throw new ProxyStartError(`${aside} already exists`);
  return aside;
}

/** Loads the CA in `dir` constrained to at least `names`, making or replacing it as needed. */
export async function loadOrMakeCa(fs: FsAdapter, dir: string, names: readonly string[], now: number): Promise<StoredCa> {
  const parent = dir.replace(/\/+[^/]+\/*$/, "") || "/";
  await fs.mkdir(parent, 0o700);
  try {
    await ensurePrivateDir(fs, dir);
  } catch (error) {
    throw new ProxyStartError(`the proxy's CA directory ${(error as Error).message} (chmod 700 it, or set SESSIONTAP_CA_DIR)`);
  }
  const keyPath = `${dir}/${CA_KEY_FILE}`;
  const certPath = `${dir}/${CA_CERT_FILE}`;
  let ca = await readKeyFile(fs, keyPath);
  let made: StoredCa["made"] = null;
  const problem = ca === null ? null : caProblem(ca, names, now);
  if (ca === null || problem !== null) {
    const aside = await writeAside(fs, dir, CA_KEY_FILE, await createCa(names, now));
    if (ca === null) {
      // Two taps starting at once: the first link wins and the other reads the winner's.
      const linked = await fs.link(aside, keyPath);
      await fs.unlink(aside);
      made = linked ? "made" : null;
    } else {
      await fs.rename(aside, keyPath);
      made = problem;
    }
    ca = await readKeyFile(fs, keyPath);
    if (ca === null) throw new ProxyStartError(`the proxy's CA key ${keyPath} vanished while it was being made`);
  }
  const current = (await fs.lstat(certPath))?.isFile ? await fs.readText(certPath).catch(() => "") : "";
  if (current !== ca.certPem) await fs.rename(await writeAside(fs, dir, CA_CERT_FILE, ca.certPem), certPath);
  return { ca, certPath, keyPath, made };
}
