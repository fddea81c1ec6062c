/** Facts about processes on this host: the run lock's holder liveness for `run` and `status`. */
import { hostname } from 'node:os';

/** Whether a process id is alive on this host (signal 0 probes without signalling). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** This host's name, as written into the run lock. */
export function thisHost(): string {
  return hostname();
}
