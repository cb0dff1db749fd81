/**
 * Command-line commands of the scoring component: `offcloud score` (the
 * image client; also `offcloud scoring score`), `offcloud scoring keys
 * show|regenerate`. The image client (sharp, undici) loads only when its
 * command runs, so listing the commands loads neither.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { CommandGroup, Subcommand } from '../common/component.ts';
import { commandDataDir, parseCommandArgs, toStdout, type Print } from '../common/command-line.ts';
import { UsageError } from '../common/errors.ts';
import { resolveModelFile } from '../common/models.ts';
import { DEFAULT_SERVICE } from './options.ts';
import { KeyStore, keysFilePath, UnknownServiceError } from './api-keys.ts';
import { IMAGENET_LABELS } from '../models/catalogue.ts';

const SCORE_USAGE =
  'offcloud score <image file or URL> [--url http://127.0.0.1:5001] [--frontend <url> --service <name> --key <key>] [--ca <file>] [--labels <file>] [--top 5] [--floats] [--json]';

/** `offcloud score <image>`: the image client. */
export async function scoreImage(args: string[], print: Print = toStdout): Promise<number> {
  const { values, positionals } = parseCommandArgs(
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
  const [{ imageToPixels, loadLabels, readImage, scoreRequestBody, sendScoreRequest, topClasses }, { Agent }] = await Promise.all([
    import('./client.ts'),
    import('undici'),
  ]);
  const labels = await loadLabels(resolveModelFile({ ...IMAGENET_LABELS, explicit: values.labels, dataDir: commandDataDir(values['data-dir']) }));
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

const REQUEST_USAGE = 'offcloud scoring request <image file or URL> [--floats] > request.json';

/** `offcloud scoring request <image>`: the JSON body `offcloud score` would send, for curl and other clients. */
export async function writeScoreRequest(args: string[], print: Print = toStdout): Promise<number> {
  const { values, positionals } = parseCommandArgs(args, { floats: { type: 'boolean', default: false } }, REQUEST_USAGE);
  if (positionals.length !== 1) throw new UsageError(`give one image file or URL\nusage: ${REQUEST_USAGE}`);
  const { imageToPixels, readImage, scoreRequestBody } = await import('./client.ts');
  print(scoreRequestBody(await imageToPixels(await readImage(positionals[0]!)), values.floats ? 'floats' : 'integers'));
  return 0;
}

export const requestCommand: Subcommand = {
  summary: 'print the JSON request body for an image (scaled to 224×224), e.g. for curl --data-binary @request.json',
  usage: REQUEST_USAGE,
  run: (args) => writeScoreRequest(args),
};

const KEYS_USAGE = 'offcloud scoring keys show <service> | offcloud scoring keys regenerate <service> --primary|--secondary   [--data-dir DIR]';

/** `offcloud scoring keys show|regenerate <service>`. */
export async function manageKeys(args: string[], print: Print = toStdout): Promise<number> {
  const { values, positionals } = parseCommandArgs(
    args,
    {
      'data-dir': { type: 'string' },
      primary: { type: 'boolean', default: false },
      secondary: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
    KEYS_USAGE,
  );
  const [action, service, ...rest] = positionals;
  if (!service || rest.length || (action !== 'show' && action !== 'regenerate')) throw new UsageError(`usage: ${KEYS_USAGE}`);
  const store = new KeyStore(keysFilePath(resolve(commandDataDir(values['data-dir']))));
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
    if (err instanceof UnknownServiceError)
      throw new UsageError(`${err.message} in ${store.path}; the front-end makes them when it first starts with that service`);
    throw err;
  }
  return 0;
}

export const keysCommand: Subcommand = {
  summary: "show or regenerate a front-end service's primary and secondary keys (the running front-end takes new keys at once)",
  usage: KEYS_USAGE,
  run: (args) => manageKeys(args),
};
