/**
 * CPU time from /proc, for "CPU per request" beside rates: steadier than
 * requests/s on a shared machine. Clock ticks are 10 ms on Linux, so read it
 * over many requests.
 */
import { readFileSync } from 'node:fs';

/**
 * Milliseconds of CPU a process has used, with its children that have ended
 * and been waited for (a server's scripts, once they exit, are counted here).
 */
export function cpuWithEndedChildren(pid: number | 'self'): number {
  const { user, system } = cpuSplit(pid);
  return user + system;
}

/** The same, split into user and system milliseconds (system: the kernel's share, i.e. syscalls, loopback delivery, wake-ups). */
export function cpuSplit(pid: number | 'self'): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // After "(comm) ": state ppid … utime(11) stime(12) cutime(13) cstime(14), counted from state.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: (Number(fields[11]) + Number(fields[13])) * 10, system: (Number(fields[12]) + Number(fields[14])) * 10 };
}
