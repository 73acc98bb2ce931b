// src/service/health-server.ts: --listen addresses (what /readyz answers: readiness.test.ts).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseListenAddress } from '../../../src/util/http-server.ts';

test('--listen addresses', () => {
  assert.deepEqual(parseListenAddress(':8080'), { host: undefined, port: 8080 });
  assert.deepEqual(parseListenAddress('8080'), { host: undefined, port: 8080 });
  assert.deepEqual(parseListenAddress('127.0.0.1:0'), { host: '127.0.0.1', port: 0 });
  assert.deepEqual(parseListenAddress('[::1]:9090'), { host: '::1', port: 9090 });
  assert.deepEqual(parseListenAddress('localhost:80'), { host: 'localhost', port: 80 });
  for (const bad of ['', 'http://x:80', ':99999', 'host', '::1:80', ':-1', ':80x']) {
    assert.throws(() => parseListenAddress(bad), /invalid --listen/, bad);
  }
});
