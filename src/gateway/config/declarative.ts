/**
 * Kong's declarative configuration (`_format_version` "3.0", or "1.1"/"2.1"
 * migrated on load, YAML or JSON): parsing, validation with the path of
 * every bad key, and nesting flattened into entities with resolved
 * references. What the proxy runs on
 * is compiled from these entities by proxy/compile.ts.
 */
import { createHash, createPublicKey, randomBytes } from 'node:crypto';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { DeclarativeConfigError } from '../errors.ts';
import { PLUGINS } from '../plugins/index.ts';
import {
  aclFields,
  basicauthCredentialFields,
  certificateFields,
  hmacauthCredentialFields,
  consumerFields,
  jwtSecretFields,
  DEFAULT_TARGET_PORT,
  keyauthCredentialFields,
  NESTED,
  parseTarget,
  pluginFields,
  routeFields,
  serviceFields,
  sniFields,
  targetFields,
  upstreamFields,
} from './entities.ts';
import { checkCertificate } from './certificate.ts';
import { FORMAT_VERSIONS, isLegacyFormat, migrateRoutePath } from './format-version.ts';
import type {
  Acl,
  BasicauthCredential,
  Certificate,
  Consumer,
  HmacauthCredential,
  Entities,
  JwtSecret,
  KeyauthCredential,
  Plugin,
  Route,
  Service,
  Sni,
  Target,
  Upstream,
} from './model.ts';
import { checkRecord, join, type Field, type FieldError } from './schema.ts';

const TOP_LEVEL_KINDS = [
  'services',
  'routes',
  'consumers',
  'keyauth_credentials',
  'jwt_secrets',
  'acls',
  'basicauth_credentials',
  'hmacauth_credentials',
  'plugins',
  'upstreams',
  'targets',
  'certificates',
  'snis',
] as const;
type Kind = (typeof TOP_LEVEL_KINDS)[number];
const FIELDS: Record<Kind, Record<string, Field>> = {
  services: serviceFields,
  routes: routeFields,
  consumers: consumerFields,
  keyauth_credentials: keyauthCredentialFields,
  jwt_secrets: jwtSecretFields,
  acls: aclFields,
  basicauth_credentials: basicauthCredentialFields,
  hmacauth_credentials: hmacauthCredentialFields,
  plugins: pluginFields,
  upstreams: upstreamFields,
  targets: targetFields,
  certificates: certificateFields,
  snis: sniFields,
};
const KONG_ONLY_KINDS = ['ca_certificates', 'vaults', 'consumer_groups', 'oauth2_credentials'];
const META_KEYS = ['_format_version', '_transform', '_comment', '_ignore', '_workspace'];

/** What a load found besides the entities: problems that refuse the file, and warnings it loads with. */
interface Findings {
  errors: FieldError[];
  warnings: FieldError[];
  /** Route paths of a 1.1/2.1 file rewritten for 3.0: `path 'from' → 'to'`. */
  migrated: string[];
}

/**
 * Kong's `_comment` (a string) and `_ignore` (an array) may sit on any
 * entity and on the document itself; they are checked and dropped.
 */
function withoutMeta(item: Record<string, unknown>, path: string, errors: FieldError[]): Record<string, unknown> {
  const { _comment, _ignore, ...rest } = item;
  if (_comment !== undefined && typeof _comment !== 'string') errors.push({ path: join(path, '_comment'), message: 'expected a string' });
  if (_ignore !== undefined && !Array.isArray(_ignore)) errors.push({ path: join(path, '_ignore'), message: 'expected an array' });
  return rest;
}

const notSupported = (kind: string) => `not supported by offcloud's gateway (Kong entity '${kind}')`;

/** A 1.1/2.1 route's paths in their 3.0 form; each one that changes is listed once. */
function migratePaths(route: Record<string, unknown>, path: string, migrated: string[]): Record<string, unknown> {
  if (!Array.isArray(route.paths)) return route;
  const paths = route.paths.map((p: unknown, i) => {
    if (typeof p !== 'string') return p;
    const next = migrateRoutePath(p);
    if (next !== p) migrated.push(`${join(join(path, 'paths'), i)} '${p}' → '${next}'`);
    return next;
  });
  return { ...route, paths };
}

