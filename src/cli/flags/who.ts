// Who made each change: field managers from managedFields, users from the API server's audit webhook
// (docs/audit.md) or from an admission webhook that never rejects (docs/who.md). The webhooks' and the
// peers' rows are theirs (src/who/config.ts); src/config/settings.ts reads them.
import type { FlagGroup } from '../../util/flag-spec.ts';
import { WHO_FLAGS } from '../../who/config.ts';

export const WHO: FlagGroup = {
  title: 'Who changed it',
  flags: [
    {
      flags: '--ignore-manager <name>',
      description: 'skip changes by this field manager: argocd-*',
      repeatable: true,
    },
    ...WHO_FLAGS,
  ],
};
