// npm run upgrade:fetch — puts the releases of the operator whose upgrade the event contract's test
// replays (test/helpers/operator-releases.ts) into the Go module cache, from the Go module proxy; a
// no-op when they are there. .ci/run runs it, so that the test finds them whatever the network does.
import { OPERATOR_MODULE, OPERATOR_RELEASES, releaseDir } from '../test/helpers/operator-releases.ts';

if (import.meta.main) {
  try {
    for (const version of OPERATOR_RELEASES) {
      console.log(`upgrade:fetch: ${OPERATOR_MODULE}@${version} in ${releaseDir(version)}`);
    }
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    process.exitCode = 1;
  }
}
