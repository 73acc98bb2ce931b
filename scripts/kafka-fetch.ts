// npm run kafka:fetch — puts the Apache Kafka broker and console tools the tests run (test/kafka/pom.xml:
// org.apache.kafka:kafka_2.13 and kafka-tools with their runtime dependencies, from Maven Central)
// into .cache/kafka/<version>-<pom stamp>/libs, only when that folder is missing.
//
// Maven resolves the classpath (`mvn dependency:copy-dependencies`) into a folder of its own, which is
// renamed into place when complete: a run killed half-way leaves no half-filled cache, and two runs at
// once both succeed. Older entries (another version or pom) are removed, so the cache holds one.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { formatDuration } from '../src/util/duration.ts';
import { repoRoot } from '../test/helpers/cluster.ts';
import { kafkaCacheDir, kafkaCacheEntry, kafkaPom, kafkaVersion } from '../test/helpers/kafka.ts';
import { lastLines, processAlive, runCommand } from '../test/helpers/processes.ts';

export interface FetchResult {
  fetched: boolean;
  elapsedMs: number;
}

/** Fetches the jars unless they are cached. Throws a one-line Error (plus Maven's output) on failure. */
export async function ensureKafkaJars(log: (message: string) => void = console.log): Promise<FetchResult> {
  const started = performance.now();
  const entry = kafkaCacheEntry();
  const relative = path.relative(repoRoot, entry);
  if (existsSync(path.join(entry, 'libs'))) {
    log(`kafka:fetch: Kafka ${kafkaVersion()} is cached in ${relative}`);
    return { fetched: false, elapsedMs: performance.now() - started };
  }
  const maven = spawnSync('mvn', ['--version'], { encoding: 'utf8' });
  if (maven.error) {
    throw new Error(
      'kafka:fetch: `mvn` is not on PATH; install Maven (Debian: apt-get install maven; .ci/run does) to fetch the Kafka broker for the tests.',
    );
  }
  log(
    `kafka:fetch: fetching Kafka ${kafkaVersion()} from Maven Central into ${relative} (once; about 45 MB)`,
  );
  await mkdir(kafkaCacheDir, { recursive: true });
  const partial = `${entry}.partial-${process.pid}`;
  await rm(partial, { recursive: true, force: true });
  const args = [
    '--batch-mode',
    '--quiet',
    '-f',
    kafkaPom,
    'dependency:copy-dependencies',
    '-DincludeScope=runtime',
    `-DoutputDirectory=${path.join(partial, 'libs')}`,
  ];
  // A cold fetch on a slow network takes minutes; only after an hour is it taken for stuck.
  const { code, stdout, stderr } = await runCommand('mvn', args, {
    cwd: path.dirname(kafkaPom),
    timeoutMs: 3_600_000,
  });
  const elapsed = formatDuration(performance.now() - started);
  if (code !== 0 || !existsSync(path.join(partial, 'libs'))) {
    await rm(partial, { recursive: true, force: true });
    throw new Error(
      `kafka:fetch: mvn ${args.join(' ')} failed (exit code ${code}) after ${elapsed}:\n${lastLines(`${stdout}\n${stderr}`, 30)}`,
    );
  }
  try {
    await rename(partial, entry);
  } catch (error) {
    // Another run has just put the same entry in place: ours is not needed.
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
    await rm(partial, { recursive: true, force: true });
  }
  for (const name of await readdir(kafkaCacheDir)) {
    const other = path.join(kafkaCacheDir, name);
    // A partial folder of a fetch still running elsewhere is left to it.
    const fetcher = Number(/\.partial-(\d+)$/.exec(name)?.[1]);
    if (other !== entry && !(fetcher && processAlive(fetcher)))
      await rm(other, { recursive: true, force: true });
  }
  log(`kafka:fetch: fetched in ${elapsed}`);
  return { fetched: true, elapsedMs: performance.now() - started };
}

if (import.meta.main) {
  try {
    await ensureKafkaJars();
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
