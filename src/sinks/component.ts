// The contract of a sink type: everything kubediff knows about one type is in its folder
// (src/sinks/<group>/<type>/), as one SinkComponent that src/sinks/registry.ts lists. Plain data and
// functions: its config entry's schema fragment (with the formats of its values), the checks of what spans
// its keys, its flags (as data), how flags and a config entry become its spec, its default name, its
// credentials, and its factory, which imports the implementation only when such a sink is created (so
// undici, the Kafka client or the OpenTelemetry packages load only when used). The config layer assembles
// the file's schema, its formats, the checks, the flags and the specs from the registry; createSinks
// (core/setup.ts) creates each sink through it.
import type { Writable } from 'node:stream';
import type { FilterSpec } from '../events/filter.ts';
import type { StoryOptions } from '../events/story.ts';
import type { Credential, Credentials } from '../util/credentials.ts';
import type { Env } from '../util/environment.ts';
import type { EventFailures } from '../util/event-failures.ts';
import type { FlagSpec } from '../util/flag-spec.ts';
import type { Checks, KeyPath } from '../util/key-checks.ts';
import type { Logger } from '../util/log.ts';
import type { ValueFormat } from '../util/value-format.ts';
import type { DeadLetterFile, DeadLetterLimits } from './core/dead-letter.ts';
import type { DeliveryObserver, RetryOptions } from './core/delivery.ts';
import type { Sink } from './core/sink.ts';

/** What every sink's spec has. */
export interface CommonSinkSpec {
  /** For logs and reports; a default is derived (URLs elided). */
  name?: string;
  filter?: FilterSpec;
  /**
   * Stories instead of events (docs/stories.md); a config file's `stories: true/false` until the
   * settings resolve it to the story options (on) or remove it (off).
   */
  stories?: Partial<StoryOptions> | boolean;
}

/** What every sink that delivers (every type whose component does not say `delivers: false`) has. */
export interface HttpSinkSpec extends CommonSinkSpec {
  /** Per request. */
  timeoutMs?: number;
  retry?: Partial<RetryOptions>;
  /** JSONL file for events that cannot be delivered (default: the watch's --dead-letter). */
  deadLetterFile?: string;
}

/** What an entry's spec takes from the keys all entries share (the config layer reads them). */
export type CommonEntrySpec = Pick<
  HttpSinkSpec,
  'name' | 'filter' | 'stories' | 'timeoutMs' | 'deadLetterFile'
>;

/**
 * Reads a file a sink names (a CA, a client key, a password) at startup, given its key within the sink;
 * throws the problem, at that key, when it cannot.
 */
export type SinkFileReader = (key: KeyPath, file: string) => string;

/** The problem with a sink entry's setting, at its key within the sink (thrown by the caller). */
export type SinkProblem = (key: KeyPath, message: string) => Error;

/**
 * What -o/--output, the file's `output:` and the terminal say of the standard output's sink (the type
 * whose component has fromOutput).
 */
export interface OutputChoice {
  /** -o/--output (json, pretty or none), or the output the watch resolved from it and `output:`. */
  flag: string | undefined;
  /** The config file's `output:`. */
  file: string | undefined;
  /** The standard output is a terminal. */
  isTTY: boolean;
  /** Where NO_COLOR is read. */
  env: Env;
}

/** Where an entry's secrets come from besides its keys: the environment, and the files it names. */
export interface EntryContext {
  env: Env;
  readFile: SinkFileReader;
  /** A problem found in what those files hold, at the entry's key. */
  problem: SinkProblem;
}

/** What createSinks is given for every sink. */
export interface SinkRuntime {
  log: Logger;
  /** The process's standard output, where the standard output's sink writes. */
  stdout: Writable;
  /** The standard output failed or its reader left. */
  onStdoutClosed?: (error: NodeJS.ErrnoException) => void;
  /** The default dead-letter file of HTTP sinks. */
  deadLetterFile?: string | undefined;
  /** The cap of every dead-letter file. */
  deadLetterLimits?: DeadLetterLimits | undefined;
  userAgent?: string;
  /** Where a sink or a sink filter that throws is reported (src/util/event-failures.ts). */
  failures?: EventFailures;
  /** Told of each HTTP sink's requests and retries (the metrics, with --listen). */
  deliveries?: DeliveryObserver | undefined;
}

/** What a sink's factory gets besides its spec. */
export interface SinkContext {
  runtime: SinkRuntime;
  /** The name for logs and metrics, numbered from the second sink that has it ("webhook … #2"). */
  unique: (name: string) => string;
  /** Its dead-letter file (its own, or the watch's --dead-letter); undefined if its type does not deliver. */
  deadLetter: DeadLetterFile | undefined;
  /** Its own credentials (credentials() below), which its receivers' answers are scrubbed of. */
  credentials: Credentials;
}

