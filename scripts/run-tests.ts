// npm test — the whole check, as CI runs it: type-check, lint, build (dist/, what the command-line tests
// run), then the repository checks (test/repo), the unit tests (test/unit, laid out as src/ is) and the
// integration tests against ONE real control plane started for the run (or the cluster in $KUBECONFIG
// with USE_EXISTING_CLUSTER=true). The control plane starts only when an integration test is selected:
// unit tests and repository checks need no server (`npm test -- test/unit` starts none).
//
//   npm test                                         everything
//   npm test -- test/integration/harness.test.ts     a subset (files, folders or globs)
//   npm test -- test/unit                            every unit test, no server
//   npm test -- --test-name-pattern=403 --skip-checks  node --test options pass through
//
// Test processes find the cluster through KUBEDIFF_TEST_CLUSTER (test/helpers/cluster-env.ts). Beside
// it, and at the same time, the PostgreSQL server, the Kafka broker, the OpenSearch node and the
// OpenTelemetry Collector start when a selected test file needs them (scripts/test-servers.ts). Everything is stopped afterwards whatever happens; when tests
// fail, the servers' logs are copied to .cache/cluster/test-logs/. The test runner's own output is
// left exactly as it prints it (its spec reporter, with scripts/test-reporter.ts adding, just before the
// closing summary, every test or suite that was skipped or todo and why), and this script prints nothing
// after it: CI reads its closing summary. With KUBEDIFF_TEST_REQUIRE_ALL=1 (CI), a run that skipped
// anything exits 1 (the reporter says why, above the summary).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, globSync, readFileSync, statSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { errorMessage } from '../src/util/errors.ts';
import { testArtifactsDir } from '../test/helpers/artifacts.ts';
import {
  clusterCacheDir,
  type RunningCluster,
  repoRoot,
  resolveBinaries,
  startCluster,
  useExistingCluster,
} from '../test/helpers/cluster.ts';
import { writeRunDescription } from '../test/helpers/run-description.ts';
import { buildDist } from './build.ts';
import { ensureClusterBinaries } from './cluster-build.ts';
import { ensureHelm } from './helm-build.ts';
import { ensureImage } from './image-build.ts';
import { ensureKwok } from './kwok-build.ts';
import { ensureReleaseTool } from './release-tools-build.ts';
import { serverNeeds } from './test-needs.ts';
import { NOT_RUN_FILE_ENV, REQUIRE_ALL_ENV, requireAll } from './test-reporter.ts';
import { startTestServers, type TestServers } from './test-servers.ts';

const DEFAULT_TEST_FILES = [
  'test/repo/**/*.test.ts',
  'test/unit/**/*.test.ts',
  'test/integration/**/*.test.ts',
];
/** Where the tests that need no server live: a selection of these alone starts no control plane. */
const SERVERLESS_FOLDERS = ['test/unit/', 'test/repo/'];
/** Per test; a test against a real API server on a busy 2-core machine can take a while. */
const TEST_TIMEOUT_MS = Number(process.env.KUBEDIFF_TEST_TIMEOUT_MS ?? 300_000);
/** node --test options that take their value as the next argument. */
const OPTIONS_WITH_VALUE = new Set([
  '--test-name-pattern',
  '--test-skip-pattern',
  '--test-reporter',
  '--test-reporter-destination',
  '--test-shard',
  '--test-concurrency',
  '--test-timeout',
  '--test-isolation',
]);
const logsDir = path.join(clusterCacheDir, 'test-logs');

interface Arguments {
  skipChecks: boolean;
  nodeOptions: string[];
  files: string[];
}

function parseArguments(argv: string[]): Arguments {
  const parsed: Arguments = { skipChecks: false, nodeOptions: [], files: [] };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--skip-checks') {
      parsed.skipChecks = true;
    } else if (arg.startsWith('-')) {
      parsed.nodeOptions.push(arg);
      const next = argv[i + 1];
      if (OPTIONS_WITH_VALUE.has(arg) && next !== undefined) {
        parsed.nodeOptions.push(next);
        i++;
      }
    } else {
      parsed.files.push(arg);
    }
  }
  return parsed;
}

let signalled: NodeJS.Signals | undefined;
let current: ChildProcess | undefined;

