// A suite whose checks all read one expensive scenario (the real Claude Code driven through the tap).
import { before } from "node:test";
import assert from "node:assert/strict";

/**
 * Drives the scenario once, before the suite's checks, and returns the check each `it` calls first: it
 * fails with the scenario's own error (and `context()`, e.g. what the stub was asked) when the drive did
 * not complete, so no check passes vacuously on a scenario that broke half way.
 */
export function driveOnce(drive: () => Promise<void>, context?: () => string): () => void {
  let failure: string | null = "the scenario did not run";
  before(async () => {
    try {
      await drive();
      failure = null;
    } catch (e) {
      if (context === undefined) {
        failure = (e as Error).message;
        throw e;
      }
      failure = `${(e as Error).message}\n${context()}`;
      throw new Error(failure);
    }
  });
  return () => assert.equal(failure, null, `the interactive scenario did not complete: ${failure}`);
}
