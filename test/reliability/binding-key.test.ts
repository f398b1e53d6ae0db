// The root's binding key when two taps make it at once (docs/DESIGN.md "Who a session belongs to"): both get
// the same key, and neither reads the file while it is empty. The real filesystem, with the one step a
// kernel does not make atomic drawn out: a file created exclusively exists, empty, before its bytes land.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { bindingKey, KEY_FILE } from "../../src/storage/binding-files.ts";
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";
import { scratchDir } from "../support/recover.ts";

/** The real adapter, but a file made exclusively stays empty for a while before its bytes are written. */
const slowCreate: FsAdapter = {
  ...nodeFs,
  async createExclusive(path, data, sync) {
    if (!(await nodeFs.createExclusive(path, "", sync))) return false;
    await new Promise((resolve) => setTimeout(resolve, 30));
    return await nodeFs.appendExisting(path, data, sync);
  },
};

describe("the binding key", () => {
  it("two taps making it at once get one key, and neither reads it half made", async () => {
    const scratch = scratchDir("sessiontap-binding-key-");
    try {
      for (let round = 0; round < 5; round++) {
        const root = `${scratch.dir}/root-${round}`;
        await nodeFs.mkdir(root, 0o700);
        const [a, b] = await Promise.all([bindingKey(slowCreate, root), bindingKey(slowCreate, root)]);
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