function onSignal(signal: NodeJS.Signals): void {
  if (signalled) {
    current?.kill('SIGKILL'); // a second Ctrl-C: no more patience
    return;
  }
  signalled = signal;
  const child = current;
  if (!child) return; // between steps: the main flow sees `signalled` and cleans up
  // A Ctrl-C in a terminal reaches the child directly (same process group); give it a moment to
  // act on its own, and pass the signal on if it came only to us (e.g. CI's SIGTERM).
  setTimeout(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  }, 1_000).unref();
}

/** Runs a command with inherited output; resolves to its exit code (128+n for a signal). */
function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: repoRoot, stdio: 'inherit', env });
    current = child;
    child.once('error', (error) => {
      console.error(`npm test: cannot run ${command}: ${error.message}`);
      current = undefined;
      resolve(127);
    });
    child.once('exit', (code, signal) => {
      current = undefined;
      resolve(code ?? (signal === 'SIGINT' ? 130 : signal === 'SIGTERM' ? 143 : 1));
    });
  });
}

const bin = (name: string) => path.join(repoRoot, 'node_modules', '.bin', name);

async function main(): Promise<number> {
  const args = parseArguments(process.argv.slice(2));
  const ownReporter = !args.nodeOptions.some((option) => option.startsWith('--test-reporter'));
  if (requireAll() && !ownReporter) {
    console.error(
      `npm test: ${REQUIRE_ALL_ENV}=1 checks that nothing was skipped through npm test's own reporter; leave out --test-reporter.`,
    );
    return 2;
  }
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  if (!args.skipChecks) {
    console.log('npm test: type-check (tsc -p .)');
    const typecheck = await run(bin('tsc'), ['-p', '.']);
    if (typecheck !== 0 || signalled) return typecheck || 130;
    console.log('npm test: lint (biome check .)');
    const lint = await run(bin('biome'), ['check', '.']);
    if (lint !== 0 || signalled) return lint || 130;
  }
  // The tests run kubediff as users do, from dist/: compiled from the sources being tested.
  console.log('npm test: build (dist/ from src/)');
  buildDist();

  const files =
    args.files.length > 0
      ? args.files.flatMap(testFilesOf)
      : DEFAULT_TEST_FILES.flatMap((pattern) => globSync(pattern, { cwd: repoRoot })).sort();
  if (files.length === 0) {
    console.error(`npm test: no test files match ${DEFAULT_TEST_FILES.join(' ')}`);
    return 1;
  }

  let cluster: RunningCluster | undefined;
  let servers: TestServers | undefined;
  const runDir = await mkdtemp(path.join(tmpdir(), 'kubediff-test-run-'));
  let code = 1;
  try {
    // Screenshots and server logs of this run only.
    await rm(testArtifactsDir, { recursive: true, force: true });
    const log = (message: string) => console.log(message);
    const needsCluster = files.some(
      (file) => !SERVERLESS_FOLDERS.some((folder) => normalized(file).startsWith(folder)),
    );
    const startingCluster = (async () => {
      // The tools some test files use (helm, kwok, actionlint, cosign, the registry, the image) are built on
      // demand and cached like the control plane.
      for (const { pattern, build } of ON_DEMAND_BUILDS) {
        if (files.some((file) => uses(file, pattern))) await build(log);
      }
      if (!needsCluster) return undefined;
      if (
        !useExistingCluster() &&
        Object.values(resolveBinaries()).some((binary) => binary.source === 'build')
      ) {
        await ensureClusterBinaries(log);
      }
      return startCluster({ log });
    })();
    const startingServers = startTestServers(serverNeeds(files), { runDir, log });
    const [clusterStart, serversStart] = await Promise.allSettled([startingCluster, startingServers]);
    if (clusterStart.status === 'fulfilled') cluster = clusterStart.value;
    if (serversStart.status === 'fulfilled') servers = serversStart.value;
    if (clusterStart.status === 'rejected') throw clusterStart.reason;
    if (serversStart.status === 'rejected') throw serversStart.reason;
    if (signalled) return 130;
    // Without a cluster, KUBEDIFF_TEST_CLUSTER is not set: a test that asks for it says it needs one.
    const descriptionFile = path.join(runDir, 'cluster.json');
    if (cluster) await writeRunDescription(descriptionFile, cluster);

    const notRunFile = path.join(runDir, 'not-run.json');
    const nodeArgs = [
      '--test',
      '--test-concurrency=2',
      `--test-timeout=${TEST_TIMEOUT_MS}`,
      ...(ownReporter
        ? [
            `--test-reporter=${path.join(repoRoot, 'scripts', 'test-reporter.ts')}`,
            '--test-reporter-destination=stdout',
          ]
        : []),
      ...args.nodeOptions,
      ...files,
    ];
    console.log(`npm test: server logs are kept in ${path.relative(repoRoot, logsDir)}/ if tests fail`);
    console.log(`npm test: node ${nodeArgs.join(' ')}`);
    code = await run(process.execPath, nodeArgs, {
      ...process.env,
      ...servers?.env,
      ...(cluster ? { KUBEDIFF_TEST_CLUSTER: descriptionFile } : {}),
      [NOT_RUN_FILE_ENV]: notRunFile,
    });
    if (code === 0 && requireAll()) code = notRunCount(notRunFile) === 0 ? 0 : 1;
    return code;
  } finally {
    if (code !== 0) await keepLogs({ ...cluster?.logs, ...servers?.logs });
    await servers?.stop();
    if (cluster) {
      await cluster.stop().catch((error: unknown) => {
        console.error(
          `npm test: stopping the test cluster failed: ${error instanceof Error ? error.message : error}`,
        );
      });
    }
    await rm(runDir, { recursive: true, force: true });
  }
}

