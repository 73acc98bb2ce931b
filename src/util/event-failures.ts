// An exception while processing one change (a bug, or an object no code path expected: one nested
// thousands of levels deep overflows the diff's stack) costs that change at that stage, never the
// watch, and never the other sinks' copy of it. Each stage catches what it calls and reports it here:
// logged once per kind of failure (stage, error class and message), with the object's identity but
// never its contents (an error message may quote a value, so quoted text is left out), and counted
// per stage for the metrics (kubediff_event_failures_total). With --debug every failure is logged,
// with its stack. The stages are the Pipeline's (FAILURE_STAGES, src/events/pipeline.ts).
import type { Logger } from './log.ts';

/** Which object a change is about: never its contents. */
export interface ObjectIdentity {
  /** The qualified resource: deployments.apps, configmaps. */
  resource: string;
  namespace?: string | undefined;
  /** Absent when the failure concerns the resource type, not one object. */
  name?: string | undefined;
  uid?: string | undefined;
  resourceVersion?: string | undefined;
}

/** What is done about it instead, one phrase: "reported as one change of the whole object". */
export type Consequence = string;

const MAX_MESSAGE_CHARS = 200;

/**
 * What a stage needs: to report a failure. A stage declares the names it reports under (the informer's
 * are `normalize` and `handler`), so that a misspelt one does not compile.
 */
export interface FailureReporter<Stage extends string> {
  report(stage: Stage, what: string, object: ObjectIdentity, error: unknown, consequence: Consequence): void;
}

/** Failures of single changes, reported once per kind and counted per stage. */
export class EventFailures implements FailureReporter<string> {
  private readonly log: Logger;
  private readonly counts = new Map<string, number>();
  private readonly logged = new Set<string>();

  constructor(log: Logger) {
    this.log = log;
  }

  /**
   * One failure: `what` failed ("the diff", "sink webhook …") for `object`; `consequence` says what
   * happens to the change instead.
   */
  report(
    stage: string,
    what: string,
    object: ObjectIdentity,
    error: unknown,
    consequence: Consequence,
  ): void {
    this.counts.set(stage, (this.counts.get(stage) ?? 0) + 1);
    const cause = describeError(error);
    const line = `${what} failed for ${describeObject(object)}: ${cause}; ${consequence}.`;
    const kind = `${stage}\u0000${what}\u0000${cause}`;
    if (this.logged.has(kind)) {
      this.log.debug(line);
    } else {
      this.logged.add(kind);
      this.log.warn(`${line} Further failures of this kind are only counted (--debug shows each one).`, {
        component: 'event-failures',
        stage,
      });
    }
    if (error instanceof Error && error.stack) this.log.debug(redactQuoted(error.stack));
  }

  /** Failures so far, per stage. */
  count(stage: string): number {
    return this.counts.get(stage) ?? 0;
  }
}

/** The identity fields of `object` (metadata, a stored object, an event's object), nothing else. */
export function identityOf(
  resource: string,
  object: { namespace?: string | undefined; name: string; uid?: string; resourceVersion?: string },
): ObjectIdentity {
  return {
    resource,
    namespace: object.namespace,
    name: object.name,
    uid: object.uid,
    resourceVersion: object.resourceVersion,
  };
}

/** `configmaps shop/web (uid 6f1c…, resourceVersion 48213)`. */
function describeObject(object: ObjectIdentity): string {
  if (object.name === undefined) return object.resource;
  const ids = [
    object.uid ? `uid ${object.uid}` : '',
    object.resourceVersion ? `resourceVersion ${object.resourceVersion}` : '',
  ].filter(Boolean);
  const name = object.namespace ? `${object.namespace}/${object.name}` : object.name;
  return `${object.resource} ${name}${ids.length > 0 ? ` (${ids.join(', ')})` : ''}`;
}

/** `RangeError: Maximum call stack size exceeded`, with quoted text (maybe a value) left out. */
function describeError(error: unknown): string {
  const name = error instanceof Error ? error.name : typeof error;
  const message = redactQuoted(error instanceof Error ? error.message : String(error));
  const short = message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS)}…` : message;
  return short ? `${name}: ${short}` : name;
}

/** JSON.parse and others quote the text they choke on: that text may be a Secret's value. */
function redactQuoted(text: string): string {
  return text.replace(/"[^"\n]*"|'[^'\n]*'|`[^`\n]*`/g, '"…"');
}
