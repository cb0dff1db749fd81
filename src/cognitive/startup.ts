/**
 * The start-up parameters every cognitive container takes (spec §4.12):
 * Eula=accept, Billing=<endpoint URL>, ApiKey=<key>. The CLI already maps
 * `Eula=accept` arguments and `--eula` flags onto the option keys below;
 * the containers' own environment variables (`Eula`, `Billing`, `ApiKey`)
 * are read here, because they carry no OFFCLOUD_ prefix.
 */
import { tlsOptions, type OptionSchema } from '../common/config.ts';
import type { PublishedFacts } from '../common/facts.ts';
import { StartupError } from '../common/errors.ts';
import type { ContainerKind } from './protocol.ts';

/** Spread into a container's option schema. */
export const containerOptions = {
  eula: { type: 'string', default: '', description: 'must be "accept" (also Eula=accept, or the environment variable Eula)' },
  billing: {
    type: 'string',
    default: '',
    description: 'billing endpoint URL of the matching resource (also Billing=<url>, or the environment variable Billing)',
  },
  apiKey: { type: 'string', default: '', description: 'key of that resource (also ApiKey=<key>, or the environment variable ApiKey)' },
  meteringIntervalMs: {
    type: 'integer',
    default: 600_000,
    min: 50,
    max: 3_600_000,
    description: 'how often usage is reported to the billing endpoint, in milliseconds',
  },
  maxBillingFailures: {
    type: 'integer',
    default: 10,
    min: 1,
    max: 1000,
    description: 'consecutive failed reports after which the container stops serving until restarted',
  },
  // The vendor's containers are plain HTTP; the current SDKs send a key over HTTPS only unless told otherwise.
  tls: {
    type: 'boolean',
    default: false,
    description: 'serve HTTPS instead of HTTP: a leaf of the local CA in the data dir (clients trust <data-dir>/ca/ca.crt), or --tls-cert/--tls-key',
  },
  ...tlsOptions,
} as const satisfies OptionSchema;

export interface ContainerStartOptions {
  eula: string;
  billing: string;
  apiKey: string;
}

/** Validated start-up parameters. */
export interface ContainerStart {
  billingUrl: string;
  apiKey: string;
}

/** The container's own variable names, as `docker run -e` users write them. */
function fromEnvironment(env: NodeJS.ProcessEnv, name: string): string {
  return env[name] ?? env[name.toUpperCase()] ?? '';
}

const FLAGS = { Eula: '--eula', Billing: '--billing', ApiKey: '--api-key' } as const;

/**
 * Checks Eula, Billing and ApiKey before anything listens, and throws a
 * StartupError naming the first missing or wrong one (the CLI prints it and
 * exits 1).
 */
export function validateContainerStart(component: string, options: ContainerStartOptions, env: NodeJS.ProcessEnv = process.env): ContainerStart {
  const eula = options.eula || fromEnvironment(env, 'Eula');
  const billing = options.billing || fromEnvironment(env, 'Billing');
  const apiKey = options.apiKey || fromEnvironment(env, 'ApiKey');
  const how = (name: keyof typeof FLAGS, example: string) => `give ${name}=${example} (or ${FLAGS[name]}, or the environment variable ${name})`;
  if (!eula) throw new StartupError(`${component}: missing start-up parameter Eula; ${how('Eula', 'accept')}`);
  if (eula.toLowerCase() !== 'accept') {
    throw new StartupError(`${component}: start-up parameter Eula must be "accept", got ${JSON.stringify(eula.slice(0, 40))}`);
  }
  if (!billing) throw new StartupError(`${component}: missing start-up parameter Billing; ${how('Billing', '<billing endpoint URL>')}`);
  let url: URL;
  try {
    url = new URL(billing);
  } catch {
    throw new StartupError(`${component}: Invalid Billing Endpoint URI. ${JSON.stringify(billing.slice(0, 200))} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new StartupError(`${component}: Invalid Billing Endpoint URI. ${JSON.stringify(billing.slice(0, 200))} must be http or https`);
  }
  if (!apiKey.trim()) throw new StartupError(`${component}: missing start-up parameter ApiKey; ${how('ApiKey', '<key>')}`);
  return { billingUrl: url.href.replace(/\/+$/, ''), apiKey: apiKey.trim() };
}

/**
 * Under `offcloud up`, the billing component (started earlier) made a demo
 * resource of each kind; the container takes its URL and key, and the EULA is
 * accepted on the user's behalf for that demo.
 */
export function containerWireUp(kind: ContainerKind) {
  return ({ billing }: PublishedFacts): Partial<ContainerStartOptions> => {
    const apiKey = billing?.demoApiKeys?.[kind];
    if (!billing || !apiKey) return {};
    return { eula: 'accept', billing: billing.billingUrl, apiKey };
  };
}
