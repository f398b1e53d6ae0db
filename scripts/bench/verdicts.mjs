// The bench's targets, each met or missed — reported, never asserted. Issue 8 set the first ones (the tap
// against direct and nginx); issue 14 the mirror's (free on the relay path, proportional to what is new,
// Deno first-class). Ratios are taken within one repetition, then the median over repetitions is judged.
import { num, spread } from "./report.mjs";
import { DELTA_BYTES, PACED_DELTAS } from "./workload.mjs";

const verdict = (ok) => (ok === null ? "n/a" : ok ? "**met**" : "**missed**");
const pct = (x) => `${(x * 100).toFixed(0)} %`;

/** The rows of the targets table: [who, target, measured, verdict]. */
export function verdicts(reps, mem, microOut, names) {
  const has = (t) => names.includes(t);
  /** Per repetition `f(rep)`, then min/median/max. */
  const over = (f) => spread(reps.map(f));
  const ratio = (t, key, ref) => over((r) => (r[t]?.[key] ?? NaN) / (r[ref]?.[key] ?? NaN));
  const delta = (t, key, ref) => over((r) => (r[t]?.[key] ?? NaN) - (r[ref]?.[key] ?? NaN));
  const judged = (s, ok) => verdict(Number.isFinite(s.med) ? ok(s.med) : null);
  const range = (s, f) => `${f(s.med)} (${f(s.min)}…${f(s.max)})`;
  const ms = (x) => `${x >= 0 ? "+" : ""}${num(x)} ms`;
  const times = (x) => `${num(x)}×`;
  const rows = [];

  // Issue 8: every tap target against direct and nginx.
  for (const t of names.filter((n) => n === "bun-off" || n === "bun-on" || n.startsWith("deno-"))) {
    const d = delta(t, "ttfbP50", "direct");
    rows.push([t, "added TTFB p50 ≤ 1 ms over direct", range(d, ms), judged(d, (x) => x <= 1)]);
    if (has("nginx")) {
      const n = delta(t, "ttfbP50", "nginx");
      rows.push([t, "TTFB p50 ≤ nginx + 0.5 ms", `${range(n, ms)} vs nginx`, judged(n, (x) => x <= 0.5)]);
    }
    const e = ratio(t, "evps100", "direct");
    rows.push([t, "events/s at 100 streams ≥ 90 % of direct", range(e, pct), judged(e, (x) => x >= 0.9)]);
    const runs = (mem[t] ?? []).filter((m) => !m.skipped1000 && m.hwm1000 !== undefined);
    const errs = runs.reduce((n, m) => n + (m.err1000 ?? 0), 0);
    rows.push([
      t,
      "1,000 concurrent streams, zero errors",
      runs.length ? `${errs} failed of ${runs.length * 1000}` : "not run",
      verdict(runs.length ? errs === 0 : null),
    ]);
    const idle = spread((mem[t] ?? []).map((m) => m.idle));
    rows.push([t, "idle RSS < 64 MiB", `${num(idle.max)} MiB (max)`, verdict(Number.isFinite(idle.max) ? idle.max < 64 : null)]);
  }

  // Issue 14, Bun with the mirror on.
  if (has("bun-on")) {
    const burst = ratio("bun-on", "longTtlbP50", "direct");
    rows.push(["bun-on", "time to last byte, 2,000-event burst ≤ 1.3× direct", range(burst, times), judged(burst, (x) => x <= 1.3)]);
    if (has("bun-off")) {
      const cpu = ratio("bun-on", "cpuPerMiB", "bun-off");
      rows.push(["bun-on", "proxy CPU per MiB ≤ 2× mirror off", range(cpu, times), judged(cpu, (x) => x <= 2)]);
      const ev = ratio("bun-on", "evps100", "bun-off");
      rows.push(["bun-on", "events/s at 100 streams ≥ 80 % of mirror off", range(ev, pct), judged(ev, (x) => x >= 0.8)]);
      const ttfb = delta("bun-on", "ttfbP50", "bun-off");
      rows.push(["bun-on", "TTFB p50, short answer ≤ mirror off + 0.2 ms", range(ttfb, ms), judged(ttfb, (x) => x <= 0.2)]);
    }
  }
  // Long histories: the mirror's cost on a 4 MiB request, the body streamed instead of buffered twice.
  for (const [on, off] of [["bun-on", "bun-off"], ["deno-on", "deno-off"]]) {
    if (!has(on) || !has(off)) continue;
    const h = delta(on, "histTtfbP50", off);
    rows.push([on, "TTFB, 4 MiB / 200-turn request ≤ mirror off + 2 ms", range(h, ms), judged(h, (x) => x <= 2)]);
  }
  for (const off of ["bun-off", "deno-off"]) {
    if (!has(off) || !has("nginx")) continue;
    const h = delta(off, "histTtfbP50", "nginx");
    rows.push([off, "TTFB, 4 MiB / 200-turn request ≤ nginx + 2 ms", range(h, ms), judged(h, (x) => x <= 2)]);
  }
  // The stub and the client share this machine's cores with the proxy: what direct's own gap grows by is
  // theirs, and the proxy is judged on what it adds beyond it (both are shown).
  const growth = (r, t) => (r[t]?.gapLoaded ?? NaN) - (r[t]?.gapAlone ?? NaN);
  for (const t of names.filter((n) => n !== "direct")) {
    const g = over((r) => growth(r, t));
    const beyond = over((r) => growth(r, t) - growth(r, "direct"));
    const n = over((r) => r[t]?.gapHistory ?? NaN);
    rows.push([
      t,
      "a concurrent stream's largest gap grows ≤ 2 ms beside long-history requests (beyond direct's own growth)",
      `${range(beyond, ms)} beyond direct; ${range(g, ms)} in all (${num(n.med)} history requests beside it)`,
      judged(beyond, (x) => x <= 2),
    ]);
  }
  // The viewer's heavy work (a search reads every session) must not stall a stream either.
  for (const t of names.filter((n) => /^(bun|deno)-/.test(n))) {
    const g = over((r) => (r[t]?.gapSearch ?? NaN) - (r[t]?.gapAlone ?? NaN));
    const took = over((r) => r[t]?.searchMs ?? NaN);
    rows.push([
      t,
      "a concurrent stream's largest gap grows ≤ 2 ms beside the viewer's search over a 1,000-session archive",
      `${range(g, ms)} (one search ${num(took.med)} ms)`,
      judged(g, (x) => x <= 2),
    ]);
  }
  const steady = microOut?.request_steady_200;
  if (steady && !steady.error) {
    // Issue 14 bounded this at 2 ms with a reader that parsed only what was new; issue 21 measured that
    // it paid for itself nowhere a client looks and read every body whole instead: only the relay's part is judged.
    rows.push([
      "mirror engine (Bun, in-process)",
      "200 turns, one new message: nothing on the relay but one copy of the body (the engine reads it whole: no bound)",
      `engine ${num(steady.totalMs)} ms (read ${num(steady.readMs)}, identify ${num(steady.identifyMs)}, plan ${num(steady.planMs)}); relay per request: ${
        num(steady.relayMs)
      } ms`,
      verdict(steady.relayMs <= 2),
    ]);
  }
  // Memory: what one stream costs at 1,000, with every one of them in flight.
  const message = (PACED_DELTAS * DELTA_BYTES) / 1024;
  for (const [t, limit, label] of [["bun-on", 64 + message, `≤ 64 KiB + the message (~${num(message)} KiB)`], ["deno-on", 200, "≤ 200 KiB"]]) {
    if (!has(t)) continue;
    const runs = (mem[t] ?? []).filter((m) => !m.skipped1000 && m.hwm1000 !== undefined);
    const per = spread(runs.map((m) => m.perStream));
    const inflight = spread(runs.map((m) => m.inflight1000));
    rows.push([
      t,
      `RSS per in-flight stream at 1,000 ${label}, all 1,000 in flight`,
      runs.length ? `${num(per.med)} KiB per stream, ${num(inflight.med)} in flight at the peak` : "not run",
      verdict(runs.length ? per.med <= limit && inflight.med >= 990 : null),
    ]);
  }
  // Deno, a first-class runtime.
  if (has("deno-on")) {
    const ev = ratio("deno-on", "evps100", "direct");
    rows.push(["deno-on", "events/s at 100 streams ≥ 50 % of direct", range(ev, pct), judged(ev, (x) => x >= 0.5)]);
    const burst = ratio("deno-on", "longTtlbP50", "direct");
    rows.push(["deno-on", "time to last byte, 2,000-event burst ≤ 3× direct", range(burst, times), judged(burst, (x) => x <= 3)]);
  }
  // The floor: what a bare relay with JavaScript per chunk costs on the same runtime, in the same run.
  for (const [bare, tap] of [["bare-bun", "bun-on"], ["bare-deno", "deno-on"], ["bare-deno-native", "any Deno relay"]]) {
    if (!has(bare)) continue;
    const burst = ratio(bare, "longTtlbP50", "direct");
    const ev = ratio(bare, "evps100", "direct");
    rows.push([
      bare,
      `the runtime's floor for ${tap} (no target): 2,000-event burst, events/s at 100`,
      `${range(burst, times)}; ${range(ev, pct)} of direct`,
      "—",
    ]);
  }
  return rows;
}