/** How many tests and suites the reporter listed as not run (skipped or todo); a missing list counts as one. */
function notRunCount(file: string): number {
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as unknown[]).length;
  } catch (error) {
    console.error(`npm test: the reporter's list of skipped tests is unreadable (${errorMessage(error)})`);
    return 1;
  }
}

/** A file, a glob, or a folder (every test file in it) given on the command line: the files it names. */
function testFilesOf(arg: string): string[] {
  const absolute = path.resolve(repoRoot, arg);
  if (existsSync(absolute) && statSync(absolute).isDirectory()) {
    return globSync('**/*.test.ts', { cwd: absolute })
      .map((file) => path.relative(repoRoot, path.join(absolute, file)))
      .sort();
  }
  return [arg];
}

/** A path as given, relative to the repository, with forward slashes (to compare with folders). */
function normalized(file: string): string {
  return path.relative(repoRoot, path.resolve(repoRoot, file)).split(path.sep).join('/');
}

/**
 * What a test file calls that needs a build first: helm (test/helpers/deploy.ts, helm()), actionlint
 * (test/repo/workflows.test.ts), the image (test/helpers/containers.ts, builtImage(), which needs the
 * registry too), the registry (test/helpers/registry.ts) and cosign.
 */
const ON_DEMAND_BUILDS: { pattern: RegExp; build: (log: (message: string) => void) => Promise<unknown> }[] = [
  {
    pattern: /\bhelm(DryRun)?\(/,
    build: async (log) => {
      if (!process.env.KUBEDIFF_TEST_HELM) await ensureHelm(log);
    },
  },
  { pattern: /\bstartPodPlane\(/, build: (log) => ensureKwok(log) },
  { pattern: /\bactionlint\(/, build: (log) => ensureReleaseTool('actionlint', log) },
  { pattern: /\bstartRegistry\(/, build: (log) => ensureReleaseTool('registry', log) },
  { pattern: /\bcosign\(/, build: (log) => ensureReleaseTool('cosign', log) },
  { pattern: /\bbuiltImage\(/, build: (log) => ensureImage(log) },
];

/** Whether a test file's text matches `pattern`. */
function uses(file: string, pattern: RegExp): boolean {
  try {
    return pattern.test(readFileSync(path.join(repoRoot, file), 'utf8'));
  } catch {
    return false;
  }
}

async function keepLogs(logs: Record<string, string>): Promise<void> {
  await rm(logsDir, { recursive: true, force: true });
  await mkdir(logsDir, { recursive: true });
  for (const [name, file] of Object.entries(logs)) {
    await copyFile(file, path.join(logsDir, `${name}.log`)).catch(() => {});
  }
}

try {
  process.exitCode = await main();
} catch (error) {
  console.error(`npm test: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
// Nothing of ours is left running (the cluster is stopped); exit even if a socket lingers.
process.exit();
