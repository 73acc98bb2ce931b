// src/who/admission/review-head.ts: the kind, apiVersion and request uid of a review, from its first bytes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JsonObject } from '../../../src/kube/types.ts';
import { reviewHeadOf } from '../../../src/who/admission/review-head.ts';
import { largeReviewBody, reviewBody } from '../../helpers/admission-load.ts';
import { hostileDocument, mangled } from '../../helpers/hostile-input.ts';
import { seededRandom } from '../../helpers/random-json.ts';

const head = (text: string, maxBytes = 64 * 1024) => reviewHeadOf(Buffer.from(text), maxBytes);

describe("a review's head", () => {
  it("is read from the API server's order, however large the rest", () => {
    assert.deepEqual(head(reviewBody('review-1')), {
      apiVersion: 'admission.k8s.io/v1',
      requestUID: 'review-1',
    });
    const large = largeReviewBody(20_000).withUid('0f6a1b52-9a3c-4e71-8d0e-2b5c7a9f1e33');
    assert.deepEqual(reviewHeadOf(large, 64 * 1024), {
      apiVersion: 'admission.k8s.io/v1',
      requestUID: '0f6a1b52-9a3c-4e71-8d0e-2b5c7a9f1e33',
    });
  });

  it('in any order, escapes decoded, within the bytes it may read', () => {
    // The request first: its uid comes before kind and apiVersion, so the head is not there.
    assert.equal(
      head('{"request":{"uid":"r"},"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1"}'),
      undefined,
    );
    const text = `{ "kind" : "AdmissionReview", "x": [1, {"y": "}]"}, null], "apiVersion":"admission.k8s.io/v1",\n "request": {"kind": {"a": [true]}, "u\\u0069d": "r\\"1", "object": {`;
    assert.deepEqual(head(text), { apiVersion: 'admission.k8s.io/v1', requestUID: 'r"1' });
    assert.equal(head(text, text.indexOf('"r\\"1"') + 3), undefined, 'the uid is cut at maxBytes');
  });

  it('none for what is not an admission.k8s.io/v1 AdmissionReview with a uid', () => {
    const body = (changes: JsonObject) =>
      JSON.stringify({ ...(JSON.parse(reviewBody('r')) as JsonObject), ...changes });
    assert.equal(head(body({ kind: 'AdmissionReviewX' })), undefined);
    assert.equal(head(body({ apiVersion: 'admission.k8s.io/v1beta1' })), undefined);
    assert.equal(head(body({ request: { uid: '' } })), undefined);
    assert.equal(head(body({ request: { uid: 7 } })), undefined);
    assert.equal(head(body({ request: { uid: 'u'.repeat(129) } })), undefined);
    assert.equal(head(body({ request: [] })), undefined);
    assert.equal(head('[]'), undefined);
    assert.equal(head(''), undefined);
  });

  it('never disagrees with JSON.parse: 2,000 hostile and mangled reviews', () => {
    const random = seededRandom(36);
    const template = JSON.parse(reviewBody('review-1')) as JsonObject;
    let found = 0;
    for (let index = 0; index < 2_000; index++) {
      const text = random() < 0.7 ? hostileDocument(random, template) : mangled(random, reviewBody('r-2'));
      const scanned = head(text);
      if (!scanned) continue;
      found++;
      // What JSON.parse reads of the same bytes (decoded as the server decodes them), up to the uid (the rest is not the head's to check).
      let parsed: { kind?: unknown; apiVersion?: unknown; request?: { uid?: unknown } } | undefined;
      try {
        parsed = JSON.parse(Buffer.from(text).toString('utf8')) as typeof parsed;
      } catch {
        parsed = undefined;
      }
      if (parsed) {
        assert.deepEqual(
          { apiVersion: parsed.apiVersion, requestUID: parsed.request?.uid, kind: parsed.kind },
          { ...scanned, kind: 'AdmissionReview' },
          `input ${index}: ${text.slice(0, 300)}`,
        );
      }
    }
    assert.ok(found > 400, `${found} heads found`);
  });
});
