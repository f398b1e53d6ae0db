/**
 * A blind tunnel (docs/DESIGN.md "Proxy mode"): for a host the proxy does not know, the CONNECT is answered
 * once the host is reached, and bytes then flow both ways untouched — the proxy never decrypts, reads or
 * keeps them. A host that cannot be reached within the bound gets a 502 and one events-log line.
 */
import { connect, type Socket } from "node:net";
import { describe } from "../utils/describe-error.ts";
import { plainAnswer, writeTo } from "./http-response.ts";
import type { ProxyStats } from "./proxy-stats.ts";
import type { SocketReader } from "./socket-reader.ts";

/** The answer to a CONNECT whose tunnel is open (RFC 9110 §9.3.6: no framing headers). */
export const ESTABLISHED = "HTTP/1.1 200 Connection Established\r\n\r\n";

/** Opens a tunnel from `client` to `host:port`; resolves once both sides are closed. */
export function tunnel(client: Socket, reader: SocketReader, host: string, port: number, deps: { stats: ProxyStats; timeoutMs: number }): Promise<void> {
  return new Promise((resolve) => {
    const upstream = connect({ host, port });
    let open = false;
    let closed = 0;
    const closedOne = () => ++closed === 2 && resolve();
    const timer = setTimeout(() => upstream.destroy(new Error(`no connection within ${deps.timeoutMs} ms`)), deps.timeoutMs);
    upstream.once("connect", async () => {
      clearTimeout(timer);
      open = true;
      upstream.setNoDelay(true);
      if (!(await writeTo(client, ESTABLISHED))) return void upstream.destroy();
      deps.stats.tunnel();
      for (const bytes of reader.detach()) upstream.write(bytes);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.on("error", async (error) => {
      clearTimeout(timer);
      if (open) return void client.destroy();
      deps.stats.refused("unreachable", 502);
      await writeTo(client, plainAnswer(502, `${host}:${port} could not be reached (${describe(error)})`));
      client.end();
    });
    client.on("error", () => upstream.destroy());
    client.on("close", () => {
      upstream.destroy();
      closedOne();
    });
    upstream.on("close", () => {
      if (open) client.destroy();
      closedOne();
    });
  });
}
