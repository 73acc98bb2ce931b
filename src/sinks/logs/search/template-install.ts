// The index template goes in before the documents (docs/sinks.md, "OpenSearch and Elasticsearch"): a daily
// index created under dynamic mapping keeps those mappings for its day, so a refused template holds the
// batch back instead of letting it through without. A refusal (400, 409, 5xx: a node just started answers
// 400 while its own templates are not ready) fails the batch as retryable, and the batch loop retries it on
// the sink's schedule; refused on the batch's last attempt, the batch goes without the template. 403 (no
// privilege to manage templates) goes without it at once; 401 fails the batch (the credentials). No answer,
// 408, 425 and 429 say nothing of the template: retried as any request. While the cluster takes no
// documents either (a _bulk failure worth retrying: down, overloaded), the template is tried again first;
// going without it is said once, when the cluster has answered a _bulk request without it.
import { plural } from '../../../util/count-text.ts';
import { failedTransmission, type Transmission } from '../../core/batch-sink.ts';
import type { TroubleReport } from '../../core/delivery.ts';
import type { PostOutcome } from '../../core/http.ts';

/** What the sink hands its template: the one request, and what it says and how often it retries. */
export interface TemplateInstallOptions {
  /** The template's name, for the logs. */
  name: string;
  /** PUT the template. */
  put: () => Promise<PostOutcome>;
  trouble: TroubleReport;
  /** The batch's attempts (RetryOptions.maxAttempts): refused on the last, the batch goes without it. */
  maxAttempts: number;
  /** false: the template is someone else's business (`template: false`). */
  wanted: boolean;
}

/** An answer that says the cluster is busy, not that it refuses the template. */
const BUSY = new Set([408, 425, 429]);

type State =
  /** Tried before the next batch. */
  | 'wanted'
  | 'installed'
  /** Not kubediff's to install. */
  | 'off'
  /** Refused: documents go without it. */
  | 'without';

export class TemplateInstall {
  private readonly options: TemplateInstallOptions;
  private state: State;
  /**
   * Failed attempts, answered or not (401, 403 aside). Every attempt of a batch tries the template first,
   * so a batch's last attempt finds at least maxAttempts here: its refusal then lets the batch through.
   */
  private failures = 0;
  /** Said once the cluster answers a _bulk request without the template. */
  private pendingWarning: string | undefined;
  private warned = false;

  constructor(options: TemplateInstallOptions) {
    this.options = options;
    this.state = options.wanted ? 'wanted' : 'off';
  }

  /** The template must be tried before the next _bulk request. */
  get pending(): boolean {
    return this.state === 'wanted';
  }

  /** Tries the template; a Transmission failure when the batch must wait (or fail), else undefined. */
  async install(): Promise<Transmission | undefined> {
    const { name, trouble } = this.options;
    const outcome = await this.options.put();
    if (outcome.ok) {
      this.state = 'installed';
      // After "indexing without it", the news that it is in place after all is worth a line.
      if (this.warned) trouble.info(`index template ${name} installed.`);
      else trouble.debug(`index template ${name} installed`);
      return undefined;
    }
    if (outcome.aborted) return failedTransmission(outcome);
    if (outcome.status === 401) {
      // The credentials are refused: no document would be taken either. The batch fails with this
      // reason (said once), and the next one tries the template again.
      return {
        ok: false,
        retryable: false,
        aborted: false,
        reason: `${outcome.reason}: the cluster does not accept kubediff's credentials (installing the index template); check username and password, or the API key`,
        key: 'HTTP 401',
      };
    }
    if (outcome.status === 403) {
      // Documents may still index under a template installed by someone else.
      this.goWithout(
        outcome.reason,
        'install it yourself (docs/sinks.md) or give kubediff the manage_index_templates privilege',
      );
      return undefined;
    }
    this.failures++;
    const refused = outcome.status !== undefined && !BUSY.has(outcome.status);
    if (refused && this.failures >= this.options.maxAttempts) {
      this.goWithout(
        `${outcome.reason}, after ${plural(this.failures, 'attempt')}`,
        'install it yourself (docs/sinks.md)',
      );
      return undefined;
    }
    if (outcome.status === undefined) return failedTransmission(outcome);
    // Retried whatever the status; a 413 here is not the batch's size (never sent in halves).
    return {
      ok: false,
      retryable: true,
      aborted: false,
      reason: `${outcome.reason} (installing the index template ${name})`,
      key: `index template: HTTP ${outcome.status}`,
      ...(outcome.retryAfterMs !== undefined ? { retryAfterMs: outcome.retryAfterMs } : {}),
    };
  }

  /** Told of every _bulk answer. */
  bulkAnswered(outcome: PostOutcome): void {
    if (this.state !== 'without') return;
    if (!outcome.ok && (outcome.retryable || outcome.aborted)) {
      // The cluster takes nothing now (down, overloaded): the template goes first again.
      this.state = 'wanted';
      return;
    }
    if (this.pendingWarning === undefined) return;
    this.options.trouble.refused('index template', this.pendingWarning);
    this.pendingWarning = undefined;
    this.warned = true;
  }

  private goWithout(reason: string, remedy: string): void {
    this.state = 'without';
    this.pendingWarning = `could not install the index template ${this.options.name} (${reason}); indexing without it: ${remedy}.`;
  }
}
