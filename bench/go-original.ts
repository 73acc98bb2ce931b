// Figure 5: the Go original (github.com/arriqaaq/kubediff), built from its Go module through the
// Go module proxy into a temporary GOPATH (never into the repo). When it builds, bench/run.ts runs
// it on the same cluster and workload as kubediff; when it does not, the reason is recorded as the
// go command gave it.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const GO_ORIGINAL = 'github.com/arriqaaq/kubediff';

export interface GoBuild {
  module: string;
  goVersion: string;
  /** The commands tried, each with its outcome. */
  attempts: { command: string; exitCode: number | null; output: string }[];
  /** Path of the built binary, when one was built. */
  binary?: string;
  /** Why there is no binary, in one sentence. */
  reason?: string;
  /** Remove the temporary GOPATH. */
  cleanup(): Promise<void>;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv, cwd: string, timeoutMs: number) {
  return new Promise<{ exitCode: number | null; output: string }>((resolve) => {
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ exitCode: null, output: error.message });
    });
    child.on('close', (exitCode) => {
      clearTimeout(timer);
      resolve({ exitCode, output: output.trim() });
    });
  });
}

export async function buildGoOriginal(): Promise<GoBuild> {
  const dir = await mkdtemp(path.join(tmpdir(), 'kubediff-go-original-'));
  const gopath = path.join(dir, 'gopath');
  // The machine's module cache is reused when it has the module; only GOPATH/bin is temporary.
  const env = { ...process.env, GOPATH: gopath, GOBIN: path.join(dir, 'bin'), GOFLAGS: '-modcacherw' };
  const cleanup = () => rm(dir, { recursive: true, force: true });
  const goVersion = (await run('go', ['version'], env, dir, 30_000)).output;
  const attempts: GoBuild['attempts'] = [];
  // @latest and @master of the repository's path, and @latest of the module path its go.mod
  // declared at one time (github.com/arriqaaq/kdiff).
  for (const target of [
    `${GO_ORIGINAL}@latest`,
    `${GO_ORIGINAL}@master`,
    'github.com/arriqaaq/kdiff@latest',
  ]) {
    const args = ['install', target];
    const outcome = await run('go', args, env, dir, 300_000);
    // The proxy's address is the machine's setting, not part of the finding.
    outcome.output = outcome.output.replace(/https?:\/\/[^/\s]+/g, '$GOPROXY');
    attempts.push({ command: `go ${args.join(' ')}`, ...outcome });
    const binary = path.join(dir, 'bin', 'kubediff');
    if (outcome.exitCode === 0 && existsSync(binary))
      return { module: GO_ORIGINAL, goVersion, attempts, binary, cleanup };
  }
  const last = attempts.at(-1)!.output;
  const reason = /403 Forbidden|not available/.test(last)
    ? `the Go module proxy does not serve ${GO_ORIGINAL} (it answers 403 "This module version is not available" for @latest and @master, and for github.com/arriqaaq/kdiff, the module path its go.mod once declared), and this machine reaches no source host directly, so there is nothing to build`
    : `\`go install\` failed: ${last.split('\n').at(-1)}`;
  return { module: GO_ORIGINAL, goVersion, attempts, reason, cleanup };
}
