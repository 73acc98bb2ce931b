// deploy/config.yaml, the config file the Deployment mounts, is valid for this kubediff.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

test('kubediff validate -c deploy/config.yaml', () => {
  const result = spawnSync(process.execPath, ['bin/kubediff.js', 'validate', '-c', 'deploy/config.yaml'], {
    cwd: root,
    encoding: 'utf8',
  });
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /valid/);
});
