import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { escapeSegment, formatPointer, parsePointer } from '../../../src/diff/pointer.ts';

describe('formatPointer', () => {
  it('joins segments, escaping ~ as ~0 and / as ~1', () => {
    assert.equal(
      formatPointer(['metadata', 'labels', 'app.kubernetes.io/name']),
      '/metadata/labels/app.kubernetes.io~1name',
    );
    assert.equal(formatPointer(['a~b', 'c/~d']), '/a~0b/c~1~0d');
    assert.equal(formatPointer(['spec', 'containers', 0, 'image']), '/spec/containers/0/image');
  });

  it('formats the whole document as "" and an empty key as a trailing /', () => {
    assert.equal(formatPointer([]), '');
    assert.equal(formatPointer(['']), '/');
  });

  it('escapes ~ before /, so "~1" stays a literal tilde-one', () => {
    assert.equal(escapeSegment('~1'), '~01');
  });
});

describe('parsePointer', () => {
  it('splits and unescapes', () => {
    assert.deepEqual(parsePointer('/metadata/labels/app.kubernetes.io~1name'), [
      'metadata',
      'labels',
      'app.kubernetes.io/name',
    ]);
    assert.deepEqual(parsePointer('/a~0b/c~1~0d'), ['a~b', 'c/~d']);
    assert.deepEqual(parsePointer('/spec/containers/0'), ['spec', 'containers', '0']);
  });

  it('reads ~01 as "~1", not "/" (RFC 6901 order)', () => {
    assert.deepEqual(parsePointer('/~01'), ['~1']);
  });

  it('accepts the whole document and empty keys', () => {
    assert.deepEqual(parsePointer(''), []);
    assert.deepEqual(parsePointer('/'), ['']);
    assert.deepEqual(parsePointer('/a//b/'), ['a', '', 'b', '']);
  });

  it('round-trips with formatPointer', () => {
    const segments = ['we/ird', '~', '~1', '', 'ok', '/~'];
    assert.deepEqual(parsePointer(formatPointer(segments)), segments);
  });

  it('rejects a path without the leading slash, with an example', () => {
    assert.throws(() => parsePointer('spec/replicas'), {
      message: '"spec/replicas" is not a JSON Pointer: it must start with "/" (for example /spec/replicas)',
    });
  });

  it('rejects ~ not followed by 0 or 1', () => {
    const message =
      '"/a~2b" is not a JSON Pointer: "~" must be followed by 0 or 1 (write ~0 for "~" and ~1 for "/")';
    assert.throws(() => parsePointer('/a~2b'), { message });
    assert.throws(() => parsePointer('/ok/end~'), /"\/ok\/end~" is not a JSON Pointer: "~" must be followed/);
  });
});
