// npm run opensearch:fetch — assembles the OpenSearch node the OpenSearch sink's tests run into
// .cache/opensearch/<version>-<pom stamp>, only when that folder is missing.
//
// OpenSearch publishes no distribution on Maven Central, only its jars, so the node home a distribution
// unpacks to is assembled from them (test/opensearch/pom.xml): Maven resolves the runtime classpath
// (`mvn dependency:copy-dependencies`), then the server and its dependencies go to lib/ and the
// transport-netty4 module (its jar and the Netty jars: the HTTP server) to modules/transport-netty4/ with
// the plugin descriptor and security policy a distribution's module carries (the jar has neither). The
// server refuses a class found twice (its "jar hell" check), so each jar lives in one place only.
// test/helpers/opensearch.ts runs it with `java -cp lib/* org.opensearch.bootstrap.OpenSearch`.
//
// Like kafka-fetch.ts: built in a folder of its own and renamed into place when complete, older entries
// removed.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { formatDuration } from '../src/util/duration.ts';
import { repoRoot } from '../test/helpers/cluster.ts';
import {
  opensearchCacheDir,
  opensearchCacheEntry,
  opensearchPom,
  opensearchVersion,
} from '../test/helpers/opensearch.ts';
import { lastLines, processAlive, runCommand } from '../test/helpers/processes.ts';

/** The jars of the transport-netty4 module; every other jar is the server's (lib/). */
const MODULE_JAR = /^(netty-|transport-netty4-client-)/;

export interface FetchResult {
  fetched: boolean;
  elapsedMs: number;
}

/** Assembles the node unless it is cached. Throws a one-line Error (plus Maven's output) on failure. */
export async function ensureOpenSearch(log: (message: string) => void = console.log): Promise<FetchResult> {
  const started = performance.now();
  const entry = opensearchCacheEntry();
  const relative = path.relative(repoRoot, entry);
  const version = opensearchVersion();
  if (existsSync(path.join(entry, 'lib'))) {
    log(`opensearch:fetch: OpenSearch ${version} is cached in ${relative}`);
    return { fetched: false, elapsedMs: performance.now() - started };
  }
  if (spawnSync('mvn', ['--version'], { encoding: 'utf8' }).error) {
    throw new Error(
      'opensearch:fetch: `mvn` is not on PATH; install Maven (Debian: apt-get install maven; .ci/run does) to fetch the OpenSearch node for the tests.',
    );
  }
  log(
    `opensearch:fetch: fetching OpenSearch ${version} from Maven Central into ${relative} (once; about 45 MB)`,
  );
  await mkdir(opensearchCacheDir, { recursive: true });
  const partial = `${entry}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  const jars = path.join(partial, 'jars');
  const args = [
    '--batch-mode',
    '--quiet',
    '-f',
    opensearchPom,
    'dependency:copy-dependencies',
    '-DincludeScope=runtime',
    `-DoutputDirectory=${jars}`,
  ];
  const { code, stdout, stderr } = await runCommand('mvn', args, {
    cwd: path.dirname(opensearchPom),
    timeoutMs: 3_600_000,
  });
  const elapsed = formatDuration(performance.now() - started);
  if (code !== 0 || !existsSync(jars)) {
    await rm(partial, { recursive: true, force: true });
    throw new Error(
      `opensearch:fetch: mvn ${args.join(' ')} failed (exit code ${code}) after ${elapsed}:\n${lastLines(`${stdout}\n${stderr}`, 30)}`,
    );
  }
  await assembleHome(partial, jars, version);
  try {
    await rename(partial, entry);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
    await rm(partial, { recursive: true, force: true });
  }
  for (const name of await readdir(opensearchCacheDir)) {
    const other = path.join(opensearchCacheDir, name);
    const fetcher = Number(/\.partial-(\d+)$/.exec(name)?.[1]);
    if (other !== entry && !(fetcher && processAlive(fetcher)))
      await rm(other, { recursive: true, force: true });
  }
  log(`opensearch:fetch: fetched in ${elapsed}`);
  return { fetched: true, elapsedMs: performance.now() - started };
}

/**
 * lib/, modules/transport-netty4/ (with its descriptor and policy), and the empty bin/ and plugins/ the
 * server expects in its home, from `jars`.
 */
async function assembleHome(home: string, jars: string, version: string): Promise<void> {
  const lib = path.join(home, 'lib');
  const netty = path.join(home, 'modules', 'transport-netty4');
  await mkdir(lib, { recursive: true });
  await mkdir(netty, { recursive: true });
  await mkdir(path.join(home, 'plugins'));
  await mkdir(path.join(home, 'bin'));
  for (const jar of await readdir(jars)) {
    await rename(path.join(jars, jar), path.join(MODULE_JAR.test(jar) ? netty : lib, jar));
  }
  await rm(jars, { recursive: true });
  const descriptor = {
    description: 'Netty 4 based transport implementation',
    version,
    name: 'transport-netty4',
    classname: 'org.opensearch.transport.Netty4Plugin',
    'java.version': '17',
    'opensearch.version': version,
    'extended.plugins': '',
    'has.native.controller': 'false',
  };
  await writeFile(
    path.join(netty, 'plugin-descriptor.properties'),
    `${Object.entries(descriptor)
      .map(([key, value]) => `${key}=${value}`)
      .join('\n')}\n`,
  );
  // What Netty needs under the server's security manager: reflection for its buffers, and sockets.
  await writeFile(
    path.join(netty, 'plugin-security.policy'),
    [
      'grant {',
      '  permission java.lang.RuntimePermission "accessDeclaredMembers";',
      '  permission java.lang.reflect.ReflectPermission "suppressAccessChecks";',
      '  permission java.lang.RuntimePermission "setContextClassLoader";',
      '  permission java.net.SocketPermission "*", "accept,connect";',
      '  permission java.util.PropertyPermission "*", "read,write";',
      '};',
      '',
    ].join('\n'),
  );
}

if (import.meta.main) {
  try {
    await ensureOpenSearch();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
