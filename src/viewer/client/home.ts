// With no session open: where the tokens went, what Claude Code lost, and the last drill: docs/DESIGN.md "The viewer".
import type { UsageView, ViewerSession } from "../api.ts";
import { badge, base, byId, el, getJson, idOf, state, timeEl, tokens, total, usd } from "./basics.ts";
import { plural } from "../../utils/describe-error.ts";
import { daysBefore } from "../../utils/local-time.ts";

const DAYS = 30;
const COLORS = ["#4263eb", "#f08c00", "#2f9e44", "#e03131", "#7048e8", "#1098ad", "#d6336c"];
const [metric, stack, tip] = [byId("metric", HTMLSelectElement), byId("stack", HTMLSelectElement), byId("tip", HTMLElement)];
let usage: UsageView | null = null;

/** Draws what it has at once (so the list below keeps its place), then again from a fresh `api/usage`. */
export async function loadHome(): Promise<void> {
  renderLists();
  if (usage !== null) drawChart();
  usage = await getJson<UsageView>("api/usage");
  drawChart();
}
metric.addEventListener("change", drawChart);
stack.addEventListener("change", drawChart);

function svg(tag: string, attributes: Record<string, string | number>, text = ""): SVGElement {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attributes)) e.setAttribute(k, String(v));
  e.textContent = text;
  return e;
}

/** The last 30 days as stacked bars, each day's numbers on hover and focus, and the same numbers as a table for screen readers. */
function drawChart(): void {
  if (usage === null) return;
  renderDrill(usage.drill);
  const cost = metric.value === "cost";
  const by = stack.value === "model" ? "model" : "project";
  const amount = (n: number) => (cost ? usd(n) : tokens(n) + " tokens");
  const dates = Array.from({ length: DAYS }, (_, i) => daysBefore(usage!.today, DAYS - 1 - i));
  const days = new Map(usage.days.map((day) => [day.date, day]));
  const totalOf = (date: string) => (days.has(date) ? (cost ? days.get(date)!.knownCostUSD : total(days.get(date)!.usage)) : 0);
  // The seven largest parts in these days keep their colour; the rest are one grey part.
  const sums = new Map<string, number>();
  for (const date of dates) for (const p of days.get(date)?.parts[by] ?? []) sums.set(p.key, (sums.get(p.key) ?? 0) + (cost ? p.knownCostUSD : p.tokens));
  const ranked = [...sums].filter(([, sum]) => sum > 0).sort((a, b) => b[1] - a[1]).map(([key]) => key);
  const labelOf = (key: string) => (ranked.indexOf(key) >= COLORS.length ? "other" : by === "model" ? key : base(key));
  const series = [...new Set(ranked.map(labelOf))].map((label, i) => ({ label, color: label === "other" ? "#adb5bd" : COLORS[i] }));
  const partsOf = (date: string) => {
    const values = new Map<string, number>();
    for (const p of days.get(date)?.parts[by] ?? []) {
      const label = labelOf(p.key);
      values.set(label, (values.get(label) ?? 0) + (cost ? p.knownCostUSD : p.tokens));
    }
    return series.filter((s) => values.get(s.label)).map((s) => ({ ...s, value: values.get(s.label)! }));
  };
  const peak = Math.max(0, ...dates.map(totalOf));
  const cells = (date: string) => {
    const day = days.get(date);
    const money = day === undefined ? "$0.00" : day.costUSD === null ? usd(day.knownCostUSD) + " + ?" : "≈ " + usd(day.costUSD);
    return [date, tokens(day ? total(day.usage) : 0) + " tokens", money, partsOf(date).map((p) => p.label + " " + amount(p.value)).join(", ")];
  };
  const said = (date: string) => cells(date).filter(Boolean).join(" · ");
  const summary = "Last " + DAYS + " days: " + amount(dates.reduce((n, date) => n + totalOf(date), 0)) + ". Hover or focus a day for its numbers.";
  tip.textContent = summary;
  const chart = byId("chart", SVGSVGElement);
  chart.setAttribute("viewBox", `0 0 ${DAYS * 10} 100`);
  chart.setAttribute("preserveAspectRatio", "none");
  chart.replaceChildren(...dates.map((date, i) => {
    const g = svg("g", { class: "day", tabindex: 0, "data-date": date, "data-value": totalOf(date) });
    g.append(svg("rect", { x: i * 10, y: 0, width: 10, height: 100, fill: "transparent" }), svg("title", {}, said(date)));
    let top = 100;
    for (const p of partsOf(date)) {
      const h = (p.value / peak) * 100;
      g.append(svg("rect", { x: i * 10 + 1, y: top -= h, width: 8, height: h, fill: p.color, "data-key": p.label, "data-value": p.value }));
    }
    g.onmouseenter = g.onfocus = () => (tip.textContent = said(date));
    g.onmouseleave = () => (tip.textContent = summary);
    return g;
  }));
  const texts = { zone: "(days in " + usage.timeZone + ")", from: dates[0], peak: "peak " + amount(peak), to: dates[DAYS - 1] };
  for (const [id, text] of Object.entries(texts)) byId(id, HTMLElement).textContent = text;
  byId("legend", HTMLUListElement).replaceChildren(...series.map((s) => {
    const swatch = el("i");
    swatch.style.background = s.color;
    return el("li", null, [swatch, s.label]);
  }));
  const table = byId("table", HTMLTableElement);
  table.replaceChildren(el("caption", null, "Tokens and cost per day, last " + DAYS + " days"));
  for (const [i, row] of [["Day", "Tokens", "Cost", "By " + by], ...dates.filter((date) => days.has(date)).map(cells)].entries()) {
    table.append(el("tr", null, row.map((c) => el(i === 0 ? "th" : "td", null, c))));
  }
}

