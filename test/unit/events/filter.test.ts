// Filter semantics of the config file's rules (src/events/filter.ts) and the watch's rules stage with
// --explain (src/events/watch-rules.ts). The same rules run against the API server in
// test/integration/config-filters.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DiscoveryResolver } from '../../../src/events/discovery-resolver.ts';
import type { ChangeEvent } from '../../../src/events/event.ts';
import { explainLine } from '../../../src/events/explain.ts';
import { compileFilter } from '../../../src/events/filter.ts';
import { watchRules } from '../../../src/events/watch-rules.ts';
import type { ResourceType } from '../../../src/kube/types.ts';
import type { Logger } from '../../../src/util/log.ts';
import { type SampleOverrides, sampleEvent } from '../../helpers/events.ts';

/** The sample event with two changes, so that ignore/only can keep one. */
function event(overrides: SampleOverrides = {}): ChangeEvent {
  return sampleEvent({
    changes: [
      { op: 'replace', path: '/spec/replicas', from: 2, to: 5 },
      { op: 'replace', path: '/spec/template/spec/containers/0/image', from: 'a', to: 'b' },
    ],
    ...overrides,
  });
}

const configmap = (overrides: SampleOverrides = {}) =>
  event({
    ...overrides,
    object: { apiVersion: 'v1', kind: 'ConfigMap', resource: 'configmaps', ...overrides.object },
    changes: overrides.changes ?? [{ op: 'replace', path: '/data/a', from: '1', to: '2' }],
  });

const widget = event({
  object: { apiVersion: 'example.com/v1', kind: 'Widget', resource: 'widgets' },
});

describe('config filters: namespaces', () => {
  it('globs include and exclude; exact names too', () => {
    const filter = compileFilter({ namespaces: ['team-*', 'shop'], excludeNamespaces: ['*-sandbox'] });
    const cases: [string, boolean][] = [
      ['shop', true],
      ['team-a', true],
      ['team-a-sandbox', false],
      ['teams', false],
      ['kube-system', false],
    ];
    for (const [namespace, expected] of cases) {
      assert.equal(filter.evaluate(event({ object: { namespace } })).deliver, expected, namespace);
    }
    assert.deepEqual(filter.evaluate(event({ object: { namespace: 'team-a-sandbox' } })), {
      deliver: false,
      rule: 'excludeNamespaces',
      reason: 'namespace team-a-sandbox is excluded (*-sandbox)',
    });
    assert.equal(
      filter.evaluate(event({ object: { namespace: 'team-a' } })).reason,
      'namespace team-a (team-*)',
    );
  });

  it('? is one character; excludeNamespaces leaves cluster-scoped objects alone', () => {
    const filter = compileFilter({ excludeNamespaces: ['ns-?'] });
    assert.equal(filter.evaluate(event({ object: { namespace: 'ns-1' } })).deliver, false);
    assert.equal(filter.evaluate(event({ object: { namespace: 'ns-12' } })).deliver, true);
    const node = event({ object: { apiVersion: 'v1', kind: 'Node', resource: 'nodes' } });
    delete node.object.namespace;
    assert.equal(filter.evaluate(node).deliver, true);
  });
});

describe('config filters: resources', () => {
  it('short names of built-in types work without discovery', () => {
    assert.equal(compileFilter({ resources: ['deploy'] }).evaluate(event()).deliver, true);
    assert.equal(compileFilter({ resources: ['cm'] }).evaluate(configmap()).deliver, true);
    assert.equal(compileFilter({ resources: ['cm'] }).evaluate(event()).deliver, false);
    assert.equal(compileFilter({ excludeResources: ['deploy'] }).evaluate(event()).deliver, false);
  });

  it('discovery resolves short names of custom resources', () => {
    const resolver = new DiscoveryResolver();
    const types: ResourceType[] = [
      {
        group: 'example.com',
        version: 'v1',
        resource: 'widgets',
        kind: 'Widget',
        namespaced: true,
        singularName: 'widget',
        shortNames: ['wd'],
      } as ResourceType,
    ];
    resolver.update(types);
    const filter = compileFilter({ resources: ['wd'] }, { resolve: resolver.resolve });
    assert.equal(filter.evaluate(widget).deliver, true);
    assert.equal(filter.evaluate(event()).deliver, false);
    assert.equal(
      compileFilter({ resources: ['wd'] }).evaluate(widget).deliver,
      false,
      'unknown without discovery',
    );
  });

  it('*.group matches every type of the group and its subgroups', () => {
    const filter = compileFilter({ resources: ['*.example.com'] });
    assert.equal(filter.evaluate(widget).deliver, true);
    const sub = event({ object: { apiVersion: 'ops.example.com/v1', kind: 'Gadget', resource: 'gadgets' } });
    assert.equal(filter.evaluate(sub).deliver, true);
    const lookalike = event({ object: { apiVersion: 'notexample.com/v1', kind: 'X', resource: 'xs' } });
    assert.equal(filter.evaluate(lookalike).deliver, false);
    assert.equal(filter.evaluate(event()).deliver, false);
  });
});

