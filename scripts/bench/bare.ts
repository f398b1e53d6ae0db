// The runtime's own floor for a relay (`npm run bench`, targets bare-bun, bare-deno, bare-deno-native): a
// server that forwards to the stub and streams the answer back through a pull source that copies every
// chunk into a staging buffer, as the tap's relay does with the mirror on, and does nothing else — no
// mirror, no header rules, no health. What the tap costs beyond this is the tap's; what this costs beyond
// direct is the runtime's. BARE_MODE picks the stream shape: pull (default), native (no JavaScript per
// chunk), transform (pipeThrough), from (ReadableStream.from), bytes (a byte source), byob (a BYOB reader
// of 64 KiB reads) — docs/BENCHMARKS.md records what each cost on Deno. Run: `bun scripts/bench/bare.ts
// UPSTREAM` or `deno run -A scripts/bench/bare.ts UPSTREAM`; prints "listening http://127.0.0.1:PORT".
const g = globalThis as unknown as {
  Bun?: { serve(o: unknown): { port: number }; argv: string[] };
  Deno?: { serve(o: unknown, h: (r: Request) => Promise<Response>): { addr: { port: number } }; args: string[] };
};
const upstream = g.Deno ? g.Deno.args[0] : g.Bun!.argv[2];

/** The stream shape under test (BARE_MODE): each copies every chunk and passes it on. */
const MODE = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env.BARE_MODE ?? "pull";

/** `source` relayed with `copy` called on every chunk, in the shape MODE names. */
function relay(source: ReadableStream<Uint8Array>, copy: (chunk: Uint8Array) => void): ReadableStream<Uint8Array> {
  if (MODE === "native") return source;
  if (MODE === "transform") {
    return source.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          copy(chunk);
          controller.enqueue(chunk);
        },
      }),
    );
  }
  if (MODE === "from") {
    const from = (ReadableStream as unknown as { from(it: AsyncIterable<Uint8Array>): ReadableStream<Uint8Array> }).from;
    return from((async function* () {
      for await (const chunk of source as unknown as AsyncIterable<Uint8Array>) {
        copy(chunk);
        yield chunk;
      }
    })());
  }
  if (MODE === "byob") {
    // Reads whatever has arrived into one buffer (several of the upstream's chunks at once when they queue up).
    const reader = source.getReader({ mode: "byob" });
    return new ReadableStream<Uint8Array>({
      async pull(controller) {
        const r = await reader.read(new Uint8Array(64 * 1024));
        if (r.done) return controller.close();
        copy(r.value!);
        controller.enqueue(r.value!);
      },
      cancel: (reason) => reader.cancel(reason),
    }, { highWaterMark: 0 });
  }
  const reader = source.getReader();
  return new ReadableStream<Uint8Array>({
    ...(MODE === "bytes" ? { type: "bytes" as const } : {}),
    async pull(controller) {
      const r = await reader.read();
      if (r.done) return controller.close();
      copy(r.value);
      controller.enqueue(r.value as Uint8Array<ArrayBuffer>);
    },
    cancel: (reason) => reader.cancel(reason),
  } as UnderlyingDefaultSource<Uint8Array>, MODE === "bytes" ? undefined : { highWaterMark: 0 });
}

/** One staging buffer shared by every stream, as the tap's relay has (src/tap/engine-link.ts). */
let staging = new Uint8Array(256 * 1024);
let staged = 0;
const copy = (chunk: Uint8Array) => {
  if (staged + chunk.byteLength > staging.byteLength) {
    if (chunk.byteLength > staging.byteLength) staging = new Uint8Array(chunk.byteLength);
    staged = 0;
  }
  staging.set(chunk, staged);
  staged += chunk.byteLength;
};

async function handler(request: Request): Promise<Response> {
  const url = new URL(request.url);
  if (url.pathname === "/_tap/health") return new Response("{}", { headers: { "content-type": "application/json" } });
  const headers = new Headers(request.headers);
  headers.delete("host");
  const hasBody = request.method !== "GET" && request.method !== "HEAD";
  const init = { method: request.method, headers, body: hasBody ? request.body : null, duplex: "half", redirect: "manual", timeout: false };
  const res = await fetch(upstream + url.pathname + url.search, init as RequestInit);
  if (res.body === null) return new Response(null, { status: res.status, headers: res.headers });
  const body = relay(res.body, copy);
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
