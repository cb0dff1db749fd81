/**
 * `offcloud hub device <command>`: the registry from the command line, on the
 * same store the hub uses (the data dir's files, or Redis with --redis-url),
 * so a running hub sees the change at once.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import type { Subcommand } from '../common/component.ts';
import { resolveConfig } from '../common/config.ts';
import { UsageError } from '../common/errors.ts';
import { DeviceHub } from './domain/hub.ts';
import { connectionString, identityKey, parseIdentityKey } from './domain/registry.ts';
import { DEFAULT_TWIN_LIMITS } from './domain/twin.ts';
import { HubError } from './domain/errors.ts';
import { POLICY_RIGHTS } from './domain/policies.ts';
import { createSasToken } from './domain/sas.ts';
import { hubOptions } from './options.ts';

const USAGE = 'offcloud hub device create|show|list|delete|regenerate [<device>[/<module>]] [--data-dir DIR] [--host-name NAME] [--port N] [--redis-url URL]';
const cliOptions = {
  dataDir: hubOptions.dataDir,
  hostName: hubOptions.hostName,
  port: hubOptions.port,
  redisUrl: hubOptions.redisUrl,
  logLevel: { ...hubOptions.logLevel, default: 'warn' },
};

async function runDeviceCommand(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      allowPositionals: true,
      options: {
        'data-dir': { type: 'string' },
        'host-name': { type: 'string' },
        port: { type: 'string' },
        'redis-url': { type: 'string' },
        key: { type: 'string' },
      },
    });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\nusage: ${USAGE}`);
  }
  const { values, positionals } = parsed;
  const [command, id] = positionals;
  const flags = Object.fromEntries(
    Object.entries({ dataDir: values['data-dir'], hostName: values['host-name'], port: values.port, redisUrl: values['redis-url'] }).filter(
      ([, v]) => v !== undefined,
    ),
  ) as Record<string, string>;
  const options = resolveConfig('hub', cliOptions, { flags, env: process.env });
  const needsId = command !== 'list';
  const identity = id === undefined ? undefined : parseIdentityKey(id);
  if (!command || !['create', 'show', 'list', 'delete', 'regenerate'].includes(command) || (needsId && !identity)) {
    throw new UsageError(`usage: ${USAGE}`);
  }
  // The store, bus and logger load only once the command is known to be valid.
  const [{ openState }, { createLogger }] = await Promise.all([import('./persistence/open.ts'), import('../common/log.ts')]);
  const { store, bus } = await openState(options);
  const logger = createLogger(options.logLevel, 'hub');
  const hub = new DeviceHub(
    store,
    bus,
    { hostName: options.hostName, limits: DEFAULT_TWIN_LIMITS, c2dTtlSeconds: 3600, c2dMaxDeliveryCount: 10, telemetryLogSize: 1, replicaId: randomUUID() },
    logger,
  );
  try {
    const key = identity ? identityKey(identity) : '';
    switch (command) {
      case 'create': {
        const record = await hub.putIdentity(identity!, {}, undefined);
        process.stdout.write(`${connectionString(options.hostName, options.port, record)}\n`);
        return 0;
      }
      case 'show':
        process.stdout.write(
          `${JSON.stringify({ ...(await hub.describe(await hub.identity(key))), connectionString: connectionString(options.hostName, options.port, await hub.identity(key)) }, null, 2)}\n`,
        );
        return 0;
      case 'list':
        for (const record of await hub.listDevices(Number.MAX_SAFE_INTEGER)) process.stdout.write(`${record.deviceId}\t${record.status}\n`);
        return 0;
      case 'delete':
        await hub.deleteIdentity(key, undefined);
        return 0;
      default: {
        const record = await hub.regenerateIdentityKey(key, values.key ?? 'primary');
        process.stdout.write(`${connectionString(options.hostName, options.port, record)}\n`);
        return 0;
      }
    }
  } catch (err) {
    if (!(err instanceof HubError)) throw err;
    process.stderr.write(`offcloud hub device ${command}: ${err.message}\n`);
    return 1;
  } finally {
    await hub.close();
  }
}

export const deviceCommand: Subcommand = {
  summary: 'manage devices: create (prints its connection string), show, list, delete, regenerate',
  usage: USAGE,
  run: runDeviceCommand,
};

const SAS_USAGE =
  'offcloud hub sas [--policy iothubowner|service|registryRead|registryReadWrite] [--ttl SECONDS] [--data-dir DIR] [--host-name NAME] [--redis-url URL]';

/** `offcloud hub sas`: a service SAS token for `Authorization:` headers (curl against the REST API). */
async function runSasCommand(args: string[]): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        policy: { type: 'string', default: 'iothubowner' },
        ttl: { type: 'string', default: '3600' },
        'data-dir': { type: 'string' },
        'host-name': { type: 'string' },
        'redis-url': { type: 'string' },
      },
    }));
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\nusage: ${SAS_USAGE}`);
  }
  const ttl = Number(values.ttl);
  if (!Number.isSafeInteger(ttl) || ttl < 1 || !Object.hasOwn(POLICY_RIGHTS, values.policy) || values.policy === 'device')
    throw new UsageError(`usage: ${SAS_USAGE}`);
  const flags = Object.fromEntries(
    Object.entries({ dataDir: values['data-dir'], hostName: values['host-name'], redisUrl: values['redis-url'] }).filter(([, v]) => v !== undefined),
  ) as Record<string, string>;
  const options = resolveConfig('hub', cliOptions, { flags, env: process.env });
  const { openState } = await import('./persistence/open.ts');
  const { store, bus } = await openState(options);
  try {
    const key = (await store.policies())[values.policy]!.primaryKey;
    process.stdout.write(`${createSasToken(options.hostName, key, Math.floor(Date.now() / 1000) + ttl, values.policy)}\n`);
    return 0;
  } finally {
    await bus.close();
    await store.close();
  }
}

export const sasCommand: Subcommand = {
  summary: 'print a service SAS token (Authorization header) for a hub policy, iothubowner by default',
  usage: SAS_USAGE,
  run: runSasCommand,
};