describe('config filters: path rules', () => {
  it('ignore removes matching changes and keeps the rest; all ignored drops the event', () => {
    const filter = compileFilter({ ignore: ['/spec/replicas'] });
    const verdict = filter.evaluate(event());
    assert.equal(verdict.deliver, true);
    assert.deepEqual(verdict.deliver && verdict.event?.changes, [
      { op: 'replace', path: '/spec/template/spec/containers/0/image', from: 'a', to: 'b' },
    ]);
    assert.equal(verdict.reason, '1 change ignored');
    const onlyReplicas = event({ changes: [{ op: 'replace', path: '/spec/replicas', from: 1, to: 2 }] });
    assert.deepEqual(filter.evaluate(onlyReplicas), {
      deliver: false,
      rule: 'ignore',
      reason: 'every change is ignored (/spec/replicas)',
    });
    // A change above the ignored path (the whole spec replaced) is not ignored.
    const wholeSpec = event({ changes: [{ op: 'replace', path: '/spec', from: {}, to: {} }] });
    assert.equal(filter.evaluate(wholeSpec).deliver, true);
  });

  it('per-resource rules only concern their resources', () => {
    const filter = compileFilter({ ignore: [{ path: '/spec/replicas', resources: ['deploy'] }] });
    const scaled = [{ op: 'replace' as const, path: '/spec/replicas', from: 1, to: 2 }];
    assert.equal(filter.evaluate(event({ changes: scaled })).deliver, false);
    const sts = event({
      object: { kind: 'StatefulSet', resource: 'statefulsets' },
      changes: scaled,
    });
    assert.equal(filter.evaluate(sts).deliver, true);
  });

  it('only keeps UPDATED events with a matching change, with all their changes', () => {
    const filter = compileFilter({ only: ['/spec/template/spec/containers/*/image'] });
    const verdict = filter.evaluate(event());
    assert.equal(verdict.deliver, true);
    assert.equal(verdict.deliver && verdict.event, undefined, 'the event is delivered unchanged');
    const replicas = event({ changes: [{ op: 'replace', path: '/spec/replicas', from: 1, to: 2 }] });
    assert.deepEqual(filter.evaluate(replicas), {
      deliver: false,
      rule: 'only',
      reason: 'no change is at or under /spec/template/spec/containers/*/image',
    });
    assert.equal(filter.evaluate(event({ type: 'ADDED', changes: undefined })).deliver, true);
  });

  it('only for some resources leaves the others alone; ignore runs before only', () => {
    const filter = compileFilter({
      only: [{ path: '/spec/template/spec/containers/*/image', resources: ['deploy'] }],
    });
    assert.equal(filter.evaluate(configmap()).deliver, true);
    const both = compileFilter({
      ignore: ['/spec/template/spec/containers/*/image'],
      only: ['/spec/template/spec/containers/*/image'],
    });
    assert.equal(both.evaluate(event()).deliver, false);
  });
});

