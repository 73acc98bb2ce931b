// A sink's name when the config gives none, for logs, metrics, the start-up line and the shutdown report:
// its type's own (its component's name(), URL paths elided: they may hold credentials). The one place
// they are made: setup.ts names each sink by it, and the start-up line (describeSinkSpec) says the same.
import { type RegisteredType, sinkComponent } from '../registry.ts';

/** What a sink's default name is made of (the sink spec's fields, structurally). */
export type SinkNameSource = { type: RegisteredType };

export function defaultSinkName(spec: SinkNameSource): string {
  return sinkComponent(spec.type)?.name(spec) ?? spec.type;
}
