/** Raw HTTP for the tests that need bytes no client library would send. */
import { connect } from "node:net";

/** Sends `raw` on a fresh connection and reads until the server closes it (or `ms` pass); returns what came back. */
export function rawExchange(port: number, raw: string | Uint8Array, ms = 5000): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const socket = connect(port, "127.0.0.1", () => socket.write(raw));
    const timer = setTimeout(() => socket.destroy(), ms);
    socket.on("data", (chunk) => (text += chunk.toString("latin1")));
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(text);
    });
  });
}

/** The status code of a raw HTTP answer (0 when none came). */
export const statusOf = (answer: string) => Number(/^HTTP\/1\.[01] (\d{3})/.exec(answer)?.[1] ?? 0);
