// A real OpenSearch node for the tests: one node (discovery.type single-node), no security plugin (so
// plain HTTP without authentication), assembled from Maven Central's jars by scripts/opensearch-fetch.ts
// into .cache/opensearch and run with the machine's Java 17 in a fresh temp folder on free 127.0.0.1
// ports. OpenSearch refuses to run as root: as root it runs as `nobody` (or
// $KUBEDIFF_TEST_OPENSEARCH_OS_USER), and its folder belongs to that user.
//
// scripts/run-tests.ts starts one per `npm test` run when a selected test file imports opensearch-env.ts,
// and describes it to the test processes as a JSON OpenSearchInfo. That node is shared by the test files
// running side by side: give each test indices of its own, and never stop it; a test that stops and
// restarts a node starts its own with startOpenSearch() (a RestartableServer, server-process.ts).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chown, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { repoRoot } from './cluster.ts';
import { javaBinary } from './kafka.ts';
import {
  freePorts,
  launchProcess,
  type ManagedProcess,
  PortInUseError,
  retryOnPortInUse,
  type ServerFiles,
  type ServerOptions,
  startFailure,
  terminate,
  waitUntil,
} from './processes.ts';
import { type RestartableServer, ServerProcess } from './server-process.ts';

export const opensearchPom = path.join(repoRoot, 'test', 'opensearch', 'pom.xml');
export const opensearchCacheDir = path.join(repoRoot, '.cache', 'opensearch');

/** Everything a test needs to reach the node; JSON-serialisable. */
export interface OpenSearchInfo extends ServerFiles {
  /** true for a node given by KUBEDIFF_TEST_OPENSEARCH_URL: nothing was started, nothing will be stopped. */
  external: boolean;
  version: string;
  /** http://127.0.0.1:<port> */
  url: string;
}

export type RunningOpenSearch = OpenSearchInfo & RestartableServer;

/** The OpenSearch version test/opensearch/pom.xml asks for. */
export function opensearchVersion(): string {
  const pom = readFileSync(opensearchPom, 'utf8');
  const version = /<opensearch\.version>([^<]+)<\/opensearch\.version>/.exec(pom)?.[1];
  if (!version) throw new Error(`${path.relative(repoRoot, opensearchPom)} names no <opensearch.version>`);
  return version;
}

/** .cache/opensearch/<version>-<sha256 of the pom>: a changed pom is a new folder, fetched anew. */
export function opensearchCacheEntry(): string {
  const stamp = createHash('sha256').update(readFileSync(opensearchPom)).digest('hex').slice(0, 12);
  return path.join(opensearchCacheDir, `${opensearchVersion()}-${stamp}`);
}

/** The node home (lib/, modules/, plugins/), or an Error saying how to fetch it. */
export function opensearchHome(): string {
  const home = opensearchCacheEntry();
  if (!existsSync(path.join(home, 'lib', `opensearch-${opensearchVersion()}.jar`))) {
    throw new Error(
      `OpenSearch is not in ${path.relative(repoRoot, home)}: run \`npm run opensearch:fetch\` (npm test does it when a test needs OpenSearch).`,
    );
  }
  return home;
}

