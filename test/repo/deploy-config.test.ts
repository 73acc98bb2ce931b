// deploy/config.yaml, the config file the Deployment mounts, is valid for this kubediff.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { runKubediffToCompletion } from '../helpers/cli.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

test('kubediff validate -c deploy/config.yaml', async () => {
  const result = await runKubediffToCompletion(['validate', '-c', 'deploy/config.yaml'], { cwd: root });
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /valid/);
});
