// The credentials in one sink's settings, for util/credentials.ts to keep out of what kubediff writes:
// the one place each sink type says which of its settings are credentials. setup.ts gives each sink
// its own (for its HTTP answers) and the dead-letter files all of them; the watch's logger gets all of
// them with the state store's.
import { type Credential, Credentials } from '../../util/credentials.ts';
import { type RegisteredType, sinkComponent } from '../registry.ts';

/** What a sink's credentials are read from (the sink spec's fields, structurally: setup.ts's SinkSpec). */
export type SinkCredentialSource =
  | { type: 'stdout' }
  | { type: 'slack'; webhookUrl?: string | undefined; token?: string | undefined }
  | { type: 'teams' | 'discord' | 'mattermost' | 'google-chat'; webhookUrl: string }
  | { type: RegisteredType };

/** Every credential a sink of this spec sends or holds, in the kinds util/credentials.ts knows. */
export function sinkCredentials(spec: SinkCredentialSource): Credentials {
  return Credentials.of(credentialsOf(spec));
}

/** The credentials of every sink, together. */
export function allSinkCredentials(specs: readonly SinkCredentialSource[]): Credentials {
  return Credentials.none.union(...specs.map(sinkCredentials));
}

function credentialsOf(spec: SinkCredentialSource): Credential[] {
  const component = sinkComponent(spec.type);
  if (component) return component.credentials(spec);
  switch (spec.type) {
    case 'stdout':
      return [];
    case 'slack':
      return [
        ...(spec.webhookUrl !== undefined ? [{ kind: 'url', value: spec.webhookUrl } as const] : []),
        // Sent as `Authorization: Bearer <token>`.
        ...secrets(spec.token),
      ];
    case 'teams':
    case 'discord':
    case 'mattermost':
    case 'google-chat':
      return [{ kind: 'url', value: spec.webhookUrl }];
  }
  // A registered type answered above.
  return [];
}

function secrets(...values: (string | undefined)[]): Credential[] {
  return values.flatMap((value) => (value ? [{ kind: 'secret', value } as const] : []));
}
