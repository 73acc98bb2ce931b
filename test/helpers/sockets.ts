// The TCP connections a process holds, as the kernel sees them (Linux /proc): what a test counts to
// prove how many connections kubediff opens, whatever kubediff itself believes.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/** ESTABLISHED connections of process `pid` whose remote end is `port` (on any address). */
export function establishedConnections(pid: number, port: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    let target: string;
    try {
      target = readlinkSync(`/proc/${pid}/fd/${fd}`);
    } catch {
      continue; // closed meanwhile
    }
    const match = /^socket:\[(\d+)\]$/.exec(target);
    if (match?.[1]) inodes.add(match[1]);
  }
  let count = 0;
  for (const table of ['tcp', 'tcp6']) {
    const lines = readFileSync(`/proc/${pid}/net/${table}`, 'utf8').trim().split('\n').slice(1);
    for (const line of lines) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const fields = line.trim().split(/\s+/);
      const remote = fields[2] ?? '';
      const state = fields[3];
      const inode = fields[9] ?? '';
      const remotePort = Number.parseInt(remote.slice(remote.lastIndexOf(':') + 1), 16);
      if (state === '01' && remotePort === port && inodes.has(inode)) count++;
    }
  }
  return count;
}
