// The baseline watcher of figure 3: a plain undici watch of one collection that writes each
// line to stdout as it arrives, and nothing else (a minimal `kubectl get -w -o json`).
//   node bench/raw-watch.ts --cluster <ClusterInfo.json> --path /api/v1/namespaces/<ns>/configmaps
// Prints "ready" on stderr once the watch is open.
import { readFileSync } from 'node:fs';
import type { ClusterInfo } from '../test/helpers/cluster.ts';
import { currentResourceVersion, rawAgent, rawWatch } from './lib/raw.ts';

const args = process.argv.slice(2);
const option = (name: string) => args[args.indexOf(name) + 1]!;
const info = JSON.parse(readFileSync(option('--cluster'), 'utf8')) as ClusterInfo;
const collection = option('--path');
const agent = rawAgent(info);
const rv = await currentResourceVersion(info, agent, collection);
const watch = await rawWatch(info, agent, collection, rv, (line) => {
  process.stdout.write(`${line}\n`);
  watch.lines.length = 0; // keep nothing
});
process.stderr.write('ready\n');
const stop = () => watch.close();
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
const failure = await watch.ended;
await agent.close();
if (failure) {
  process.stderr.write(`raw watch failed: ${failure.message}\n`);
  process.exitCode = 1;
}
