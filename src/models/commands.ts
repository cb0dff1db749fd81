/**
 * `offcloud models pull [<model or file>…]` and `offcloud models list`: the
 * model files of every component (src/models/catalogue.ts). The downloader
 * loads only when pull runs, so listing the commands loads nothing.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { CommandGroup } from '../common/component.ts';
import { commandDataDir, parseCommandArgs, toStdout, type Print } from '../common/command-line.ts';
import { UsageError } from '../common/errors.ts';
import { modelSearchPath, replacementFlags } from '../common/models.ts';
import { MODEL_FILES, type ModelFile } from './catalogue.ts';
import type { PullProgress } from './pull.ts';

const PULL_USAGE = 'offcloud models pull [<model or file>…] [--models-dir DIR | --data-dir DIR] [--mirror URL] [--force]';
const LIST_USAGE = 'offcloud models list [--data-dir DIR]';
const TRAIN_USAGE = 'offcloud models train face-hair (--celeba <dir> --accept-celeba-terms | --images <dir> --terms <text>) [options]: see docs/face.md';

const OPTIONS = { 'models-dir': { type: 'string' }, 'data-dir': { type: 'string' }, mirror: { type: 'string' }, force: { type: 'boolean', default: false } } as const;

/** The files a pull names: a model (the folder, e.g. face-ultralight-rfb) or one file's relative path; none means all. */
export function selectModelFiles(names: string[]): ModelFile[] {
  if (!names.length) return [...MODEL_FILES];
  return names.flatMap((name) => {
    const trimmed = name.replace(/\/+$/, '');
    const files = MODEL_FILES.filter((f) => f.relativePath === trimmed || f.relativePath.split('/')[0] === trimmed);
    if (!files.length) throw new UsageError(`no model or model file is called ${JSON.stringify(name)}; \`offcloud models list\` shows them`);
    return files;
  });
}

/** A bar on a terminal (redrawn in place), nothing between the lines elsewhere (logs, pipes, CI). */
function terminalProgress(print: Print, stream: NodeJS.WriteStream = process.stdout): PullProgress {
  if (print !== toStdout || !stream.isTTY) return { line: print };
  let drawn = false;
  return {
    line(text) {
      if (drawn) stream.write('\r\x1b[K');
      drawn = false;
      print(text);
    },
    bytes(file, received) {
      const width = 30;
      const share = Math.min(1, received / file.size);
      const filled = Math.round(share * width);
      stream.write(`\r  [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${(share * 100).toFixed(0).padStart(3)} %  ${(received / 1e6).toFixed(1)}/${(file.size / 1e6).toFixed(1)} MB`);
      drawn = true;
    },
  };
}

/** `offcloud models pull`. */
export async function pullModels(args: string[], print: Print = toStdout): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, OPTIONS, PULL_USAGE);
  const files = selectModelFiles(positionals);
  // The first folder of the lookup that a user controls: $OFFCLOUD_MODELS_DIR, else <data-dir>/models.
  const targetDir = resolve(values['models-dir'] ?? process.env.OFFCLOUD_MODELS_DIR ?? resolve(commandDataDir(values['data-dir']), 'models'));
  const { pullModelFiles } = await import('./pull.ts');
  await pullModelFiles(files, { targetDir, mirror: values.mirror ?? process.env.OFFCLOUD_MODELS_MIRROR, force: values.force, progress: terminalProgress(print) });
  return 0;
}

/** `offcloud models list`: every file, where the lookup finds it, and the flag that replaces it. */
export function listModels(args: string[], print: Print = toStdout): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, { 'data-dir': OPTIONS['data-dir'] }, LIST_USAGE);
  if (positionals.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}\nusage: ${LIST_USAGE}`);
  const folders = modelSearchPath(commandDataDir(values['data-dir']));
  for (const file of MODEL_FILES) {
    const found = folders.map((dir) => resolve(dir, file.relativePath)).find((path) => existsSync(path));
    print(`${file.relativePath}  ${(file.size / 1e6).toFixed(1)} MB  ${file.what}`);
    print(`    ${found ? `found: ${found}` : 'missing: `offcloud models pull ' + file.relativePath + '`'}; replace with ${replacementFlags(file.option)}`);
  }
  return Promise.resolve(0);
}

export const modelsCommands: CommandGroup = {
  name: 'models',
  summary: 'list and download the model files of every component (checked by sha256)',
  subcommands: {
    pull: {
      summary: 'download model files (all, or the models named) from their pinned upstream URLs or a --mirror into <data-dir>/models',
      usage: PULL_USAGE,
      run: (args) => pullModels(args),
    },
    list: {
      summary: 'show every model file, where it is found, and the option that replaces it',
      usage: LIST_USAGE,
      run: (args) => listModels(args),
    },
    train: {
      summary: "train face-hair: the face container's facialHair and hair heads, on labelled images you have (CelebA or your own), into <data-dir>/models",
      usage: TRAIN_USAGE,
      // The trainer loads the face models' runtimes: only when it runs.
      run: async (args) => (await import('../face/hair/command.ts')).trainModel(args),
    },
  },
};
