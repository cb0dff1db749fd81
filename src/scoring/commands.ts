/**
 * Command-line commands of the scoring component: `offcloud score` (the
 * image client; also `offcloud scoring score`), `offcloud scoring keys
 * show|regenerate` and `offcloud models pull`. The image client (sharp,
 * undici) and the downloader load only when their command runs, so listing
 * the commands loads neither.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { CommandGroup, Subcommand } from '../common/component.ts';
import { commonOptions } from '../common/config.ts';
import { UsageError } from '../common/errors.ts';
import { resolveModelFile } from '../common/models.ts';
import { DEFAULT_SERVICE } from './options.ts';
import { KeyStore, keysFilePath, UnknownServiceError } from './keys.ts';
import { IMAGENET_LABELS, MODEL_FILES } from './model-files.ts';

type Options = NonNullable<ParseArgsConfig['options']>;

function parse<O extends Options>(args: string[], options: O, usage: string) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\nusage: ${usage}`);
  }
}

/** The data dir a command works on: --data-dir, else $OFFCLOUD_DATA_DIR, else the default. */
function dataDirOf(value: string | boolean | undefined): string {
  return typeof value === 'string' ? value : (process.env.OFFCLOUD_DATA_DIR ?? commonOptions.dataDir.default);
}

/** Where a command's output goes: stdout from the CLI, a list in tests. */
export type Print = (line: string) => void;
const toStdout: Print = (line) => process.stdout.write(line + '\n');

const SCORE_USAGE =
  'offcloud score <image file or URL> [--url http://127.0.0.1:5001] [--frontend <url> --service <name> --key <key>] [--ca <file>] [--labels <file>] [--top 5] [--floats] [--json]';

