/**
 * Writing bytes whole (docs/DESIGN.md "Writes"): the kernel may take only part of a write on a filling
 * disk and say so only by the count it returns (Bun, Node), or the runtime's own loop throws after
 * writing part (Deno). Either way the write goes on until every byte is taken or it fails, and a failure
 * leaves no part behind to be read later as a record.
 */

/** What writing whole needs of an open file. */
export interface WritableFile {
  /** One write of what it can of `bytes`; resolves with how many bytes that was. */
  write(bytes: Uint8Array): Promise<number>;
  size(): Promise<number>;
  truncate(size: number): Promise<void>;
  datasync(): Promise<void>;
}

/**
 * A write that stopped part-way: the kernel took some of the bytes, then nothing more (a disk that filled
 * up). The part that reached the file has been cut back off, or the file removed when the write made it.
 */
export class ShortWriteError extends Error {
  override name = "ShortWriteError";
  /** The next write's own error code (ENOSPC), or EIO when it wrote nothing and said nothing. */
  readonly code: string;

  constructor(path: string, written: number, total: number, cause: unknown) {
    const code = (cause as { code?: unknown } | null)?.code;
    const why = cause === null ? "the next write wrote nothing" : String((cause as Error).message ?? cause).replace(/^[A-Z]+: /, "");
    super(`${typeof code === "string" ? code : "EIO"}: wrote ${written} of ${total} bytes to ${path} (${why})`);
    this.code = typeof code === "string" ? code : "EIO";
  }
}

/**
 * Writes all of `data` to `file`, one write after another until every byte is taken, and fsyncs when
 * asked. A write that stops part-way is a ShortWriteError, and what it appended is cut back off — unless
 * more is there than it could have written (another process appended meanwhile; the next catch-up moves
 * the torn line aside). `created`: the file is new and this write's alone (the caller removes it).
 */
export async function writeWhole(file: WritableFile, path: string, data: string, sync: boolean, created: boolean): Promise<void> {
  const bytes = new TextEncoder().encode(data);
  const before = created ? 0 : await file.size();
  let done = 0;
  try {
    while (done < bytes.length) {
      const wrote = await file.write(bytes.subarray(done));
      if (!(wrote > 0)) throw new ShortWriteError(path, done, bytes.length, null);
      done += wrote;
    }
  } catch (error) {
    // Deno's write throws after writing part, so the file's size says what reached it.
    const reached = await file.size().then((size) => size - before, () => done);
    if (!created && reached > 0 && reached <= bytes.length) await file.truncate(before).catch(() => undefined);
    if (error instanceof ShortWriteError || reached <= 0) throw error;
    throw new ShortWriteError(path, reached, bytes.length, error);
  }
  if (sync) await file.datasync();
}
