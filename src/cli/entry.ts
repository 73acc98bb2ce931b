// What the launcher (bin/kubediff.js) runs: the command line, then the exit.
import { main, mustExitAtOnce } from './main.ts';

const code = await main(process.argv);
process.exitCode = code;
if (mustExitAtOnce()) process.exit(code);
// Everything has been stopped; if a stray handle keeps Node alive, do not hang forever.
setTimeout(() => process.exit(code), 10_000).unref();
