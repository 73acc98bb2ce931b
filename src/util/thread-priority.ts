// A worker thread that does heavy work for a visitor (the UI's history queries and object answers)
// runs at a lower scheduling priority than the thread that watches, so that on a busy machine the
// watch gets the CPU first. Linux keeps a nice value per thread, and setpriority(PRIO_PROCESS, 0)
// sets the calling thread's (os.setPriority's default pid 0); elsewhere it applies to the process, so
// it is done on Linux only. Raising a nice value needs no privilege.
import { constants, setPriority } from 'node:os';

export function yieldToMainThread(): void {
  if (process.platform !== 'linux') return;
  try {
    setPriority(0, constants.priority.PRIORITY_BELOW_NORMAL);
  } catch {
    // A sandbox that forbids it: the thread runs at the process's priority, as before.
  }
}
