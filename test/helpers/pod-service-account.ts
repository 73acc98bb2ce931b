// A pod's ServiceAccount files for a kubediff that runs outside a pod: kubediff reads them where a kubelet
// mounts them (/var/run/secrets/kubernetes.io/serviceaccount); this module makes that folder's reads in
// this process (existsSync, readFileSync, statSync) read a test's folder instead. The product has no hook
// of its own for it. A kubediff child loads it with --import (`podServiceAccountEnv`, which podFiles()
// uses); a unit test calls `mountServiceAccount` and the undo it returns.
import fs from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { fileURLToPath } from 'node:url';

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const VARIABLE = 'KUBEDIFF_TEST_SERVICE_ACCOUNT_DIR';

/** The environment that makes a kubediff child read its ServiceAccount files from `folder`. */
export function podServiceAccountEnv(folder: string): Record<string, string> {
  return {
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${fileURLToPath(import.meta.url)}`.trim(),
    [VARIABLE]: folder,
  };
}

/** From now on, this process reads the ServiceAccount files from `folder`; returns the undo. */
export function mountServiceAccount(folder: string): () => void {
  const moved = (file: fs.PathLike | number): typeof file =>
    typeof file === 'string' && (file === SERVICE_ACCOUNT_DIR || file.startsWith(`${SERVICE_ACCOUNT_DIR}/`))
      ? `${folder}${file.slice(SERVICE_ACCOUNT_DIR.length)}`
      : file;
  const { existsSync, readFileSync, statSync } = fs;
  Object.assign(fs, {
    existsSync: (file: fs.PathLike) => existsSync(moved(file) as fs.PathLike),
    readFileSync: (file: fs.PathOrFileDescriptor, ...rest: [never]) =>
      readFileSync(moved(file as fs.PathLike), ...rest),
    statSync: (file: fs.PathLike, ...rest: [never]) => statSync(moved(file) as fs.PathLike, ...rest),
  });
  syncBuiltinESMExports();
  return () => {
    Object.assign(fs, { existsSync, readFileSync, statSync });
    syncBuiltinESMExports();
  };
}

const folder = process.env[VARIABLE];
if (folder) mountServiceAccount(folder);
