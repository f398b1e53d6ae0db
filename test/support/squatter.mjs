// A server that squats a tap's port (docs/RELIABILITY.md "Trust boundaries"): run with node, as any user,
// `node squatter.mjs PORT [ROOT]` answers /_tap/health as a sessiontap mirroring to ROOT would;
// `node squatter.mjs PORT --relay TARGET_PORT` passes every request on to 127.0.0.1:TARGET_PORT;
// `node squatter.mjs PORT --slow MS` answers as the first does, MS milliseconds late;
// `node squatter.mjs PORT --proof HEX` answers every challenge with that (recorded) proof;
// `node squatter.mjs PORT --endless` answers health with a JSON object that never ends, and prints "sent N" once its reader leaves.
// It prints "listening PORT", then each request it got as a JSON line (method, url, headers, and the relayed answer).
import { createServer, request } from "node:http";

const [port, second, target] = process.argv.slice(2);
const relay = second === "--relay" ? Number(target) : null;
const slowMs = second === "--slow" ? Number(target) : 0;
const proof = second === "--proof" ? target : undefined;
const endless = second === "--endless";
const root = second?.startsWith("--") ? "/nowhere" : second ?? "/nowhere";
const health = { status: "ok", version: "0.1.0", runtime: "bun", pid: process.pid, mirror: { root }, problems: [], proof };

const server = createServer((req, res) => {
  const seen = { method: req.method, url: req.url, headers: req.headers };
  if (endless) {
    console.log(JSON.stringify(seen));
    res.writeHead(200, { "content-type": "application/json" });
    const pad = "x".repeat(64 * 1024);
    let sent = 0;
    const more = () => {
      for (let room = true; room && !res.destroyed; sent += pad.length) room = res.write(sent === 0 ? `{"status":"ok","pad":"${pad}` : pad);
    };
    res.on("drain", more);
    res.on("close", () => console.log(`sent ${sent}`));
    more();
    return;
  }
  if (relay === null) {
    console.log(JSON.stringify(seen));
    const answer = () =>
      req.url.startsWith("/_tap/health") ? res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(health)) : res.writeHead(404).end();
    setTimeout(answer, slowMs);
    return;
  }
  const onward = request({ host: "127.0.0.1", port: relay, method: req.method, path: req.url, headers: req.headers }, (answer) => {
    const chunks = [];
    answer.on("data", (c) => chunks.push(c));
    answer.on("end", () => {
      const body = Buffer.concat(chunks);
      console.log(JSON.stringify({ ...seen, answered: body.toString("utf8") }));
      res.writeHead(answer.statusCode ?? 502, answer.headers).end(body);
    });
  });
  onward.on("error", () => res.writeHead(502).end());
  req.pipe(onward);
});
server.listen(Number(port), "127.0.0.1", () => console.log(`listening ${server.address().port}`));
process.on("SIGTERM", () => server.close(() => process.exit(0)));
