// A test tap with its forward proxy on (docs/DESIGN.md "Proxy mode"): its CA in a scratch directory of its
// own, removed when the tap closes, and the hosts named sent to the test's upstream instead of the real ones.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import type { TapDeps } from "../../src/cli/start-tap.ts";
import { startTestTap, type TestTap } from "./tap.ts";

/** A tap in proxy mode, with its proxy's port and its CA's certificate (what NODE_EXTRA_CA_CERTS names). */
export interface ProxyTap extends TestTap {
  proxyPort: number;
  caPem: string;
}

/** Starts a tap whose proxy sends `hosts` to `upstream` (which is its base-URL upstream too); `env` adds settings. */
export async function startProxyTap(upstream: string, hosts: string[], env: Record<string, string> = {}, deps: TapDeps = {}): Promise<ProxyTap> {
  const dir = mkdtempSync(`${tmpdir()}/sessiontap-ca-`);
  const routes: Record<string, string> = hosts.length === 0 ? {} : { SESSIONTAP_PROXY_UPSTREAM: hosts.map((h) => `${h}=${upstream}`).join(",") };
  const tap = await startTestTap(upstream, { SESSIONTAP_PROXY_PORT: "0", SESSIONTAP_CA_DIR: `${dir}/ca`, ...routes, ...env }, deps).catch((error) => {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  const close = async () => {
    await tap.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { ...tap, proxyPort: tap.proxy!.port, caPem: readFileSync(tap.proxy!.ca.certPath, "utf8"), close, [Symbol.asyncDispose]: close };
}
