/**
 * `offcloud identity <command> …`: directory and key management. Each
 * command works on the data dir's files (a running server follows the
 * changes) and prints the ids it made, and a secret once, as `name: value`
 * lines.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import type { Subcommand } from '../common/component.ts';
import { commonOptions } from '../common/config.ts';
import { UsageError } from '../common/errors.ts';
import { DATA_ROLES, openDirectory, type Directory, type DirectoryStore } from './directory/index.ts';
import { openSigningKeys } from './keys.ts';
import {
  addAppRole,
  addClientCertificate,
  addClientSecret,
  assignDataRole,
  createApi,
  createClient,
  createUserAssignedIdentity,
  describeDirectory,
  grantAppRole,
} from './manage.ts';

type Flags = Record<string, string | boolean | undefined>;

const SHARED = {
  'data-dir': { type: 'string' },
  directory: { type: 'string' },
  tenant: { type: 'string' },
} as const;

function parse(args: string[], options: Record<string, { type: 'string' | 'boolean' }>): { flags: Flags; positionals: string[] } {
  try {
    const { values, positionals } = parseArgs({ args, options: { ...SHARED, ...options }, allowPositionals: true, strict: true });
    return { flags: values as Flags, positionals };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function need(flags: Flags, name: string): string {
  const value = flags[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

function optional(flags: Flags, name: string): string | undefined {
  const value = flags[name];
  return typeof value === 'string' ? value : undefined;
}

function integer(flags: Flags, name: string): number | undefined {
  const value = optional(flags, name);
  if (value === undefined) return undefined;
  if (!/^-?\d+$/.test(value)) throw new UsageError(`--${name} must be an integer`);
  return Number(value);
}

/** Where a command's output goes: stdout for the CLI, a buffer for tests. */
type Write = (text: string) => void;

function lines(fields: Record<string, string>): string {
  return `${Object.entries(fields)
    .map(([k, v]) => `${k}: ${v}`)
    .join('\n')}\n`;
}

function dataDirOf(flags: Flags): string {
  return optional(flags, 'data-dir') ?? process.env.OFFCLOUD_DATA_DIR ?? commonOptions.dataDir.default;
}

/** The directory file, created (showing the demo secret once) if missing. */
async function openStore(flags: Flags, write: Write): Promise<DirectoryStore> {
  const store = openDirectory(dataDirOf(flags), optional(flags, 'directory') ?? process.env.OFFCLOUD_IDENTITY_DIRECTORY);
  const seed = await store.ensure();
  if (seed) {
    write(
      lines({
        'created directory': store.path,
        'demo client': seed.directory.clients[0]!.appId,
        'demo client secret (kept in the data dir for offcloud env)': seed.demoClientSecret,
      }),
    );
  }
  return store;
}

function command(
  write: Write,
  summary: string,
  usage: string,
  options: Record<string, { type: 'string' | 'boolean' }>,
  run: (flags: Flags, positionals: string[]) => Promise<void>,
): Subcommand {
  return {
    summary,
    usage,
    async run(args) {
      const { flags, positionals } = parse(args, { ...options, help: { type: 'boolean' } });
      if (flags.help) {
        write(`usage: ${usage}\n${summary}\n`);
        return 0;
      }
      await run(flags, positionals);
      return 0;
    },
  };
}

function expectAction(positionals: string[], allowed: string[], usage: string): string {
  const [action, ...rest] = positionals;
  if (!action || !allowed.includes(action) || rest.length) throw new UsageError(`usage: ${usage}`);
  return action;
}

const APP_USAGE = 'offcloud identity app create --name NAME [--identifier-uri api://x] [--token-version 1|2] [--assignment-required]';
const ROLE_USAGE = 'offcloud identity role add --app APP_ID|URI --value VALUE [--display-name TEXT] [--description TEXT]';
const CLIENT_USAGE = 'offcloud identity client create --name NAME [--secret-days 180]';
const CERT_USAGE = 'offcloud identity cert add --client APP_ID --cert FILE.pem';
const SECRET_USAGE = 'offcloud identity secret add --client APP_ID [--days 180]';
const GRANT_USAGE = 'offcloud identity grant --client APP_ID|OBJECT_ID --app APP_ID|URI --role VALUE';
const IDENTITY_USAGE = 'offcloud identity identity create --name NAME';
const ASSIGN_USAGE = `offcloud identity assign --principal OBJECT_ID|APP_ID --role "${DATA_ROLES[1]}" --scope /storage/devstoreaccount1`;
const KEYS_USAGE = 'offcloud identity keys rotate|list';

