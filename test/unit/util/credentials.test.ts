// Credentials (src/util/credentials.ts): every form a credential is sent or echoed in is replaced, and
// nothing else. The sinks' receivers echoing them, in-process: test/unit/redaction-leaks.test.ts; end to
// end: test/integration/redaction-leaks.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CREDENTIAL_MARK, Credentials, scrubbingLogger } from '../../../src/util/credentials.ts';
import { memoryLog } from '../../helpers/sink-test.ts';

const M = CREDENTIAL_MARK;
const b64 = (text: string) => Buffer.from(text).toString('base64');

describe('credentials', () => {
  it('a secret: as it is, JSON-escaped, URL-encoded, in base64 (padded or not, URL-safe)', () => {
    const value = 's3cr"et/+ key=';
    const credentials = Credentials.of([{ kind: 'secret', value }]);
    for (const form of [
      value,
      JSON.stringify(value).slice(1, -1),
      encodeURIComponent(value),
      b64(value),
      b64(value).replace(/=+$/, ''),
      Buffer.from(value).toString('base64url'),
    ]) {
      assert.equal(credentials.scrub(`before ${form} after`), `before ${M} after`, form);
    }
    assert.equal(credentials.scrub('nothing here'), 'nothing here');
  });

  it('a header value: whole, word by word, and what Basic and ApiKey stand for', () => {
    const credentials = Credentials.of([
      { kind: 'header', value: 'Bearer tok3n-abcdef' },
      { kind: 'header', value: `Basic ${b64('alice:passw0rd!x')}` },
      { kind: 'header', value: `ApiKey ${b64('key-id:key-secret-9')}` },
    ]);
    assert.equal(credentials.scrub('authorization: Bearer tok3n-abcdef'), `authorization: ${M}`);
    assert.equal(credentials.scrub('got tok3n-abcdef'), `got ${M}`);
    assert.equal(credentials.scrub(`got ${b64('tok3n-abcdef')}`), `got ${M}`);
    assert.equal(credentials.scrub('user alice:passw0rd!x'), `user ${M}`);
    assert.equal(credentials.scrub('wrong password passw0rd!x'), `wrong password ${M}`);
    assert.equal(credentials.scrub('key key-secret-9 is revoked'), `key ${M} is revoked`);
    // The scheme's name alone is not a credential.
    assert.equal(credentials.scrub('Basic realm="x", Bearer'), 'Basic realm="x", Bearer');
  });

  it('basic authentication: the password, and base64 of user:password as sent', () => {
    const credentials = Credentials.of([{ kind: 'basic', user: 'kubediff', password: 'hunter2-xyz' }]);
    assert.equal(credentials.scrub(`Basic ${b64('kubediff:hunter2-xyz')}`), `Basic ${M}`);
    assert.equal(credentials.scrub('password hunter2-xyz'), `password ${M}`);
    assert.equal(credentials.scrub('user kubediff'), 'user kubediff');
  });

  it('a URL: its secret path segments and query values, encoded and not; never its plain words', () => {
    const credentials = Credentials.of([
      { kind: 'url', value: 'https://hooks.slack.com/services/T0AB12CD3/B0EF45GH6/xYz%2Bsecret42' },
      {
        kind: 'url',
        value: 'https://chat.googleapis.com/v1/spaces/AAAAx1y2z3/messages?key=AIzaKey123&token=tok%3Den456',
      },
    ]);
    assert.equal(credentials.scrub('POST /services/T0AB12CD3/B0EF45GH6/xYz%2Bsecret42'), `POST ${M}`);
    assert.equal(credentials.scrub('no hook xYz+secret42'), `no hook ${M}`);
    assert.equal(credentials.scrub('key=AIzaKey123 token=tok=en456'), `key=${M} token=${M}`);
    assert.equal(credentials.scrub('token=tok%3Den456'), `token=${M}`);
    assert.equal(
      credentials.scrub('no such services, webhooks or messages, in spaces'),
      'no such services, webhooks or messages, in spaces',
    );
  });

  it('values shorter than 6 characters are not searched for: they cannot be told from words', () => {
    const credentials = Credentials.of([
      { kind: 'secret', value: 'prod' },
      { kind: 'header', value: '1' },
    ]);
    assert.equal(credentials.empty, true);
    assert.equal(credentials.scrub('prod 1'), 'prod 1');
  });

  it('the longest form first; unions; a logger whose lines and fields are scrubbed', () => {
    const credentials = Credentials.of([{ kind: 'secret', value: 'abcdef' }]).union(
      Credentials.of([{ kind: 'secret', value: 'abcdefghij' }]),
    );
    assert.equal(credentials.scrub('abcdefghij abcdef'), `${M} ${M}`);
    const log = memoryLog();
    const scrubbed = scrubbingLogger(log, credentials);
    scrubbed.warn('receiver said abcdefghij');
    scrubbed.info('fine');
    scrubbed.debug('abcdef');
    assert.deepEqual(log.lines, [`warn: receiver said ${M}`, 'info: fine', `debug: ${M}`]);
    assert.equal(scrubbingLogger(log, Credentials.none), log);
  });
});
