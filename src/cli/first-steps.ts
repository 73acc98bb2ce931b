// What a bare `kubediff` says on a terminal: what kubediff does and what to run first. Off a terminal (a
// script, a pipe) it prints the usual help on stderr instead, as it always has.
import { CLI_DOCS } from './help.ts';

export const FIRST_STEPS = `kubediff watches a Kubernetes cluster and reports every change, field by field.

To start, against the cluster of your current kubectl context:
  kubediff resources             what it would watch, and why it skips the rest
  kubediff watch                 report every change until Ctrl-C
  kubediff watch -n shop -r deploy
                                 only the Deployments of namespace shop

\`kubediff --help\` lists the commands, \`kubediff watch --help\` the main flags; ${CLI_DOCS} has them all.
`;