/** The commands, writing their output with `write`. */
export function createIdentityCommands(write: Write): Record<string, Subcommand> {
  const print = (fields: Record<string, string>) => write(lines(fields));
  const changeDirectory = async <T>(flags: Flags, change: (directory: Directory) => T): Promise<T> => (await openStore(flags, write)).update(change);
  return {
    app: command(
      write,
      'register an API (resource) application',
      APP_USAGE,
      { name: { type: 'string' }, 'identifier-uri': { type: 'string' }, 'token-version': { type: 'string' }, 'assignment-required': { type: 'boolean' } },
      async (flags, positionals) => {
        expectAction(positionals, ['create'], APP_USAGE);
        const version = optional(flags, 'token-version');
        if (version !== undefined && version !== '1' && version !== '2') throw new UsageError('--token-version is 1 or 2');
        const api = await changeDirectory(flags, (d) =>
          createApi(d, {
            displayName: need(flags, 'name'),
            ...(optional(flags, 'identifier-uri') ? { identifierUri: optional(flags, 'identifier-uri')! } : {}),
            ...(version ? { accessTokenAcceptedVersion: Number(version) as 1 | 2 } : {}),
            appRoleAssignmentRequired: flags['assignment-required'] === true,
            ...(optional(flags, 'tenant') ? { tenantId: optional(flags, 'tenant')! } : {}),
          }),
        );
        print({
          appId: api.appId,
          identifierUri: api.identifierUris[0]!,
          servicePrincipalId: api.servicePrincipalId,
          tokenVersion: String(api.accessTokenAcceptedVersion ?? 1),
        });
      },
    ),
    role: command(
      write,
      'add an app role (allowedMemberTypes Application) to an API',
      ROLE_USAGE,
      { app: { type: 'string' }, value: { type: 'string' }, 'display-name': { type: 'string' }, description: { type: 'string' } },
      async (flags, positionals) => {
        expectAction(positionals, ['add'], ROLE_USAGE);
        const role = await changeDirectory(flags, (d) =>
          addAppRole(d, need(flags, 'app'), {
            value: need(flags, 'value'),
            ...(optional(flags, 'display-name') ? { displayName: optional(flags, 'display-name')! } : {}),
            ...(optional(flags, 'description') ? { description: optional(flags, 'description')! } : {}),
          }),
        );
        print({ roleId: role.id, value: role.value });
      },
    ),
    client: command(
      write,
      'register a client application with a secret (shown once)',
      CLIENT_USAGE,
      { name: { type: 'string' }, 'secret-days': { type: 'string' } },
      async (flags, positionals) => {
        expectAction(positionals, ['create'], CLIENT_USAGE);
        const days = integer(flags, 'secret-days');
        const made = await changeDirectory(flags, (d) =>
          createClient(d, {
            displayName: need(flags, 'name'),
            ...(days !== undefined ? { secretDays: days } : {}),
            ...(optional(flags, 'tenant') ? { tenantId: optional(flags, 'tenant')! } : {}),
          }),
        );
        print({
          appId: made.client.appId,
          servicePrincipalId: made.client.servicePrincipalId,
          tenantId: made.client.tenantId,
          'secret (shown once)': made.secret,
        });
      },
    ),
    secret: command(
      write,
      'add a secret to a client application (shown once)',
      SECRET_USAGE,
      { client: { type: 'string' }, days: { type: 'string' } },
      async (flags, positionals) => {
        expectAction(positionals, ['add'], SECRET_USAGE);
        const made = await changeDirectory(flags, (d) => addClientSecret(d, need(flags, 'client'), integer(flags, 'days')));
        print({ keyId: made.keyId, expiresAt: made.expiresAt, 'secret (shown once)': made.value });
      },
    ),
    cert: command(
      write,
      'register a certificate whose key signs client assertions',
      CERT_USAGE,
      { client: { type: 'string' }, cert: { type: 'string' } },
      async (flags, positionals) => {
        expectAction(positionals, ['add'], CERT_USAGE);
        const path = need(flags, 'cert');
        let pem: string;
        try {
          pem = await readFile(path, 'utf8');
        } catch (err) {
          throw new UsageError(`cannot read ${path}: ${(err as Error).message}`);
        }
        const made = await changeDirectory(flags, (d) => addClientCertificate(d, need(flags, 'client'), pem));
        print({ keyId: made.keyId, 'x5t (SHA-1)': made.thumbprint, 'x5t#S256': made.thumbprintSha256, expiresAt: made.expiresAt });
      },
    ),
    grant: command(
      write,
      'grant a client (or managed identity) an app role of an API',
      GRANT_USAGE,
      { client: { type: 'string' }, app: { type: 'string' }, role: { type: 'string' } },
      async (flags) => {
        const grant = await changeDirectory(flags, (d) => grantAppRole(d, need(flags, 'client'), need(flags, 'app'), need(flags, 'role')));
        print({ principalId: grant.principalId, resourceAppId: grant.resourceAppId, appRoleId: grant.appRoleId });
      },
    ),
    identity: command(write, 'create a user-assigned managed identity', IDENTITY_USAGE, { name: { type: 'string' } }, async (flags, positionals) => {
      expectAction(positionals, ['create'], IDENTITY_USAGE);
      const made = await changeDirectory(flags, (d) => createUserAssignedIdentity(d, need(flags, 'name')));
      print({ clientId: made.clientId, principalId: made.principalId, resourceId: made.resourceId });
    }),
    assign: command(
      write,
      'give a principal a data-plane role (storage) on a scope',
      ASSIGN_USAGE,
      { principal: { type: 'string' }, role: { type: 'string' }, scope: { type: 'string' } },
      async (flags) => {
        const made = await changeDirectory(flags, (d) => assignDataRole(d, need(flags, 'principal'), need(flags, 'role'), need(flags, 'scope')));
        print({ principalId: made.principalId, role: made.role, scope: made.scope });
      },
    ),
    list: command(write, 'print the directory as JSON (secrets as hint and expiry only)', 'offcloud identity list', {}, async (flags) => {
      const directory = await (await openStore(flags, write)).current();
      write(`${JSON.stringify(describeDirectory(directory), null, 2)}\n`);
    }),
    keys: command(write, 'rotate the token signing key, or list the published ones', KEYS_USAGE, {}, async (flags, positionals) => {
      const action = expectAction(positionals, ['rotate', 'list'], KEYS_USAGE);
      const keys = openSigningKeys(dataDirOf(flags));
      await keys.ensure();
      if (action === 'rotate') {
        const rotated = await keys.rotate();
        print({ 'new kid': rotated.kid, 'retired (still published until their tokens expire)': rotated.retired.join(', ') || 'none' });
        return;
      }
      const set = await keys.current();
      print(Object.fromEntries(set.jwks.keys.map((k) => [String(k.kid), k.kid === set.active.kid ? 'active' : 'retired'])));
    }),
  };
}

export const identityCommands = createIdentityCommands((text) => process.stdout.write(text));
