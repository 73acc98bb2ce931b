// What a test run leaves behind for a person to look at: screenshots, and the logs of servers that
// tests started for themselves. One folder, .cache/test-artifacts/ (ignored by git), emptied by
// `npm test` at the start of each run, so that it holds the latest run's artefacts only.
import { copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { repoRoot } from './cluster.ts';

export const testArtifactsDir = path.join(repoRoot, '.cache', 'test-artifacts');

/** The path for an artefact (e.g. `screenshots/timeline.png`), its folder created. */
export async function artifactPath(relative: string): Promise<string> {
  const file = path.join(testArtifactsDir, relative);
  await mkdir(path.dirname(file), { recursive: true });
  return file;
}

/** Copies a server's log to .cache/test-artifacts/logs/<label>.log; a missing log is no error. */
export async function keepServerLog(logFile: string, label: string): Promise<void> {
  const target = await artifactPath(path.join('logs', `${label.replace(/[^\w.-]+/g, '_')}.log`));
  await copyFile(logFile, target).catch(() => {});
}
