// Noise presets: what a watch ignores before any rule of the user's own. Chosen with `preset:` in the
// config file or `--preset`; documented, path by path, in docs/config.md.
import { DEFAULT_IGNORED_PATHS } from '../diff/ignore.ts';
import { pointerProblem } from '../diff/pointer.ts';

export type PresetName = 'default' | 'quiet' | 'everything';

export const PRESET_NAMES: readonly PresetName[] = ['default', 'quiet', 'everything'];

export interface Preset {
  /** Paths ignored on every object (their changes are neither stored nor reported). */
  ignore: readonly string[];
  /** Whether /status is reported unless `status:` / `--status` says otherwise. */
  status: boolean;
  /** Resource types not watched unless named in `resources:` / `-r`. */
  excludeResources: readonly string[];
}

const STATUS_PATH = '/status';

export const PRESETS: Readonly<Record<PresetName, Preset>> = {
  /** PRODUCT.md's defaults: bookkeeping fields and /status. */
  default: {
    ignore: DEFAULT_IGNORED_PATHS,
    status: false,
    excludeResources: [],
  },
  /**
   * What people change, not what controllers derive from it: the default ignores, plus annotations that
   * only repeat another change, and the types a controller creates for every rollout or scale.
   */
  quiet: {
    ignore: [
      ...DEFAULT_IGNORED_PATHS,
      // A copy of the whole object as a string: every `kubectl apply` changes it alongside the real fields.
      '/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration',
      // Incremented by the deployment controller on every rollout: the template change is the news.
      '/metadata/annotations/deployment.kubernetes.io~1revision',
      '/metadata/annotations/deprecated.daemonset.template.generation',
      // Leader-election records that some components still keep in annotations.
      '/metadata/annotations/control-plane.alpha.kubernetes.io~1leader',
    ],
    status: false,
    excludeResources: ['pods', 'replicasets.apps', 'controllerrevisions.apps'],
  },
  /** Nothing ignored: every field, /status and the bookkeeping fields included. */
  everything: {
    ignore: [],
    status: true,
    excludeResources: [],
  },
};

/** The ignore list of a watch: the preset's, minus or plus /status, plus the user's own. */
export function presetIgnoredPaths(
  name: PresetName,
  status: boolean | undefined,
  extra: readonly string[],
): string[] {
  const preset = PRESETS[name];
  const wantStatus = status ?? preset.status;
  let paths = [...preset.ignore];
  if (wantStatus) paths = paths.filter((path) => path !== STATUS_PATH);
  else if (!paths.includes(STATUS_PATH)) paths.push(STATUS_PATH);
  return [...new Set([...paths, ...extra])];
}

export function isPresetName(text: string): text is PresetName {
  return (PRESET_NAMES as readonly string[]).includes(text);
}

/**
 * Why a user's ignore path (--ignore, `ignore:`, `only:`, `redact:`) is not a JSON Pointer below the whole
 * object, a phrase (`"spec" is <phrase>`); undefined when it is one.
 */
export function ignorePathProblem(path: string): string | undefined {
  return path === '' ? 'the whole object; name a field such as /spec/replicas' : pointerProblem(path);
}
