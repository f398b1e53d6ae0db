/**
 * A filesystem adapter that says where it wrote: the mirror's writes reach the viewer's live updates at
 * once this way, instead of at its next poll (docs/DESIGN.md "The viewer").
 */
import type { FsAdapter } from "./fs-adapter.ts";

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