/** Parses YAML or JSON text (JSON is YAML); syntax errors name the line. */
export function parseDeclarativeText(text: string): unknown {
  try {
    return parseYaml(text, { uniqueKeys: true, maxAliasCount: 100 });
  } catch (err) {
    throw new DeclarativeConfigError([{ path: '', message: `not valid YAML or JSON: ${(err as Error).message.split('\n')[0]}` }]);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Stable ids for entities the file does not give one, so a reload keeps them (UUID v5 layout). */
function stableId(kind: string, key: string): string {
  const bytes = createHash('sha1').update(`offcloud-gateway:${kind}:${key}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

interface Row {
  kind: Kind;
  path: string;
  value: Record<string, unknown>;
  /** The entity as the file gave it (before defaults). */
  raw: Record<string, unknown>;
  /** The parent this entity was nested under: the foreign key it gets. */
  parent?: { field: string; row: Row };
}

/** Walks the document, checks every entity's fields, and lists entities with nesting flattened. */
function collectRows(doc: Record<string, unknown>, found: Findings): Row[] {
  const { errors, warnings } = found;
  const legacy = isLegacyFormat(doc._format_version);
  const rows: Row[] = [];
  const visit = (kind: Kind, list: unknown, path: string, parent?: Row['parent']) => {
    if (list === undefined || list === null) return;
    if (!Array.isArray(list)) {
      errors.push({ path, message: 'expected an array' });
      return;
    }
    list.forEach((item, i) => {
      const itemPath = join(path, i);
      if (!isRecord(item)) {
        errors.push({ path: itemPath, message: 'expected a record' });
        return;
      }
      const foreign = (NESTED as Record<string, Record<string, string>>)[kind] ?? {};
      let own = Object.fromEntries(Object.entries(withoutMeta(item, itemPath, errors)).filter(([key]) => !(key in foreign)));
      for (const key of Object.keys(own)) {
        if (KONG_ONLY_KINDS.includes(key) && !Object.hasOwn(FIELDS[kind], key)) {
          errors.push({ path: join(itemPath, key), message: notSupported(key) });
          delete own[key];
        }
      }
      if (legacy && kind === 'routes') own = migratePaths(own, itemPath, found.migrated);
      const checked = checkRecord(FIELDS[kind], own, itemPath, errors, warnings);
      const row: Row = { kind, path: itemPath, value: checked, raw: item, parent };
      rows.push(row);
      for (const [child, field] of Object.entries(foreign)) visit(child as Kind, item[child], join(itemPath, child), { field, row });
    });
  };
  for (const kind of TOP_LEVEL_KINDS) visit(kind, doc[kind], kind);
  return rows;
}

function applyServiceUrl(value: Record<string, unknown>, path: string, errors: FieldError[]): void {
  if (typeof value.url === 'string') {
    let url: URL;
    try {
      url = new URL(value.url);
    } catch {
      errors.push({ path: join(path, 'url'), message: 'invalid url' });
      return;
    }
    const protocol = url.protocol.slice(0, -1);
    if (protocol !== 'http' && protocol !== 'https') {
      errors.push({ path: join(path, 'url'), message: 'expected one of: http, https' });
      return;
    }
    value.protocol = protocol;
    value.host = url.hostname;
    value.port = url.port ? Number(url.port) : protocol === 'https' ? 443 : 80;
    // Kong keeps no path for `http://h` and "/" for `http://h/`.
    const afterHost = value.url.replace(/^[a-z]+:\/\/[^/?#]*/i, '');
    value.path = afterHost === '' ? null : url.pathname;
    delete value.url;
  }
  if (typeof value.host !== 'string') errors.push({ path: join(path, 'host'), message: 'required field missing' });
  value.port ??= 80;
}

/** Looks up a referenced entity by id or by its name field; an error names the path when it is missing. */
function resolver<T extends { id: string }>(items: T[], nameOf: (item: T) => (string | null)[]) {
  const byKey = new Map<string, T>();
  for (const item of items) {
    byKey.set(item.id, item);
    for (const name of nameOf(item)) if (name) byKey.set(name, item);
  }
  return (ref: unknown, path: string, what: string, errors: FieldError[]): { id: string } | null => {
    if (ref === undefined || ref === null) return null;
    const key = typeof ref === 'string' ? ref : Object.values(ref as Record<string, string>)[0]!;
    const found = byKey.get(key);
    if (!found) {
      errors.push({ path, message: `references a ${what} that does not exist: '${key}'` });
      return null;
    }
    return { id: found.id };
  };
}

/**
 * The entity a row belongs to: the one it is nested under, else the one its
 * `field` names (required then).
 */
function owner(row: Row, field: string, find: ReturnType<typeof resolver>, errors: FieldError[]): { id: string } | null {
  if (row.parent) return { id: String(row.parent.row.value.id) };
  const ref = row.value[field];
  if (ref === undefined) errors.push({ path: join(row.path, field), message: 'required field missing' });
  return find(ref, join(row.path, field), field, errors);
}

function checkUnique<T>(items: { item: T; path: string }[], field: string, value: (item: T) => string | null | undefined, errors: FieldError[]): void {
  const seen = new Map<string, string>();
  for (const { item, path } of items) {
    const v = value(item);
    if (v === null || v === undefined) continue;
    const first = seen.get(v);
    if (first) errors.push({ path: join(path, field), message: `uniqueness violation: '${v}' is also used by ${first}` });
    else seen.set(v, path);
  }
}

/** The document's own keys: `_format_version` (Kong 3.x reads 1.1, 2.1 and 3.0), `_transform`, `_workspace`, `_comment`, `_ignore`. */
function checkDocumentKeys(doc: Record<string, unknown>, found: Findings): void {
  const { errors, warnings } = found;
  if (doc._format_version === undefined) errors.push({ path: '_format_version', message: 'required field missing' });
  else if (!(FORMAT_VERSIONS as readonly unknown[]).includes(doc._format_version)) {
    errors.push({ path: '_format_version', message: `expected one of: ${FORMAT_VERSIONS.join(', ')}` });
  }
  if (doc._transform !== undefined && typeof doc._transform !== 'boolean') errors.push({ path: '_transform', message: 'expected a boolean' });
  if (doc._workspace !== undefined) {
    if (typeof doc._workspace !== 'string') errors.push({ path: '_workspace', message: 'expected a string' });
    // Kong's open-source gateway has one workspace, `default`, and loads every entity into it.
    else if (doc._workspace !== 'default') {
      warnings.push({ path: '_workspace', message: `workspace '${doc._workspace}' is loaded as the one workspace this gateway has ('default')` });
    }
  }
  withoutMeta(doc, '', errors);
  for (const key of Object.keys(doc)) {
    if (META_KEYS.includes(key) || (TOP_LEVEL_KINDS as readonly string[]).includes(key)) continue;
    errors.push({ path: key, message: KONG_ONLY_KINDS.includes(key) ? notSupported(key) : 'unknown field' });
  }
}

function validateDocument(doc: unknown, now: number): { entities: Entities; found: Findings } {
  const found: Findings = { errors: [], warnings: [], migrated: [] };
  const { errors } = found;
  const empty: Entities = {
    services: [],
    routes: [],
    consumers: [],
    keyauth_credentials: [],
    jwt_secrets: [],
    acls: [],
    basicauth_credentials: [],
    hmacauth_credentials: [],
    plugins: [],
    upstreams: [],
    targets: [],
    certificates: [],
    snis: [],
  };
  if (!isRecord(doc)) {
    errors.push({ path: '', message: 'expected a record (the top level of a declarative configuration)' });
    return { entities: empty, found };
  }
  checkDocumentKeys(doc, found);
  const rows = collectRows(doc, found);
  const created = Math.floor(now / 1000);
  const byKind = (kind: Kind) => rows.filter((r) => r.kind === kind);
  const generatedIds = new Set<string>();
  const withIds = (kind: Kind, keyOf: (row: Row, i: number) => string) =>
    byKind(kind).map((row, i) => {
      if (row.value.id === undefined) {
        row.value.id = stableId(kind, keyOf(row, i));
        generatedIds.add(row.value.id as string);
      }
      row.value.created_at ??= created;
      return row;
    });

  const serviceRows = withIds('services', (r, i) => String(r.value.name ?? `#${i}`));
  for (const row of serviceRows) applyServiceUrl(row.value, row.path, errors);
  const services = serviceRows.map((r) => ({ updated_at: r.value.created_at, name: null, path: null, tls_verify: null, tags: null, ...r.value }) as Service);
  const findService = resolver(services, (s) => [s.name]);

  const routeRows = withIds('routes', (r, i) => String(r.value.name ?? `${r.path}#${i}`));
  const routes = routeRows.map((row) => {
    const v = row.value;
    const service = row.parent ? { id: String(row.parent.row.value.id) } : findService(v.service, join(row.path, 'service'), 'service', errors);
    if (!service) errors.push({ path: join(row.path, 'service'), message: 'a route must belong to a service' });
    checkRouteCriteria(row, errors);
    return { updated_at: v.created_at, name: null, methods: null, hosts: null, paths: null, headers: null, tags: null, ...v, service } as Route;
  });

  const consumerRows = withIds('consumers', (r, i) => String(r.value.username ?? r.value.custom_id ?? `#${i}`));
  for (const row of consumerRows) {
    if (typeof row.value.username !== 'string' && typeof row.value.custom_id !== 'string') {
      errors.push({ path: row.path, message: "at least one of these fields must be non-empty: 'custom_id', 'username'" });
    }
  }
  const consumers = consumerRows.map((r) => ({ username: null, custom_id: null, tags: null, ...r.value }) as Consumer);
  const findConsumer = resolver(consumers, (c) => [c.username, c.custom_id]);

  /** Entities a consumer owns (credentials, acl groups): nested under it, or naming it in `consumer`. */
  const ownedByConsumer = <T>(kind: Kind, keyOf: (row: Row, i: number) => string, fill: (value: Record<string, unknown>) => void) => {
    const kindRows = withIds(kind, keyOf);
    const items = kindRows.map((row) => {
      const v = row.value;
      fill(v);
      return { tags: null, ...v, consumer: owner(row, 'consumer', findConsumer, errors) } as T;
    });
    return { items, kindRows };
  };
  const generated = () => randomBytes(24).toString('base64url');
  // Kong generates a key when the file gives none.
  const keyauth = ownedByConsumer<KeyauthCredential>(
    'keyauth_credentials',
    (r, i) => String(r.value.key ?? `${r.path}#${i}`),
    (v) => {
      v.key ??= generated();
      v.ttl ??= null;
    },
  );
  const credentials = keyauth.items;
  const credentialRows = keyauth.kindRows;
  const jwt = ownedByConsumer<JwtSecret>(
    'jwt_secrets',
    (r, i) => String(r.value.key ?? `${r.path}#${i}`),
    (v) => {
      v.key ??= generated();
      v.secret ??= generated();
      v.rsa_public_key ??= null;
    },
  );
  for (const [i, secret] of jwt.items.entries()) checkJwtSecret(secret, jwt.kindRows[i]!.path, errors);
  const acls = ownedByConsumer<Acl>(
    'acls',
    (r, i) => `${JSON.stringify(r.parent?.row.value.id ?? r.value.consumer)}|${String(r.value.group ?? `${r.path}#${i}`)}`,
    () => {},
  );
  const basic = ownedByConsumer<BasicauthCredential>(
    'basicauth_credentials',
    (r, i) => String(r.value.username ?? `${r.path}#${i}`),
    () => {},
  );
  // With `_transform` (Kong's default), passwords are given in clear and stored as Kong hashes them; without it they are such hashes.
  if (doc._transform !== false)
    for (const credential of basic.items) credential.password = hashBasicauthPassword(credential.password, credential.consumer?.id ?? '');

  // Kong generates a secret when the file gives none.
  const hmac = ownedByConsumer<HmacauthCredential>(
    'hmacauth_credentials',
    (r, i) => String(r.value.username ?? `${r.path}#${i}`),
    (v) => {
      v.secret ??= generated();
    },
  );

  const upstreamRows = withIds('upstreams', (r, i) => String(r.value.name ?? `#${i}`));
  const upstreams = upstreamRows.map((r) => ({ ...UPSTREAM_NULLS, updated_at: r.value.created_at, ...r.value }) as Upstream);
  const findUpstream = resolver(upstreams, (u) => [u.name]);
  const targetRows = withIds(
    'targets',
    (r, i) => `${JSON.stringify(r.parent ? r.parent.row.value.id : r.value.upstream)}|${String(r.value.target ?? `${r.path}#${i}`)}`,
  );
  const targets = targetRows.map((row) => {
    const v = row.value;
    const upstream = owner(row, 'upstream', findUpstream, errors);
    // Kong stores the target with its port, 8000 when none is given.
    const parsed = typeof v.target === 'string' ? parseTarget(v.target) : null;
    if (parsed && parsed.port === null) v.target = `${v.target as string}:${DEFAULT_TARGET_PORT}`;
    return { tags: null, updated_at: v.created_at, ...v, upstream } as Target;
  });

  const certificateRows = withIds('certificates', (r) => String(r.value.cert));
  const certificates = certificateRows.map((r) => ({ cert_alt: null, key_alt: null, tags: null, updated_at: r.value.created_at, ...r.value }) as Certificate);
  certificates.forEach((certificate, i) => {
    if (typeof certificate.cert === 'string' && typeof certificate.key === 'string') checkCertificate(certificate, certificateRows[i]!.path, errors);
  });
  const findCertificate = resolver(certificates, () => []);
  const sniRows = withIds('snis', (r, i) => String(r.value.name ?? `${r.path}#${i}`));
  // Server names compare without case (a client sends them in lower case).
  const snis = sniRows.map(
    (row) =>
      ({
        tags: null,
        updated_at: row.value.created_at,
        ...row.value,
        name: String(row.value.name).toLowerCase(),
        certificate: owner(row, 'certificate', findCertificate, errors),
      }) as Sni,
  );

  const findRoute = resolver(routes, (r) => [r.name]);
  const pluginRows = withIds('plugins', (r, i) => `${r.path}#${i}:${String(r.value.name)}`);
  const plugins = pluginRows.map((row) => {
    const v = row.value;
    const parent = row.parent ? { [row.parent.field]: { id: String(row.parent.row.value.id) } } : {};
    const plugin = {
      instance_name: null,
      tags: null,
      ...v,
      service: findService(v.service, join(row.path, 'service'), 'service', errors),
      route: findRoute(v.route, join(row.path, 'route'), 'route', errors),
      consumer: findConsumer(v.consumer, join(row.path, 'consumer'), 'consumer', errors),
      ...parent,
    } as Plugin;
    const definition = PLUGINS.get(plugin.name);
    if (typeof v.name === 'string' && !definition) {
      errors.push({ path: join(row.path, 'name'), message: `plugin '${v.name}' not enabled; this gateway has: ${[...PLUGINS.keys()].join(', ')}` });
    }
    if (definition) {
      const configPath = join(row.path, 'config');
      const raw = v.config ?? {};
      if (!isRecord(raw)) errors.push({ path: configPath, message: 'expected a record' });
      else {
        const before = errors.length;
        plugin.config = checkRecord(definition.configFields, definition.expandShorthands?.(raw) ?? raw, configPath, errors, found.warnings);
        if (errors.length === before) definition.checkConfig?.(plugin.config, configPath, errors);
      }
      if (definition.noConsumer && plugin.consumer)
        errors.push({ path: join(row.path, 'consumer'), message: `value must be null (${plugin.name} cannot be applied to a consumer)` });
    }
    return plugin;
  });

  const listed = <T>(items: T[], rowsOf: Row[]) => items.map((item, i) => ({ item, path: rowsOf[i]!.path }));
  for (const [items, kindRows] of [
    [services, serviceRows],
    [routes, routeRows],
    [consumers, consumerRows],
    [credentials, credentialRows],
    [jwt.items, jwt.kindRows],
    [acls.items, acls.kindRows],
    [basic.items, basic.kindRows],
    [hmac.items, hmac.kindRows],
    [plugins, pluginRows],
    [upstreams, upstreamRows],
    [targets, targetRows],
    [certificates, certificateRows],
    [snis, sniRows],
  ] as const) {
    // Generated ids repeat only when names do, which is reported below by name.
    checkUnique(listed<{ id: string }>(items, kindRows), 'id', (x) => (generatedIds.has(x.id) ? null : x.id), errors);
  }
  checkUnique(listed(services, serviceRows), 'name', (s) => s.name, errors);
  checkUnique(listed(routes, routeRows), 'name', (r) => r.name, errors);
  checkUnique(listed(consumers, consumerRows), 'username', (c) => c.username, errors);
  checkUnique(listed(consumers, consumerRows), 'custom_id', (c) => c.custom_id, errors);
  checkUnique(listed(credentials, credentialRows), 'key', (c) => c.key, errors);
  checkUnique(listed(jwt.items, jwt.kindRows), 'key', (c) => c.key, errors);
  checkUnique(listed(basic.items, basic.kindRows), 'username', (c) => c.username, errors);
  checkUnique(listed(hmac.items, hmac.kindRows), 'username', (c) => c.username, errors);
  checkUnique(listed(acls.items, acls.kindRows), 'group', (a) => `${a.group} of consumer ${a.consumer?.id}`, errors);
  checkUnique(listed(upstreams, upstreamRows), 'name', (u) => u.name, errors);
  checkUnique(listed(snis, sniRows), 'name', (s) => s.name, errors);
  checkUnique(listed(targets, targetRows), 'target', (t) => (t.upstream ? `${t.target} in upstream ${t.upstream.id}` : null), errors);
  checkUnique(listed(plugins, pluginRows), 'name', (p) => `${p.name} on ${JSON.stringify([p.route?.id, p.service?.id, p.consumer?.id])}`, errors);

  const entities = {
    services,
    routes,
    consumers,
    keyauth_credentials: credentials,
    jwt_secrets: jwt.items,
    acls: acls.items,
    basicauth_credentials: basic.items,
    hmacauth_credentials: hmac.items,
    plugins,
    upstreams,
    targets,
    certificates,
    snis,
  };
  return { entities, found };
}

/** Kong's basic-auth password hash: sha1 of the password followed by the consumer's id, in hex. */
export function hashBasicauthPassword(password: string, consumerId: string): string {
  return createHash('sha1')
    .update(password + consumerId)
    .digest('hex');
}

/** An RSA/EC/EdDSA secret needs its public key, in PEM (Kong's jwt_secrets entity checks). */
function checkJwtSecret(secret: JwtSecret, path: string, errors: FieldError[]): void {
  if (secret.algorithm.startsWith('HS')) return;
  const keyPath = join(path, 'rsa_public_key');
  if (!secret.rsa_public_key) errors.push({ path: keyPath, message: 'required field missing' });
  else {
    try {
      createPublicKey(secret.rsa_public_key);
    } catch {
      errors.push({ path: keyPath, message: "invalid key; 'rsa_public_key' must be a PEM public key" });
    }
  }
}

const UPSTREAM_NULLS = Object.fromEntries(
  [
    'hash_on_header',
    'hash_fallback_header',
    'hash_on_cookie',
    'hash_on_query_arg',
    'hash_fallback_query_arg',
    'hash_on_uri_capture',
    'hash_fallback_uri_capture',
    'host_header',
    'tags',
  ].map((k) => [k, null]),
);

const isSet = (v: unknown) => v !== undefined && v !== null && (Array.isArray(v) ? v.length > 0 : typeof v !== 'object' || Object.keys(v).length > 0);

/** Kong's route subschemas: what an http(s) route and a grpc(s) route must and may set. */
function checkRouteCriteria(row: Row, errors: FieldError[]): void {
  const v = row.value;
  const protocols = Array.isArray(v.protocols) ? (v.protocols as string[]) : [];
  if (!protocols.some((p) => p === 'grpc' || p === 'grpcs')) {
    if (!['methods', 'hosts', 'headers', 'paths'].some((k) => isSet(v[k]))) {
      errors.push({ path: row.path, message: "must set one of 'methods', 'hosts', 'headers', 'paths' when 'protocols' is 'http' or 'https'" });
    }
    return;
  }
  // strip_path defaults to false on a gRPC route, and may not be true.
  if (row.raw.strip_path === true)
    errors.push({ path: join(row.path, 'strip_path'), message: "cannot set 'strip_path' when 'protocols' is 'grpc' or 'grpcs'" });
  v.strip_path = false;
  if (isSet(v.methods)) errors.push({ path: join(row.path, 'methods'), message: "cannot set 'methods' when 'protocols' is 'grpc' or 'grpcs'" });
  if (!['hosts', 'headers', 'paths'].some((k) => isSet(v[k]))) {
    errors.push({
      path: row.path,
      message: `must set one of 'hosts', 'headers', 'paths' when 'protocols' is '${protocols.includes('grpcs') ? 'grpcs' : 'grpc'}'`,
    });
  }
}

/** A document that loads: its entities and what it loads with a warning about (each to be logged once). */
export interface ValidatedDocument {
  entities: Entities;
  warnings: FieldError[];
}

/** Validates a parsed document into entities; throws DeclarativeConfigError with every problem. */
export function validateDeclarative(doc: unknown, now = Date.now()): ValidatedDocument {
  const { entities, found } = validateDocument(doc, now);
  if (found.errors.length) throw new DeclarativeConfigError(found.errors);
  const warnings = [...found.warnings];
  if (found.migrated.length) {
    const version = JSON.stringify((doc as Record<string, unknown>)._format_version);
    warnings.unshift({ path: '_format_version', message: `${version}: route paths migrated to 3.0 as Kong does: ${found.migrated.join(', ')}` });
  }
  return { entities, warnings };
}

/** Kong's configuration_hash: md5 of the document, so POST /config?check_hash=1 can skip an unchanged one. */
export function documentHash(doc: unknown): string {
  return createHash('md5').update(JSON.stringify(doc)).digest('hex');
}

/** The loaded entities as a flat declarative file (what `GET /config` returns). */
export function toDeclarativeYaml(entities: Entities): string {
  return stringifyYaml({ _format_version: '3.0', _transform: false, ...entities });
}
