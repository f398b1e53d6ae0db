// Turns the bench's raw samples into figures (ratios to direct, min/median/max over repetitions), checks
// them against issue 8's targets (reported, never asserted), and renders the table as Markdown.

/** The value at quantile `q` (0..1) of `values` (nearest rank), or NaN when empty. */
export function quantile(values, q) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  return v[Math.min(v.length - 1, Math.max(0, Math.ceil(q * v.length) - 1))];
}

/** min, median and max of `values`. */
export function spread(values) {
  const v = values.filter((x) => Number.isFinite(x));
  return { min: quantile(v, 0), med: quantile(v, 0.5), max: quantile(v, 1), n: v.length };
}

/** A number with a sensible number of digits. */
export function num(x, unit = "") {
  if (!Number.isFinite(x)) return "—";
  const a = Math.abs(x);
  const s = a >= 1000 ? x.toFixed(0) : a >= 100 ? x.toFixed(0) : a >= 10 ? x.toFixed(1) : a >= 1 ? x.toFixed(2) : x.toFixed(3);
  return unit ? `${s} ${unit}` : s;
}

/** Large counts as 123k / 1.2M. */
export function count(x) {
  if (!Number.isFinite(x)) return "—";
  if (x >= 1e6) return `${(x / 1e6).toFixed(2)}M`;
  if (x >= 1e4) return `${(x / 1e3).toFixed(0)}k`;
  return x.toFixed(0);
}

/**
 * The figures of one repetition of one target, from its scenario results: TTFB p50/p99 (short answer,
 * one at a time), time to last byte of each answer, events/s (1 and 100 concurrent streams), CPU per MiB.
 */
export function figuresOf(r) {
  const ok = (s) => (s?.samples ?? []).filter((x) => x.ok);
  const f = {};
  const a = ok(r.short);
  f.ttfbP50 = quantile(a.map((s) => s.ttfb), 0.5);
  f.ttfbP99 = quantile(a.map((s) => s.ttfb), 0.99);
  f.shortTtlbP50 = quantile(a.map((s) => s.ttlb), 0.5);
  const b = ok(r.long1);
  f.longTtlbP50 = quantile(b.map((s) => s.ttlb), 0.5);
  f.longTtlbP99 = quantile(b.map((s) => s.ttlb), 0.99);
  f.evps1 = b.length > 0 ? quantile(b.map((s) => (s.events * 1000) / s.ttlb), 0.5) : NaN;
  const c = r.long100;
  f.evps100 = c && c.wallMs > 0 ? (ok(c).reduce((n, s) => n + s.events, 0) * 1000) / c.wallMs : NaN;
  f.long100TtlbP50 = quantile(ok(c).map((s) => s.ttlb), 0.5);
  const mib = c ? ok(c).reduce((n, s) => n + s.bytes, 0) / 1048576 : 0;
  f.cpuPerMiB = mib > 0 && c.cpu ? c.cpu.target / mib : NaN;
  f.cpuAllPerMiB = mib > 0 && c.cpu ? (c.cpu.target + c.cpu.stub + c.cpu.driver) / mib : NaN;
  const d = ok(r.tool);
  f.toolTtlbP50 = quantile(d.map((s) => s.ttlb), 0.5);
  const e = ok(r.history);
  f.histTtfbP50 = quantile(e.map((s) => s.ttfb), 0.5);
  f.histTtlbP50 = quantile(e.map((s) => s.ttlb), 0.5);
  f.gapAlone = r.gapAlone?.ok ? r.gapAlone.maxGap : NaN;
  f.gapLoaded = r.gapLoaded?.ok ? r.gapLoaded.maxGap : NaN;
  f.gapHistory = r.gapLoaded?.history ?? NaN;
  f.gapSearch = r.gapSearch?.ok ? r.gapSearch.maxGap : NaN;
  f.searchMs = quantile(r.gapSearch?.historyTtlb ?? [], 0.5);
  f.errors = ["short", "long1", "long100", "tool", "history"].reduce((n, k) => n + (r[k]?.errors ?? 0), 0) +
    (r.gapAlone && !r.gapAlone.ok ? 1 : 0) + (r.gapLoaded && !r.gapLoaded.ok ? 1 : 0) + (r.gapLoaded?.historyErrors ?? 0) +
    (r.gapSearch && !r.gapSearch.ok ? 1 : 0) + (r.gapSearch?.historyErrors ?? 0);
  return f;
}

/** Rows of the main table: key, label, unit, whether lower is better. */
export const ROWS = [
  ["ttfbP50", "TTFB p50 (short answer, 1 stream)", "ms"],
  ["ttfbP99", "TTFB p99 (short answer, 1 stream)", "ms"],
  ["shortTtlbP50", "time to last byte p50, short answer", "ms"],
  ["longTtlbP50", "time to last byte p50, 2,000-event answer", "ms"],
  ["toolTtlbP50", "time to last byte p50, 64 KiB tool call", "ms"],
  ["histTtfbP50", "TTFB p50, 4 MiB / 200-turn request", "ms"],
  ["gapAlone", "largest gap between a paced stream's events (sent 10 ms apart), alone", "ms"],
  ["gapLoaded", "the same while 4 MiB / 200-turn requests go through beside it", "ms"],
  ["gapSearch", "the same while the viewer searches a 1,000-session archive beside it (taps only)", "ms"],
  ["searchMs", "one viewer search over the 1,000-session archive (median, during the above)", "ms"],
  ["evps1", "events/s delivered, 1 stream", "ev/s"],
  ["evps100", "events/s delivered, 100 concurrent streams", "ev/s"],
  ["cpuPerMiB", "CPU of the proxy per MiB streamed (100 streams)", "ms/MiB"],
  ["cpuAllPerMiB", "CPU of stub + proxy + client per MiB (100 streams)", "ms/MiB"],
];

