// A loopback stand-in for Google's metadata server, where Google's auth library gets an access token on a
// Compute Engine machine: Claude Code on Vertex AI (without CLAUDE_CODE_SKIP_VERTEX_AUTH) asks it for one
// when GCE_METADATA_HOST names it, and sends `Authorization: Bearer <token>` on every request. So a test
// sees a real Google token travel as Claude Code sends it, with no Google account and nothing off the machine.
import { createServer } from "node:http";

/** A running metadata server. */
export interface GceMetadata {
  /** What GCE_METADATA_HOST takes: `127.0.0.1:PORT`. */
  host: string;
  /** The access token it hands out. */
  token: string;
  /** How many tokens it handed out. */
  tokens(): number;
  close(): Promise<void>;
}

/** Starts a metadata server that hands out `token`. */
export async function startGceMetadata(token: string): Promise<GceMetadata> {
  let handedOut = 0;
  const server = createServer((req, res) => {
    const google = { "metadata-flavor": "Google" };
    if (req.headers["metadata-flavor"] !== "Google") {
      res.writeHead(403, google);
      return void res.end();
    }
    if ((req.url ?? "").startsWith("/computeMetadata/v1/instance/service-accounts/default/token")) {
      handedOut++;
      res.writeHead(200, { ...google, "content-type": "application/json" });
      return void res.end(JSON.stringify({ access_token: token, expires_in: 3599, token_type: "Bearer" }));
    }
    // The library first asks whether it is on Compute Engine at all: the answer's header says so.
    res.writeHead(200, { ...google, "content-type": "text/plain" });
    res.end("");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    host: `127.0.0.1:${(server.address() as { port: number }).port}`,
    token,
    tokens: () => handedOut,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}