/** `offcloud score <image>`: the image client. */
export async function scoreImage(args: string[], print: Print = toStdout): Promise<number> {
  const { values, positionals } = parse(
    args,
    {
      url: { type: 'string', default: 'http://127.0.0.1:5001' },
      frontend: { type: 'string' },
      service: { type: 'string', default: DEFAULT_SERVICE },
      key: { type: 'string' },
      ca: { type: 'string' },
      labels: { type: 'string' },
      'data-dir': { type: 'string' },
      top: { type: 'string', default: '5' },
      floats: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    SCORE_USAGE,
  );
  const source = positionals[0];
  if (!source || positionals.length > 1) throw new UsageError(`give one image file or URL\nusage: ${SCORE_USAGE}`);
  const top = Number(values.top);
  if (!Number.isInteger(top) || top < 1 || top > 1000) throw new UsageError('--top must be an integer from 1 to 1000');
  if (values.frontend && !values.key) throw new UsageError('--frontend needs --key <primary or secondary key>');
  const [{ imageToPixels, loadLabels, readImage, scoreRequestBody, sendScoreRequest, topClasses }, { Agent }] = await Promise.all([import('./client.ts'), import('undici')]);
  const labels = await loadLabels(resolveModelFile({ relativePath: IMAGENET_LABELS.relativePath, explicit: values.labels, dataDir: dataDirOf(values['data-dir']) }));
  const dispatcher = values.ca ? new Agent({ connect: { ca: await readFile(values.ca, 'utf8') } }) : undefined;
  try {
    const pixels = await imageToPixels(await readImage(source, dispatcher));
    const base = (values.frontend ?? values.url).replace(/\/+$/, '');
    const url = values.frontend ? `${base}/api/v1/service/${encodeURIComponent(values.service)}/score` : base.endsWith('/score') ? base : `${base}/score`;
    const answer = await sendScoreRequest({ url, key: values.key, dispatcher }, scoreRequestBody(pixels, values.floats ? 'floats' : 'integers'));
    const classes = topClasses(answer.result, labels, top);
    if (values.json) print(JSON.stringify({ top: classes, time: answer.time }));
    else {
      for (const c of classes) print(`${String(c.rank).padStart(2)}. ${c.probability.toFixed(4)}  ${c.code}  ${c.name}  (class ${c.index})`);
      print(`inference time ${answer.time.toFixed(4)} s (measured by the scoring container)`);
    }
  } finally {
    await dispatcher?.close();
  }
  return 0;
}

export const scoreCommand: Subcommand = {
  summary: 'classify an image: scale it to 224×224, send it, print the top classes',
  usage: SCORE_USAGE,
  run: (args) => scoreImage(args),
};

/** `offcloud score <image>`, the name the issue gives the client; `offcloud scoring score` stays as another name. */
export const scoreCommands: CommandGroup = {
  name: 'score',
  summary: 'classify an image file or URL: top-5 classes and the time measured by the scoring container',
  subcommands: {},
  command: scoreCommand,
};

const KEYS_USAGE = 'offcloud scoring keys show <service> | offcloud scoring keys regenerate <service> --primary|--secondary   [--data-dir DIR]';

/** `offcloud scoring keys show|regenerate <service>`. */
export async function manageKeys(args: string[], print: Print = toStdout): Promise<number> {
  const { values, positionals } = parse(
    args,
    { 'data-dir': { type: 'string' }, primary: { type: 'boolean', default: false }, secondary: { type: 'boolean', default: false }, json: { type: 'boolean', default: false } },
    KEYS_USAGE,
  );
  const [action, service, ...rest] = positionals;
  if (!service || rest.length || (action !== 'show' && action !== 'regenerate')) throw new UsageError(`usage: ${KEYS_USAGE}`);
  const store = new KeyStore(keysFilePath(resolve(dataDirOf(values['data-dir']))));
  try {
    let keys;
    if (action === 'show') keys = await store.show(service);
    else {
      if (values.primary === values.secondary) throw new UsageError('regenerate needs exactly one of --primary or --secondary');
      keys = await store.regenerate(service, values.primary ? 'primary' : 'secondary');
    }
    if (values.json) print(JSON.stringify(keys));
    else print(`primary key   ${keys.primaryKey}\nsecondary key ${keys.secondaryKey}`);
  } catch (err) {
    if (err instanceof UnknownServiceError) throw new UsageError(`${err.message} in ${store.path}; the front-end makes them when it first starts with that service`);
    throw err;
  }
  return 0;
}

export const keysCommand: Subcommand = {
  summary: "show or regenerate a front-end service's primary and secondary keys (the running front-end takes new keys at once)",
  usage: KEYS_USAGE,
  run: (args) => manageKeys(args),
};

const PULL_USAGE = 'offcloud models pull [--models-dir DIR | --data-dir DIR] [--mirror URL] [--force]';

export const modelsCommands: CommandGroup = {
  name: 'models',
  summary: 'download the default model files (checked by sha256)',
  subcommands: {
    pull: {
      summary: 'download the ImageNet model and class list from their public upstream URLs into the models folder',
      usage: PULL_USAGE,
      run: (args) => pullModels(args),
    },
  },
};

/** `offcloud models pull`. */
export async function pullModels(args: string[], print: Print = toStdout): Promise<number> {
  const { values, positionals } = parse(
    args,
    { 'models-dir': { type: 'string' }, 'data-dir': { type: 'string' }, mirror: { type: 'string' }, force: { type: 'boolean', default: false } },
    PULL_USAGE,
  );
  if (positionals.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}\nusage: ${PULL_USAGE}`);
  // The first folder of the lookup that a user controls: $OFFCLOUD_MODELS_DIR, else <data-dir>/models.
  const targetDir = resolve(values['models-dir'] ?? process.env.OFFCLOUD_MODELS_DIR ?? resolve(dataDirOf(values['data-dir']), 'models'));
  const { pullModelFiles } = await import('./pull.ts');
  await pullModelFiles(MODEL_FILES, { targetDir, mirror: values.mirror ?? process.env.OFFCLOUD_MODELS_MIRROR, force: values.force, progress: print });
  return 0;
}
