// Reads what the kernel knows of a process: CPU time (utime + stime of all its threads) from
// /proc/<pid>/stat, resident memory (VmRSS, VmHWM) from /proc/<pid>/status, and its children. Linux only.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

let tick = null;

/** Clock ticks per second (USER_HZ), for /proc/<pid>/stat's utime and stime. */
export function ticksPerSecond() {
  if (tick === null) {
    try {
      tick = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      tick = 100;
    }
  }
  return tick;
}

/** CPU time (user + system, every thread) of `pid` in milliseconds, or null when it is gone. */
export function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond();
  } catch {
    return null;
  }
}

/** VmRSS and VmHWM of `pid` in KiB (null when it is gone). */
export function memKiB(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? NaN);
    return { rss: field("VmRSS"), hwm: field("VmHWM") };
  } catch {
    return null;
  }
}

/** The pids of `pid`'s direct children. */
export function childrenOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/** Sum of `cpuMs` over several pids (a process that is gone counts 0). */
export function cpuSum(pids) {
  return pids.reduce((n, p) => n + (cpuMs(p) ?? 0), 0);
}

/** Sum of VmRSS / VmHWM over several pids, in KiB. */
export function memSum(pids) {
  let rss = 0;
  let hwm = 0;
  for (const p of pids) {
    const m = memKiB(p);
    if (m !== null) {
      rss += m.rss;
      hwm += m.hwm;
    }
  }
  return { rss, hwm };
}
