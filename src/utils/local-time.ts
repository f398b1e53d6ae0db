// Times and days in a zone handed in (the process's for the command line, UTC where none applies), so "yesterday" is the
// reader's yesterday and tests can pick the zone.

/** Minutes east of UTC at a moment: it changes with daylight saving. */
export type Zone = { offsetMinutes(ms: number): number };

export const UTC: Zone = { offsetMinutes: () => 0 };
/** This process's zone (the browser's, in the viewer's page). */
export const LOCAL: Zone = { offsetMinutes: (ms) => -new Date(ms).getTimezoneOffset() };

function wall(ms: number, zone: Zone): Date {
  return new Date(ms + zone.offsetMinutes(ms) * 60_000);
}

const two = (n: number) => String(n).padStart(2, "0");

export function localDate(ms: number, zone: Zone): string {
  const d = wall(ms, zone);
  return `${d.getUTCFullYear()}-${two(d.getUTCMonth() + 1)}-${two(d.getUTCDate())}`;
}

export function localDateTime(ms: number, zone: Zone, seconds = false): string {
  const d = wall(ms, zone);
  return `${localDate(ms, zone)} ${two(d.getUTCHours())}:${two(d.getUTCMinutes())}${seconds ? `:${two(d.getUTCSeconds())}` : ""}`;
}

export function offsetLabel(ms: number, zone: Zone): string {
  const m = zone.offsetMinutes(ms);
  if (m === 0) return "UTC";
  const a = Math.abs(m);
  return `UTC${m < 0 ? "-" : "+"}${two(Math.floor(a / 60))}:${two(a % 60)}`;
}

export function dayStart(date: string, zone: Zone): number {
  const [y, mo, d] = date.split("-").map(Number);
  const utcMidnight = Date.UTC(y, mo - 1, d);
  // The offset at local midnight is the offset at the guess, unless a change of offset lies between them.
  const guess = utcMidnight - zone.offsetMinutes(utcMidnight) * 60_000;
  return utcMidnight - zone.offsetMinutes(guess) * 60_000;
}

export function daysBefore(date: string, n: number): string {
  const [y, mo, d] = date.split("-").map(Number);
  return localDate(Date.UTC(y, mo - 1, d - n), UTC);
}

/** The start of a `--since` value: YYYY-MM-DD, today, yesterday, or Nd (today and the N-1 days before). */
export function sinceStart(since: string | null, now: number, zone: Zone): number | null {
  if (since === null) return null;
  const today = localDate(now, zone);
  if (since === "today") return dayStart(today, zone);
  if (since === "yesterday") return dayStart(daysBefore(today, 1), zone);
  const days = /^(\d+)d$/.exec(since);
  if (days !== null) return dayStart(daysBefore(today, Math.max(1, Number(days[1])) - 1), zone);
  return dayStart(since, zone);
}