describe('the watch rules stage and --explain', () => {
  function recorder(): { log: Logger; lines: string[] } {
    const lines: string[] = [];
    const log: Logger = { info: (message) => lines.push(message), warn: () => {}, debug: () => {} };
    return { log, lines };
  }
  const router = (verdicts: { sink: string; deliver: boolean }[]) => ({
    explain: () =>
      verdicts.map(({ sink, deliver }) => ({
        sink,
        verdict: deliver
          ? { deliver: true as const, reason: 'the sink has no filter' }
          : { deliver: false as const, rule: 'types' as const, reason: 'type UPDATED is not in [DELETED]' },
      })),
  });

  it('explains each sink, one line per event per sink', () => {
    const { log, lines } = recorder();
    const rules = watchRules(
      { events: new Set(['ADDED', 'UPDATED', 'DELETED']), explain: true },
      {
        router: router([
          { sink: 'stdout', deliver: true },
          { sink: 'audit', deliver: false },
        ]),
        log,
      },
    );
    assert.ok(rules(event()));
    assert.deepEqual(lines, [
      'explain: UPDATED deployments.apps shop/web u1:5 → stdout: delivered (the sink has no filter)',
      'explain: UPDATED deployments.apps shop/web u1:5 → audit: dropped by types: type UPDATED is not in [DELETED]',
    ]);
  });

  it('drops by event type and by the watch rules, said once for all sinks; trims ignored changes', () => {
    const { log, lines } = recorder();
    const rules = watchRules(
      {
        events: new Set(['UPDATED']),
        explain: true,
        filter: { ignore: [{ path: '/spec/replicas', resources: ['deploy'] }] },
      },
      { router: router([]), log },
    );
    assert.equal(rules(event({ type: 'DELETED', changes: undefined })), undefined);
    assert.equal(
      rules(event({ changes: [{ op: 'replace', path: '/spec/replicas', from: 1, to: 2 }] })),
      undefined,
    );
    assert.deepEqual(rules(event())?.changes, [
      { op: 'replace', path: '/spec/template/spec/containers/0/image', from: 'a', to: 'b' },
    ]);
    assert.deepEqual(lines, [
      'explain: DELETED deployments.apps shop/web u1:5 → all sinks: dropped by types: events: updated does not include deleted',
      'explain: UPDATED deployments.apps shop/web u1:5 → all sinks: dropped by ignore: every change is ignored (/spec/replicas for deploy)',
    ]);
  });

  it('without --explain says nothing', () => {
    const { log, lines } = recorder();
    const rules = watchRules(
      { events: new Set(['UPDATED']) },
      { router: router([{ sink: 's', deliver: true }]), log },
    );
    rules(event());
    rules(event({ type: 'ADDED' }));
    assert.deepEqual(lines, []);
  });

  it('explainLine: cluster-scoped objects and trimmed events', () => {
    const node = event({ object: { apiVersion: 'v1', kind: 'Node', resource: 'nodes', name: 'n1' } });
    delete node.object.namespace;
    const trimmed = { ...node, changes: node.changes?.slice(1) };
    assert.equal(
      explainLine(node, 'hook', { deliver: true, reason: '1 change ignored', event: trimmed }),
      'explain: UPDATED nodes n1 u1:5 → hook: delivered (1 change ignored; 1 of 2 changes kept)',
    );
  });
});

describe('config filters: reasons only for --explain', () => {
  it('gives the same verdict without a reason when not asked to explain', () => {
    const filter = compileFilter({
      types: ['UPDATED', 'ADDED'],
      namespaces: ['shop', 'team-*'],
      resources: ['deployments', 'configmaps'],
      ignore: [{ path: '/spec/replicas' }],
      only: [{ path: '/spec/template', resources: ['deployments'] }],
    });
    const events = [
      event(),
      event({ type: 'DELETED' }),
      event({ object: { namespace: 'other' } }),
      event({ changes: [{ op: 'replace', path: '/spec/replicas', from: 1, to: 2 }] }),
      configmap(),
      widget,
    ];
    for (const each of events) {
      const explained = filter.evaluate(each);
      const quiet = filter.evaluate(each, false);
      assert.notEqual(explained.reason, '');
      assert.equal(quiet.reason, '');
      assert.deepEqual({ ...quiet, reason: explained.reason }, explained);
    }
    assert.equal(compileFilter({}).evaluate(event(), false).reason, '');
    assert.equal(compileFilter({}).evaluate(event()).reason, 'the sink has no filter');
  });
});
