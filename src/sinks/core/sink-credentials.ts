// The credentials in one sink's settings, for util/credentials.ts to keep out of what kubediff writes:
// the one place each sink type says which of its settings are credentials. setup.ts gives each sink
// its own (for its HTTP answers) and the dead-letter files all of them; the watch's logger gets all of
// them with the state store's.
import { type Credential, Credentials } from '../../util/credentials.ts';
import { type RegisteredType, sinkComponent } from '../registry.ts';

/** What a sink's credentials are read from (the sink spec's fields, structurally: setup.ts's SinkSpec). */
export type SinkCredentialSource = { type: RegisteredType };

/** Every credential a sink of this spec sends or holds, in the kinds util/credentials.ts knows. */
export function sinkCredentials(spec: SinkCredentialSource): Credentials {
  return Credentials.of(credentialsOf(spec));
}

/** The credentials of every sink, together. */
export function allSinkCredentials(specs: readonly SinkCredentialSource[]): Credentials {
  return Credentials.none.union(...specs.map(sinkCredentials));
}

function credentialsOf(spec: SinkCredentialSource): Credential[] {
  return sinkComponent(spec.type)?.credentials(spec) ?? [];
}
