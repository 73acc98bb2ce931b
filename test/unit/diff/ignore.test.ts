import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_IGNORED_PATHS, PathMatcher } from '../../../src/diff/ignore.ts';
import { parsePointer } from '../../../src/diff/pointer.ts';

describe('PathMatcher', () => {
  it('matches a pattern, everything below it, and nothing beside or above it', () => {
    const matcher = new PathMatcher(['/metadata/managedFields']);
    assert.equal(matcher.matches(['metadata', 'managedFields']), true);
    assert.equal(matcher.matches(['metadata', 'managedFields', '0', 'manager']), true);
    assert.equal(matcher.matches(['metadata']), false);
    assert.equal(matcher.matches(['metadata', 'managedFieldsX']), false);
    assert.equal(matcher.matches(['metadata', 'name']), false);
    assert.equal(matcher.matches([]), false);
  });

  it('lets * stand for any single segment', () => {
    const matcher = new PathMatcher(['/spec/template/spec/containers/*/image']);
    assert.equal(matchesPointer(matcher, '/spec/template/spec/containers/0/image'), true);
    assert.equal(matchesPointer(matcher, '/spec/template/spec/containers/12/image'), true);
    assert.equal(matchesPointer(matcher, '/spec/template/spec/containers/0/image/extra'), true);
    assert.equal(matchesPointer(matcher, '/spec/template/spec/containers/0/name'), false);
    assert.equal(matchesPointer(matcher, '/spec/template/spec/containers/0'), false);
    assert.equal(matchesPointer(matcher, '/spec/template/spec/containers'), false);
  });

  it('tries both a literal segment and a wildcard at the same level', () => {
    const matcher = new PathMatcher(['/a/x/b', '/a/*/c']);
    assert.equal(
      matchesPointer(matcher, '/a/x/c'),
      true,
      'the literal branch fails, the wildcard one matches',
    );
    assert.equal(matchesPointer(matcher, '/a/x/b'), true);
    assert.equal(matchesPointer(matcher, '/a/y/b'), false);
    assert.equal(matchesPointer(matcher, '/a/y/c'), true);
  });

  it('unescapes patterns, so keys with / can be ignored', () => {
    const matcher = new PathMatcher(['/metadata/annotations/deployment.kubernetes.io~1revision']);
    assert.equal(matcher.matches(['metadata', 'annotations', 'deployment.kubernetes.io/revision']), true);
    assert.equal(matcher.matches(['metadata', 'annotations', 'deployment.kubernetes.io']), false);
  });

  it('is empty only without patterns, and then matches nothing', () => {
    assert.equal(new PathMatcher([]).isEmpty, true);
    assert.equal(matchesPointer(new PathMatcher([]), '/status'), false);
    assert.equal(new PathMatcher(['/status']).isEmpty, false);
  });

  it('rejects invalid patterns with one sentence', () => {
    assert.throws(() => new PathMatcher(['status']), {
      message: '"status" is not a JSON Pointer: it must start with "/" (for example /status)',
    });
    assert.throws(() => new PathMatcher(['']), {
      message: '"" cannot be ignored: it is the whole object; name a path such as /status',
    });
  });

  it('steps a cursor key by key, for walkers', () => {
    const matcher = new PathMatcher(['/metadata/managedFields', '/spec/*/secret']);
    const root = matcher.start();
    const metadata = matcher.step(root, 'metadata');
    assert.notEqual(metadata, 'matched');
    if (metadata === 'matched') return;
    assert.equal(matcher.step(metadata, 'managedFields'), 'matched');
    assert.deepEqual(matcher.step(metadata, 'name'), [], 'nothing below metadata/name can be ignored');
    assert.deepEqual(matcher.step(root, 'kind'), []);
    const spec = matcher.step(root, 'spec');
    if (spec === 'matched') assert.fail('spec is not ignored');
    const item = matcher.step(spec, 'anything');
    if (item === 'matched') assert.fail('spec/anything is not ignored');
    assert.equal(matcher.step(item, 'secret'), 'matched');
  });
});

describe('ignored paths', () => {
  it('defaults to managedFields, resourceVersion, generation and status', () => {
    assert.deepEqual(DEFAULT_IGNORED_PATHS, [
      '/metadata/managedFields',
      '/metadata/resourceVersion',
      '/metadata/generation',
      '/status',
    ]);
    const matcher = new PathMatcher(DEFAULT_IGNORED_PATHS);
    assert.equal(matchesPointer(matcher, '/status/conditions/0/type'), true);
    assert.equal(matchesPointer(matcher, '/metadata/resourceVersion'), true);
    assert.equal(matchesPointer(matcher, '/metadata/generation'), true);
    assert.equal(matchesPointer(matcher, '/metadata/generateName'), false);
    assert.equal(matchesPointer(matcher, '/spec/replicas'), false);
  });
});

/** Does `matcher` match the path of this JSON Pointer? */
function matchesPointer(matcher: PathMatcher, pointer: string): boolean {
  return matcher.matches(parsePointer(pointer));
}
