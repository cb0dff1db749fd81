/**
 * Where model weights come from, the same for every component (DESIGN "Models"):
 * an explicit flag, then $OFFCLOUD_MODELS_DIR, then <data-dir>/models, then the
 * package's own models/ folder, where the default weights ship. Otherwise a
 * clear message that points at `offcloud models pull`.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StartupError } from './errors.ts';

/** The package's root folder (where package.json is). */
export const PACKAGE_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The option that gives another file instead: `--<component>-<flag>` under `offcloud up`, `--<flag>` under `offcloud <component>`. */
export interface ModelOption {
  component: string;
  flag: string;
}

/** The flags that replace a model file, as a user types them. */
export function replacementFlags({ component, flag }: ModelOption): string {
  return component === 'score' ? `offcloud score --${flag} <file>` : `--${component}-${flag} <file> (offcloud up) or --${flag} <file> (offcloud ${component})`;
}

export interface ModelLookup {
  /** The model's path relative to a models folder, e.g. `imagenet-mobilenetv2-int8/mobilenetv2-12-int8.onnx`. */
  relativePath: string;
  /** The option that replaces the file; named in the messages (default: scoring's --model). */
  option?: ModelOption;
  /** That option's value; used as is when set. */
  explicit?: string;
  dataDir: string;
  env?: NodeJS.ProcessEnv;
}

/** The folders searched, in order, for a model's relative path. */
export function modelSearchPath(dataDir: string, env: NodeJS.ProcessEnv = process.env): string[] {
  return [...(env.OFFCLOUD_MODELS_DIR ? [resolve(env.OFFCLOUD_MODELS_DIR)] : []), resolve(dataDir, 'models'), resolve(PACKAGE_ROOT, 'models')];
}

export function resolveModelFile(lookup: ModelLookup): string {
  const option = lookup.option ?? { component: 'scoring', flag: 'model' };
  if (lookup.explicit) {
    const path = resolve(lookup.explicit);
    if (!existsSync(path)) throw new StartupError(`model file ${path} (--${option.flag}) does not exist`);
    return path;
  }
  const searched = modelSearchPath(lookup.dataDir, lookup.env).map((dir) => resolve(dir, lookup.relativePath));
  const found = searched.find((path) => existsSync(path));
  if (found) return found;
  throw new StartupError(
    `model ${lookup.relativePath} not found (looked in ${searched.join(', ')}); ` +
      `run \`offcloud models pull ${lookup.relativePath.split('/')[0]}\` to download it, or give ${replacementFlags(option)}`,
  );
}
