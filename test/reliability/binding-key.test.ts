// The root's binding key when two taps make it at once (docs/DESIGN.md "Who a session belongs to"): both get
// the same key, and neither reads the file while it is empty. The real filesystem, with the one step a
// kernel does not make atomic drawn out: a file created exclusively exists, empty, before its bytes land.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { bindingKey, KEY_FILE } from "../../src/storage/binding-files.ts";
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";
import { scratchDir } from "../support/recover.ts";

/** The real adapter, but a file made exclusively stays empty until the other tap has read the root's key, has settled,
 *  or is holding its own file empty too: the window a kernel leaves open, opened on every round. */
function drawnOut(): { fs: FsAdapter; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  let holding = 0;
  const fs: FsAdapter = {
    ...nodeFs,
    async createExclusive(path, data, sync) {
      if (!(await nodeFs.createExclusive(path, "", sync))) return false;
      if (++holding === 2) open();
      await opened;
      return await nodeFs.appendExisting(path, data, sync);
    },
    async readText(path) {
      try {
        return await nodeFs.readText(path);
      } finally {
        open();
      }
    },
  };
  return { fs, open };
}

describe("the binding key", () => {
  it("two taps making it at once get one key, and neither reads it half made", async () => {
    const scratch = scratchDir("sessiontap-binding-key-");
    try {
      for (let round = 0; round < 5; round++) {
        const root = `${scratch.dir}/root-${round}`;
        await nodeFs.mkdir(root, 0o700);
        const { fs, open } = drawnOut();
        const [a, b] = await Promise.all([bindingKey(fs, root).finally(open), bindingKey(fs, root).finally(open)]);
        assert.match(a, /^[0-9a-f]{64}$/);
        assert.equal(b, a, "one key for the root");
        assert.equal(await bindingKey(nodeFs, root), a, "the one on disk");
        assert.equal(statSync(`${root}/${KEY_FILE}`).mode & 0o777, 0o600);
        assert.deepEqual((await nodeFs.readdir(root)).map((e) => e.name), [KEY_FILE], "nothing left aside");
      }
    } finally {
      scratch.cleanup();
    }
  });
});
