// Who made each change: field managers from managedFields, users from the API server's audit webhook
// (docs/audit.md). Read by src/config/settings.ts and src/config/audit-settings.ts (RawAuditFlags).
import { AUDIT_JOIN_DEFAULTS } from '../../events/audit-join.ts';
import type { FlagGroup } from './flag-spec.ts';

export const WHO: FlagGroup = {
  title: 'Who changed it',
  flags: [
    {
      flags: '--ignore-manager <name>',
      description: 'skip changes by this field manager: argocd-*',
      repeatable: true,
    },
    {
      flags: '--ignore-user <glob>',
      description: 'skip changes by this user (needs --audit-listen)',
      repeatable: true,
    },
    { flags: '--audit-listen <addr>', description: 'receive the audit webhook here (HTTPS): :8443' },
    {
      flags: '--audit-cert <file>',
      description: "the audit webhook's serving certificate (PEM; reloaded when it changes)",
      more: true,
    },
    {
      flags: '--audit-key <file>',
      description: "the audit webhook's private key (PEM; reloaded when it changes)",
      more: true,
    },
    {
      flags: '--audit-client-ca <file>',
      description: 'accept audit requests only with a client certificate this CA signed',
      more: true,
    },
    {
      flags: '--audit-wait <duration>',
      description: `how long a change waits for its audit record (default: ${AUDIT_JOIN_DEFAULTS.waitMs}ms)`,
      more: true,
    },
  ],
};