/** One entry of the file's `sinks:` list, for one type: a JSON Schema object literal `as const`. */
export interface EntrySchema {
  readonly type: 'object';
  readonly properties: { readonly type: { readonly const: string } };
  readonly required: readonly string[];
  readonly additionalProperties: false;
}

/**
 * One sink type (or a family sharing one implementation: opensearch and elasticsearch). `Entry` is its
 * config entry (derived from its schema with json-schema-to-ts), `Spec` what its factory takes.
 */
export interface SinkComponent<Entry extends { type: string }, Spec extends { type: string }> {
  /** Its `type:` values, in the order the file's schema lists them. */
  readonly types: readonly Spec['type'][];
  /** The schema of its entry, per type. */
  readonly schemas: { readonly [T in Spec['type']]: EntrySchema };
  /** The formats its entry's schema names that no other type's does (util/value-format.ts). */
  readonly formats?: readonly ValueFormat[];
  /** What its entry's schema cannot say: the rules that span keys, in the order reported (none: absent). */
  readonly checks?: Checks;
  /** Its rows of the `Sinks` help group, in order (none: it has no flags). */
  readonly flags?: readonly FlagSpec[];
  /**
   * Its sinks from the flags (commander's values, by camel-cased name) and the environment, checked: a
   * UsageError (exit 2) naming the flag or variable. Called for every run, with or without its flags.
   */
  fromFlags?(flags: object, env: Env): Spec[];
  /**
   * A checked entry as its spec: defaults, secrets from the files it names (`common` read already).
   * Absent for the type that has fromOutput, which makes its entry's spec.
   */
  spec?(entry: Entry, common: CommonEntrySpec, context: EntryContext): Spec;
  /**
   * Its sink is the standard output's, which -o/--output and the file's `output:` choose (one type at
   * most has this): its spec from them and the terminal, and from its entry when the file lists one (which
   * then replaces the sink they would add, and goes first); undefined when they choose none.
   */
  fromOutput?(output: OutputChoice, listed?: { entry: Entry; common: CommonEntrySpec }): Spec | undefined;
  /** Its name when the config gives none, for logs, metrics and reports (URL paths elided). */
  name(spec: Spec): string;
  /** What it sends or holds that the logs, dead letters and reports must never show. */
  credentials(spec: Spec): Credential[];
  /** The files it writes (none: it writes no file); no other sink or dead-letter file may write one of them. */
  files?(spec: Spec): string[];
  /** Why stories cannot apply to a sink of this spec (a UsageError when asked for); undefined: they can. */
  storiesRefused?(spec: Spec): string | undefined;
  /**
   * Its sinks tell stories when neither their entry (`stories:`) nor a flag (`--no-stories <type>`,
   * `--<type>-stories`) says otherwise: `true`, always (the chat platforms, which `--no-stories` lists); a
   * function, as the spec and --stories (`terminalStories`: the terminal tells stories) say; absent: only
   * when asked.
   */
  readonly storiesByDefault?: boolean | ((spec: Spec, terminalStories: boolean) => boolean);
  /**
   * Its queue is the chat core's, bounded by its spec's `queueMaxBytes` (util/memory-budget.ts, the chat
   * share); absent: a backlog bounded by its spec's `queue.maxBytes`.
   */
  readonly chatQueue?: boolean;
  /**
   * `false`: its sinks write to a stream that paces the watch (Sink.flowControl) instead of delivering:
   * no queue, no retries, no dead letter, no part of the sinks' memory share (a part for its stories
   * only). Absent: they deliver.
   */
  readonly delivers?: false;
  /** Why a config file may list at most one entry of it (the message says so); absent: any number. */
  readonly single?: string;
  /** Creates the sink, importing its implementation now. */
  create(spec: Spec, context: SinkContext): Promise<Sink>;
  /** Where docs/ describes it. */
  readonly docs: string;
}

/** A component with its types erased, as the registry hands it to the code that serves every type. */
// biome-ignore lint/suspicious/noExplicitAny: the registry erases each component's own entry and spec types.
export type AnySinkComponent = SinkComponent<any, any>;

/** The config entry of a component. */
export type EntryOf<C> = C extends SinkComponent<infer E, infer _S> ? E : never;
/** The spec of a component. */
export type SpecOf<C> = C extends SinkComponent<infer _E, infer S> ? S : never;