/** Memory rows: key, label. */
export const MEM_ROWS = [
  ["idle", "RSS idle after start"],
  ["hwm1", "peak RSS, 1 stream"],
  ["hwm100", "peak RSS, 100 concurrent streams"],
  ["hwm1000", "peak RSS, 1,000 concurrent streams"],
  ["inflight1000", "of 1,000, streaming at once at the peak"],
  ["perStream", "peak RSS per stream at 1,000 (above idle, ÷ 1,000)"],
];

/** Per target and figure: the absolute spread and the spread of the ratio to direct of the same repetition. */
export function summarize(reps, targets) {
  const out = {};
  for (const t of targets) {
    out[t] = {};
    for (const [key] of ROWS) {
      const abs = [];
      const ratio = [];
      for (const rep of reps) {
        const v = rep[t]?.[key];
        const d = rep.direct?.[key];
        if (Number.isFinite(v)) abs.push(v);
        if (Number.isFinite(v) && Number.isFinite(d) && d !== 0) ratio.push(v / d);
      }
      out[t][key] = { abs: spread(abs), ratio: spread(ratio) };
    }
    const errs = reps.map((rep) => rep[t]?.errors).filter((x) => x !== undefined);
    out[t].errors = errs.reduce((n, x) => n + x, 0);
  }
  return out;
}

/** One table cell: ratio median (min–max) and the absolute median; direct shows only absolutes. */
function cell(s, unit, isDirect) {
  const a = s.abs;
  if (a.n === 0) return "—";
  const absText = unit === "ev/s" ? count(a.med) : num(a.med);
  if (isDirect) return a.n > 1 ? `${absText} (${unit === "ev/s" ? count(a.min) : num(a.min)}–${unit === "ev/s" ? count(a.max) : num(a.max)})` : absText;
  const r = s.ratio;
  if (r.n === 0) return absText;
  return `${r.med.toFixed(2)}× (${r.min.toFixed(2)}–${r.max.toFixed(2)}) · ${absText}`;
}

/** The main table in Markdown. */
export function table(summary, targets, labels) {
  const head = `| figure | ${targets.map((t) => labels[t]).join(" | ")} |`;
  const rule = `|---|${targets.map(() => "---").join("|")}|`;
  const lines = [head, rule];
  for (const [key, label, unit] of ROWS) {
    if (key === "cpuPerMiB") {
      lines.push(`| ${label} (${unit}) | ${targets.map((t) => (t === "direct" ? "— (no proxy)" : numCell(summary[t][key].abs))).join(" | ")} |`);
      continue;
    }
    lines.push(`| ${label} (${unit}) | ${targets.map((t) => cell(summary[t][key], unit, t === "direct")).join(" | ")} |`);
  }
  lines.push(`| failed requests (all repetitions) | ${targets.map((t) => String(summary[t].errors)).join(" | ")} |`);
  return lines.join("\n");
}

/** An absolute median (min–max). */
function numCell(a) {
  if (a.n === 0) return "—";
  return a.n > 1 ? `${num(a.med)} (${num(a.min)}–${num(a.max)})` : num(a.med);
}

/** The memory and concurrency table in Markdown (median (min–max) over repetitions). */
export function memTable(mem, targets, labels) {
  const lines = [`| figure | ${targets.map((t) => labels[t]).join(" | ")} |`, `|---|${targets.map(() => "---").join("|")}|`];
  const col = (t, f) => numCell(spread((mem[t] ?? []).map(f)));
  for (const [key, label] of MEM_ROWS) {
    const unit = key === "perStream" ? "KiB" : key === "inflight1000" ? "streams" : "MiB";
    lines.push(
      `| ${label} (${unit}) | ${targets.map((t) => (t === "direct" && key !== "inflight1000" ? "— (no process)" : col(t, (m) => m[key]))).join(" | ")} |`,
    );
  }
  lines.push(`| failed streams at 1 / 100 / 1,000 (all repetitions) | ${
    targets.map((t) => {
      const runs = mem[t] ?? [];
      const sum = (k) => (runs.some((m) => m[k] !== undefined) ? runs.reduce((n, m) => n + (m[k] ?? 0), 0) : "—");
      return runs.length ? `${sum("err1")} / ${sum("err100")} / ${sum("err1000")}` : "—";
    }).join(" | ")
  } |`);
  for (const level of [100, 1000]) {
    lines.push(
      `| TTFB p50 / time to last byte p50 at ${count(level)} streams (ms) | ${
        targets.map((t) => `${col(t, (m) => m[`ttfb${level}`])} / ${col(t, (m) => m[`ttlb${level}`])}`).join(" | ")
      } |`,
    );
  }
  return lines.join("\n");
}
