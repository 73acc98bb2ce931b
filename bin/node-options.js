// The Node options `kubediff watch` runs with, and when the launcher must add them. They keep the
// resident memory of a long-running watch down for a small cost in CPU (BENCHMARKS.md, figure 5, and
// docs/watching.md, "Memory of a long-running watch"):
// - --max-semi-space-size=1: V8's young generation stays at 1 MiB per semi-space instead of growing
//   to 16 MiB with the allocation rate of a watch stream. Most of what a watch event allocates dies
//   young either way; the stored objects are promoted after a scavenge or two.
// - --max-opt=2: hot functions are optimized by Maglev, not TurboFan: TurboFan's code and its
//   compilation memory stay out of the process.
// - --no-concurrent-recompilation, --no-concurrent-sparkplug: V8 compiles hot functions on the main
//   thread instead of handing them to helper threads, whose compilation jobs and buffers then stay out of
//   the process (about 3 MiB on figure 5's stream, CPU the same). Garbage collection keeps its helper
//   threads: collecting on the main thread alone (--single-threaded) made a big list's peak 15-25 MiB higher.
// Plain JavaScript (not TypeScript): the launcher imports it before it knows whether this Node can
// strip types.

/** @type {readonly string[]} */
export const WATCH_NODE_OPTIONS = [
  '--max-semi-space-size=1',
  '--max-opt=2',
  '--no-concurrent-recompilation',
  '--no-concurrent-sparkplug',
];

/**
 * The options of WATCH_NODE_OPTIONS that this process lacks for this command line: none unless the
 * command is `watch` (and not its help), and none that the user set (a value, or `--no-…` to turn one off)
 * on Node's command line or in NODE_OPTIONS: theirs wins.
 * @param {readonly string[]} args the command line after the script (process.argv.slice(2))
 * @param {readonly string[]} execArgv Node's own options of this process
 * @param {string | undefined} nodeOptions $NODE_OPTIONS
 * @returns {string[]}
 */
export function missingNodeOptions(args, execArgv, nodeOptions) {
  // `watch --help` prints and exits: not worth a second start of Node.
  if (args[0] !== 'watch' || args.includes('--help') || args.includes('-h')) return [];
  const given = [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].map(optionName);
  return WATCH_NODE_OPTIONS.filter((option) => !given.includes(optionName(option)));
}

/** "--max_opt=2" → "--max-opt", "--no-single-threaded" → "--single-threaded": V8 takes either spelling. */
function optionName(option) {
  return option
    .split('=')[0]
    .replaceAll('_', '-')
    .replace(/^--no-/, '--');
}
