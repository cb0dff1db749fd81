import { readFileSync } from 'node:fs';
import { cpuWithEndedChildren } from '../common/cpu.ts';

/** The live children of a process's main thread (where Node starts child processes). */
function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

/**
 * CPU ms of a server with its live children and everything they ended and
 * waited for: our server, its spawn helper, and the scripts the helper ran.
 * A child that ends while this reads counts 0 (a script: well under a tick).
 */
export function cpuOfTree(pid: number): number {
  let own: number;
  try {
    own = cpuWithEndedChildren(pid);
  } catch {
    return 0;
  }
  return own + children(pid).reduce((sum, child) => sum + cpuOfTree(child), 0);
}
