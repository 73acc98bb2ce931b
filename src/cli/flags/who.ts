// Who made each change: field managers from managedFields, users from the API server's audit webhook
// (docs/audit.md) or from an admission webhook that never rejects (docs/who.md). Read by
// src/config/settings.ts, src/config/audit-settings.ts (RawAuditFlags) and admission-settings.ts.
import { WHO_JOIN_DEFAULTS } from '../../events/who-join.ts';
import type { FlagGroup } from '../../util/flag-spec.ts';

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
      description: 'skip changes by this user (with a who webhook)',
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
      flags: '--audit-client-name <glob>',
      description: "…whose certificate's CN matches this: kube-apiserver-audit",
      repeatable: true,
      more: true,
    },
    {
      flags: '--audit-wait <duration>',
      description: `how long a change waits for its audit record (default: ${WHO_JOIN_DEFAULTS.waitMs}ms)`,
      more: true,
    },
    {
      flags: '--admission-listen <addr>',
      description: 'serve a never-rejecting admission webhook: :9443',
    },
    {
      flags: '--admission-cert <file>',
      description: "the admission webhook's serving certificate (PEM; reloaded)",
      more: true,
    },
    {
      flags: '--admission-key <file>',
      description: "the admission webhook's private key (PEM; reloaded)",
      more: true,
    },
    {
      flags: '--admission-cert-secret <name>',
      description: 'instead: make, renew and serve a certificate kept in this Secret',
      more: true,
    },
    {
      flags: '--admission-service <name>',
      description: "…for this Service's names (kubediff's namespace)",
      more: true,
    },
    {
      flags: '--admission-webhook-config <name>',
      description: "…and set this ValidatingWebhookConfiguration's caBundle",
      more: true,
    },
    {
      flags: '--admission-client-ca <file>',
      description: 'accept reviews only with a client certificate this CA signed',
      more: true,
    },
    {
      flags: '--admission-allow-unauthenticated',
      description: 'accept reviews from any caller (API servers that cannot authenticate)',
      more: true,
    },
    {
      flags: '--peers <host:port>',
      description: "the other replicas' webhook address: each gets the records this one receives",
      more: true,
    },
  ],
};
