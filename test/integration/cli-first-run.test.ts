// A bare `kubediff`, as someone trying it for the first time types it: on a real terminal (`script` runs
// the real bin/kubediff.js on a pseudo-terminal and copies what it shows) it says what to run first; in a
// pipe it prints the help on stderr, as it always has. Exit code 0 either way.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { describe, it } from 'node:test';
import { KUBEDIFF_BIN, runKubediffToCompletion } from '../helpers/cli.ts';

/** Runs `kubediff` with no arguments on a pseudo-terminal; what the terminal showed and the exit code. */
function runOnTerminal(): Promise<{ code: number | null; shown: string }> {
  const command = [process.execPath, KUBEDIFF_BIN].map((word) => `'${word}'`).join(' ');
  const terminal = spawn('script', ['-q', '-e', '-c', `exec ${command}`, '/dev/null'], {
    env: { ...process.env, COLUMNS: '100' },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let shown = '';
  terminal.stdout.on('data', (chunk: Buffer) => {
    shown += chunk.toString('utf8');
  });
  return new Promise((resolve) => terminal.on('close', (code) => resolve({ code, shown })));
}

describe('a bare `kubediff`', () => {
  it('on a terminal, says what to run first', async () => {
    const { code, shown } = await runOnTerminal();
    assert.equal(code, 0, shown);
    const lines = shown.split('\r\n');
    assert.equal(lines[0], 'kubediff watches a Kubernetes cluster and reports every change, field by field.');
    assert.ok(
      lines.some((line) =>
        /^ {2}kubediff resources +what it would watch, and why it skips the rest$/.test(line),
      ),
      shown,
    );
    assert.ok(
      lines.some((line) => /^ {2}kubediff watch +report every change until Ctrl-C$/.test(line)),
      shown,
    );
    assert.doesNotMatch(shown, /Usage:/);
  });

  it('in a pipe, prints the help on stderr and exits 0', async () => {
    const result = await runKubediffToCompletion([]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, '');
    assert.match(result.stderr, /^Usage: kubediff \[options\] \[command\]\n/);
    assert.match(result.stderr, /\n {2}watch \[options\] +report every change until stopped \(Ctrl-C\)\n/);
  });
});