/** The user to run the node as: undefined when we are not root. */
function serverAccount(env: NodeJS.ProcessEnv = process.env): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const name = env.KUBEDIFF_TEST_OPENSEARCH_OS_USER || 'nobody';
  try {
    const id = (flag: string) =>
      Number(execFileSync('id', [flag, name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
    const uid = id('-u');
    if (uid === 0) throw new Error('is root');
    return { uid, gid: id('-g') };
  } catch {
    throw new Error(
      `OpenSearch refuses to run as root and the user ${name} to run it as does not exist (or is root): set KUBEDIFF_TEST_OPENSEARCH_OS_USER to an unprivileged user.`,
    );
  }
}

/**
 * A bounded heap on a shared 2-core machine (min = max, as OpenSearch's bootstrap check asks), one GC
 * thread; the security manager stays on (OpenSearch 2.x installs it itself).
 */
const JVM_OPTIONS = [
  '-Xms512m',
  '-Xmx512m',
  '-XX:+UseSerialGC',
  '-XX:+ExitOnOutOfMemoryError',
  '-Djava.awt.headless=true',
];

const LOG_SETTINGS = [
  'status = error',
  'appender.console.type = Console',
  'appender.console.name = console',
  'appender.console.layout.type = PatternLayout',
  'appender.console.layout.pattern = [%d{HH:mm:ss.SSS}][%-5p][%c{1}] %m%n',
  'rootLogger.level = warn',
  'rootLogger.appenderRef.console.ref = console',
  // The line that says the node is up (and each restart's).
  'logger.node.name = org.opensearch.node.Node',
  'logger.node.level = info',
  '',
].join('\n');

/** Starts a node of our own; see the file comment. startTimeoutMs: default 180 s. */
export async function startOpenSearch(options: ServerOptions = {}): Promise<RunningOpenSearch> {
  return retryOnPortInUse('opensearch', () => startOwnOpenSearch(options), options.log);
}

async function startOwnOpenSearch(options: ServerOptions): Promise<RunningOpenSearch> {
  const log = options.log ?? (() => {});
  const startedAt = performance.now();
  const timeoutMs = options.startTimeoutMs ?? 180_000;
  const java = javaBinary();
  const home = opensearchHome();
  const version = opensearchVersion();
  const account = serverAccount();
  const tmpRoot = options.tmpRoot ?? tmpdir();
  await mkdir(tmpRoot, { recursive: true });
  const dir = await mkdtemp(path.join(tmpRoot, 'kubediff-opensearch-'));
  const processes: ManagedProcess[] = [];
  try {
    const [httpPort, transportPort] = (await freePorts(2)) as [number, number];
    const url = `http://127.0.0.1:${httpPort}`;
    const config = path.join(dir, 'config');
    const data = path.join(dir, 'data');
    await mkdir(config);
    await mkdir(data);
    const settings: Record<string, string> = {
      'cluster.name': 'kubediff-test',
      'node.name': 'node-1',
      'discovery.type': 'single-node',
      'network.host': '127.0.0.1',
      'http.port': String(httpPort),
      'transport.port': String(transportPort),
      'path.data': data,
      'path.logs': dir,
      // A full disk on a developer's machine must not turn every index read-only mid-test.
      'cluster.routing.allocation.disk.threshold_enabled': 'false',
      'action.auto_create_index': 'true',
      ...options.settings,
    };
    await writeFile(
      path.join(config, 'opensearch.yml'),
      Object.entries(settings)
        .map(([key, value]) => `${key}: ${JSON.stringify(value)}`)
        .join('\n'),
    );
    await writeFile(path.join(config, 'log4j2.properties'), LOG_SETTINGS);
    if (account) {
      for (const file of [
        dir,
        config,
        data,
        ...['opensearch.yml', 'log4j2.properties'].map((f) => path.join(config, f)),
      ])
        await chown(file, account.uid, account.gid);
    }
    const logFile = path.join(dir, 'opensearch.log');
    const launch = async () => {
      const p = launchProcess({
        name: 'opensearch',
        binary: java,
        args: [
          ...JVM_OPTIONS,
          `-Djava.io.tmpdir=${data}`,
          `-Dopensearch.path.home=${home}`,
          `-Dopensearch.path.conf=${config}`,
          '-Dopensearch.distribution.type=tar',
          '-Dopensearch.bundled_jdk=false',
          '-cp',
          path.join(home, 'lib', '*'),
          'org.opensearch.bootstrap.OpenSearch',
        ],
        dir,
        ...(account ? { uid: account.uid, gid: account.gid } : {}),
      });
      processes.splice(0, processes.length, p);
      await waitUntil(
        'OpenSearch to answer with a green or yellow cluster',
        async () => {
          const response = await fetch(`${url}/_cluster/health?wait_for_status=yellow&timeout=1s`);
          const body = (await response.json()) as { status?: string };
          return response.ok && (body.status === 'green' || body.status === 'yellow')
            ? true
            : `status ${body.status ?? response.status}`;
        },
        { deadline: Date.now() + timeoutMs, processes, intervalMs: 250 },
      );
      return p;
    };
    const node = new ServerProcess({ dir, launch, graceMs: 30_000 });
    log(`opensearch: starting OpenSearch ${version} on ${url}`);
    await node.start();
    log(`opensearch: ${version} ready in ${((performance.now() - startedAt) / 1000).toFixed(1)}s at ${url}`);
    const info: OpenSearchInfo & { logFile: string } = {
      external: false,
      version,
      url,
      dir,
      logFile,
      pid: node.pid,
    };
    return node.controls(info, options, `opensearch-${httpPort}`);
  } catch (error) {
    // The bind failure is far above the last lines startFailure reads (a long stack trace follows it):
    // another process took a free port in between, which retryOnPortInUse cures with new ports.
    const log = await readFile(path.join(dir, 'opensearch.log'), 'utf8').catch(() => '');
    if (/BindException|Address already in use|Failed to bind/i.test(log)) {
      for (const p of processes) await terminate(p);
      await rm(dir, { recursive: true, force: true });
      throw new PortInUseError('opensearch', error instanceof Error ? error.message : String(error));
    }
    throw await startFailure('OpenSearch', error, processes, async () => {
      for (const p of processes) await terminate(p);
      await rm(dir, { recursive: true, force: true });
    });
  }
}
