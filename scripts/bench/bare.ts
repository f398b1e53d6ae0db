// The runtime's own floor for a relay that runs JavaScript per chunk (`npm run bench`, targets bare-bun and
// bare-deno): a server that forwards to the stub and streams the answer back through a pull source that
// copies every chunk into a staging buffer, as the tap's relay does with the mirror on, and does nothing
// else — no mirror, no headers rules, no health. What the tap costs beyond this is the tap's; what this
// costs beyond direct is the runtime's. Run: `bun scripts/bench/bare.ts UPSTREAM` or
// `deno run -A scripts/bench/bare.ts UPSTREAM`; prints "listening http://127.0.0.1:PORT".
const g = globalThis as unknown as {
  Bun?: { serve(o: unknown): { port: number }; argv: string[] };
  Deno?: { serve(o: unknown, h: (r: Request) => Promise<Response>): { addr: { port: number } }; args: string[] };
};
const upstream = g.Deno ? g.Deno.args[0] : g.Bun!.argv[2];

async function handler(request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname === "/_tap/health") return new Response("{}", { headers: { "content-type": "application/json" } });
  const headers = new Headers(request.headers);
  headers.delete("host");
  const hasBody = request.method !== "GET" && request.method !== "HEAD";
  const init = { method: request.method, headers, body: hasBody ? request.body : null, duplex: "half", redirect: "manual", timeout: false };
  const res = await fetch(upstream + url.pathname + url.search, init as RequestInit);
  if (res.body === null) return new Response(null, { status: res.status, headers: res.headers });
  const reader = res.body.getReader();
  let staging = new Uint8Array(256 * 1024);
  let staged = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const r = await reader.read();
      if (r.done) return controller.close();
      if (staged + r.value.byteLength > staging.byteLength) {
        staging = new Uint8Array(Math.max(staging.byteLength, r.value.byteLength));
        staged = 0;
      }
      staging.set(r.value, staged);
      staged += r.value.byteLength;
      controller.enqueue(r.value);
    },
    cancel: (reason) => reader.cancel(reason),
  }, { highWaterMark: 0 });
  const out = new Headers(res.headers);
  out.delete("content-encoding");
  out.delete("content-length");
  return new Response(body, { status: res.status, headers: out });
}

if (g.Deno) {
  const server = g.Deno.serve({ port: 0, hostname: "127.0.0.1", onListen() {} }, handler);
  console.log(`listening http://127.0.0.1:${server.addr.port}`);
} else {
  const server = g.Bun!.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 0, fetch: handler });
  console.log(`listening http://127.0.0.1:${server.port}`);
}