function renderLists(): void {
  const link = (s: ViewerSession) => el("a", null, s.title || idOf(s), { href: "#/s/" + encodeURIComponent(idOf(s)) });
  const busiest = state.sessions.filter((s) => total(s.usage) > 0).sort((a, b) => total(b.usage) - total(a.usage)).slice(0, 5);
  const lost = state.sessions.filter((s) => s.claudeTranscript !== "intact" && s.sessionId !== null && s.claudeTranscriptProblem === null);
  const items = (list: ViewerSession[], also: (s: ViewerSession) => (Node | string)[]) =>
    list.map((s) => {
      const li = el("li", null, [link(s), ...also(s)]);
      li.dataset.session = idOf(s);
      return li;
    });
  byId("busiest", HTMLOListElement).replaceChildren(
    ...items(busiest, (s) => [" · " + tokens(total(s.usage)) + " tokens · " + usd(s.costUSD) + " · " + base(s.cwd)]),
    ...(busiest.length === 0 ? [el("li", "empty", "No answers with token usage yet.")] : []),
  );
  const restore = (s: ViewerSession) => {
    state.planNext = idOf(s); // the session opens with the restore's dry run shown
    location.hash = "#/s/" + encodeURIComponent(idOf(s));
  };
  byId("lost", HTMLUListElement).replaceChildren(
    ...items(lost.slice(0, 8), (s) => [badge(s.claudeTranscript), " ", el("button", null, "Restore…", { onclick: () => restore(s) })]),
    ...(lost.length > 8 ? [el("li", null, "and " + (lost.length - 8) + " more: their badges in the list say so.")] : []),
    ...(lost.length === 0 ? [el("li", "empty", "Nothing lost: Claude Code holds a whole transcript of every mirrored session.")] : []),
  );
}

function renderDrill(drill: UsageView["drill"]): void {
  const out = byId("drill", HTMLElement);
  if (drill === null) {
    return void out.replaceChildren("No drill has run yet: ", el("code", null, "sessiontap drill"), " proves each session resumes in your Claude Code.");
  }
  if ("error" in drill) {
    return void out.replaceChildren(el("span", "problem", "The last drill's result cannot be read (" + drill.error + "): run sessiontap drill again."));
  }
  const whole = drill.passed === drill.drilled;
  const what = drill.passed + " of " + plural(drill.drilled, "session") + (drill.named ? " named" : "") + " resumed whole" +
    (drill.claudeCode === null ? "" : " by Claude Code " + drill.claudeCode);
  out.className = whole ? "ok" : "problem";
  out.replaceChildren(timeEl(drill.at), ": " + what + (whole ? "." : "; sessiontap drill names what failed."));
}
