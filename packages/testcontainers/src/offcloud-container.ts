/**
 * The offcloud image as a Testcontainers module: `offcloud up --only <the
 * chosen components>` in one container (they and what they need run, nothing
 * else), start-up awaited on the chosen components' `/ready`, and what a client
 * needs handed back with the host's mapped ports: URLs, keys, the storage
 * connection string and the local CA.
 *
 * What the container started is read from `/data/up.json`, the record
 * `offcloud up` writes once every component has started or failed: every
 * component's URLs and table details, and the typed facts (keys, connection
 * strings, ids) the getters hand back. Start-up is awaited on that file, then
 * on each chosen component's `/ready`; never on the wording of a log line.
 */
import { readFile } from 'node:fs/promises';
import { request as httpGet } from 'node:http';
import { request as httpsGet } from 'node:https';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { extract, pack } from 'tar-stream';
import {
  AbstractStartedContainer,
  GenericContainer,
  getContainerRuntimeClient,
  StartupCheckStrategy,
  type StartedTestContainer,
  type StartupStatus,
} from 'testcontainers';

export const OFFCLOUD_IMAGE = 'localhost/offcloud:dev';

/**
 * The ports each component listens on inside the container under `offcloud up`
 * (its defaults as a non-root user). devsvc is left out: it listens on a free port
 * and its clients reach it through devdata.
 */
export const COMPONENT_PORTS = {
  calculator: [8082],
  users: [8083],
  gateway: [8000, 8443, 8001],
  identity: [9440, 9441],
  storage: [10000, 10443],
  devdata: [8081],
  scripts: [8080],
  hub: [8883, 8884, 5671],
  billing: [5100],
  sentiment: [5000],
  face: [5005],
  scoring: [5001],
  'scoring-frontend': [5080],
  console: [8090],
} as const satisfies Record<string, readonly number[]>;

export type OffcloudComponent = keyof typeof COMPONENT_PORTS;

const KNOWN = Object.keys(COMPONENT_PORTS) as OffcloudComponent[];
const DATA_DIR = '/data';
/** The uid and gid the image runs as (its user `offcloud`), who owns what is copied into /data. */
const IMAGE_USER = 10001;
const STATE_FILE = `${DATA_DIR}/up.json`;
/** Written by `offcloud up` once every component it starts has started or failed (removed when it starts). */
/** Starting every component (models included) takes a while on a small machine. */
const DEFAULT_STARTUP_TIMEOUT_MS = 180_000;

export interface Endpoint {
  label: string;
  url: string;
}

/** A line of up's table under a component's URLs: a label and the value it shows, or a note. */
export interface Detail {
  label: string;
  value?: string;
}

interface ComponentRecord {
  urls: Endpoint[];
  details: Detail[];
  caCertPath: string | null;
}

/**
 * The part of up.json this module reads. The repository's own test
 * (test/testcontainers) checks at compile time that offcloud's UpState
 * (src/up/state.ts) still fits it.
 */
export interface UpRecord {
  facts: {
    identity?: { authorityHost: string; imdsUrl: string; tenantId: string; demoClient?: { clientId: string; clientSecret: string } };
    storage?: { accountName: string; accountKey: string; blobEndpoint: string; httpBlobEndpoint: string };
  };
  components: Record<string, ComponentRecord>;
  failed: Record<string, { reason: string; fix: string }>;
}

/** The identity component's issuer and demo client, for client-credentials and managed-identity tokens. */
export interface OffcloudIdentity {
  /** The authority host (HTTPS; trust the CA), e.g. for `ClientSecretCredential`'s `authorityHost`. */
  authorityHost: string;
  /** The managed-identity (IMDS) origin, plain HTTP. */
  imdsUrl: string;
  tenantId: string;
  clientId: string;
  clientSecret: string;
}

function checkComponents(components: readonly string[]): OffcloudComponent[] {
  if (components.length === 0) throw new Error('OffcloudContainer.withComponents: name at least one component');
  for (const name of components) {
    if (name === 'devsvc') throw new Error('OffcloudContainer.withComponents: devsvc listens on a free port inside the container; reach it through devdata');
    if (!(KNOWN as readonly string[]).includes(name)) {
      throw new Error(`OffcloudContainer.withComponents: unknown component ${JSON.stringify(name)}; the components are ${KNOWN.join(', ')}`);
    }
  }
  return [...new Set(components)] as OffcloudComponent[];
}

/** The status code of a GET, or undefined when nothing answers yet. */
function statusOf(url: string, ca: string | undefined): Promise<number | undefined> {
  const get = url.startsWith('https:') ? httpsGet : httpGet;
  return new Promise((resolve) => {
    const req = get(url, { ca, timeout: 5000 }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.end();
  });
}

/** Resolves once the component answers 2xx on `/ready` at one of its HTTP(S) origins. */
async function waitReady(component: string, urls: Endpoint[], ca: string | undefined, deadline: number): Promise<void> {
  const origins = new Set(
    urls
      .filter(({ url }) => URL.canParse(url))
      .map(({ url }) => new URL(url.replace(/\{[^}]*\}/g, 'x')))
      .filter((u) => u.protocol === 'http:' || u.protocol === 'https:')
      .map((u) => u.origin),
  );
  if (!origins.size) return;
  for (;;) {
    const statuses = await Promise.all([...origins].map((origin) => statusOf(`${origin}/ready`, ca)));
    if (statuses.some((status) => status !== undefined && status >= 200 && status < 300)) return;
    if (Date.now() > deadline) {
      throw new Error(
        `OffcloudContainer: ${component} is not ready: GET /ready on ${[...origins].join(', ')} answered ${statuses.map((s) => s ?? 'nothing').join(', ')}`,
      );
    }
    await sleep(250);
  }
}

/**
 * A file's text, through the engine's archive API (as `podman cp` takes it): an exec session
 * (`cat`) through podman's API service leaves its conmon process running after it ends.
 */
async function readFileIn(container: StartedTestContainer, path: string): Promise<string> {
  let archive: NodeJS.ReadableStream;
  try {
    archive = await container.copyArchiveFromContainer(path);
  } catch (err) {
    throw new Error(`OffcloudContainer: cannot read ${path} in the container: ${(err as Error).message}`);
  }
  const entries = extract();
  archive.pipe(entries);
  for await (const entry of entries) {
    const chunks: Buffer[] = [];
    for await (const chunk of entry) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  throw new Error(`OffcloudContainer: the container's archive of ${path} is empty`);
}

/**
 * A CA made beforehand (its folder's ca.crt and ca.key) as a tar archive of `ca/`, owned
 * by the image's user: the container's offcloud reads the key and issues its server
 * certificate from it (a file owned by the host's user would be unreadable there, 0600).
 */
async function caArchive(folder: string): Promise<Readable> {
  // Read one after the other, so a folder without either file is always reported by its ca.crt.
  const files: { name: string; content: Buffer }[] = [];
  for (const name of ['ca.crt', 'ca.key']) {
    try {
      files.push({ name, content: await readFile(join(folder, name)) });
    } catch (err) {
      throw new Error(
        `OffcloudContainer.withCa: cannot read ${join(folder, name)} (make the CA with \`offcloud ca --data-dir DIR\`; its folder is DIR/ca): ${(err as Error).message}`,
      );
    }
  }
  const owner = { uid: IMAGE_USER, gid: IMAGE_USER };
  const archive = pack();
  archive.entry({ name: 'ca', type: 'directory', mode: 0o700, ...owner });
  for (const { name, content } of files) archive.entry({ name: `ca/${name}`, mode: name === 'ca.key' ? 0o600 : 0o644, ...owner }, content);
  archive.finalize();
  return Readable.from(archive, { objectMode: false });
}

/**
 * Start-up is over once `offcloud up` has written up.json (every component it starts has started
 * or failed; written in one rename). Asked through the archive API, never an exec session.
 */
class UpStateWritten extends StartupCheckStrategy {
  override async checkStartupState(...[client, id]: Parameters<StartupCheckStrategy['checkStartupState']>): Promise<StartupStatus> {
    const container = client.getContainer(id);
    if (!(await container.inspect()).State.Running) return 'FAIL';
    try {
      (await container.getArchive({ path: STATE_FILE })).resume();
      return 'SUCCESS';
    } catch {
      return 'PENDING';
    }
  }
}

/**
 * `new OffcloudContainer(image).withComponents(['storage', 'identity']).start()`.
 * The container runs `offcloud up` with `OFFCLOUD_ONLY` set to the components
 * named: those run, with the ones they need (storage's tokens come from
 * identity, the cognitive containers' keys from billing…), wired to each other
 * as usual. `start()` waits for the named ones' `/ready` and fails with up's
 * reason if one of them did not start; the getters answer for every component
 * that runs. Without `withComponents`, every component.
 */
export class OffcloudContainer extends GenericContainer {
  private components: OffcloudComponent[] = [...KNOWN];
  private only = false;
  private caFolder: string | undefined;
  private dataDir = false;

  constructor(image = OFFCLOUD_IMAGE) {
    super(image);
    this.withCommand(['up']).withWaitStrategy(new UpStateWritten()).withStartupTimeout(DEFAULT_STARTUP_TIMEOUT_MS);
  }

  /** The components the test uses: only they (and what they need) run, and `start()` awaits them. */
  withComponents(components: readonly OffcloudComponent[]): this {
    this.components = checkComponents(components);
    this.only = true;
    return this;
  }

  /**
   * Keeps offcloud's state (the CA, identity's directory, blobs, keys) in a host
   * folder, mounted on /data; it must be writable by the image's user (uid 10001).
   */
  withDataDir(hostPath: string): this {
    this.dataDir = true;
    return this.withBindMounts([{ source: hostPath, target: DATA_DIR, mode: 'rw' }]);
  }

  /**
   * The container's CA is the one in `folder` (its ca.crt and ca.key), made beforehand with
   * `offcloud ca --data-dir DIR` (the folder is DIR/ca), so a test process can trust it
   * from its start: `NODE_EXTRA_CA_CERTS=DIR/ca/ca.crt`. The two files are copied into the
   * container, owned by the image's user; the container issues its server certificate from them.
   */
  withCa(folder: string): this {
    this.caFolder = folder;
    return this;
  }

  override async start(): Promise<StartedOffcloudContainer> {
    if (this.only) this.withEnvironment({ OFFCLOUD_ONLY: this.components.join(',') });
    if (this.caFolder) {
      if (this.dataDir) throw new Error('OffcloudContainer: withCa and withDataDir together: the data folder keeps the CA its first run made; use one of them');
      this.withCopyArchivesToContainer([{ tar: await caArchive(this.caFolder), target: DATA_DIR }]);
    }
    // Every component's ports are published, also those of components that do not run (nothing
    // answers behind those): Podman 4 lists each port the image EXPOSEs among the container's
    // port bindings, and Testcontainers waits until every one of them is bound to a host port.
    // The start itself is awaited on up.json and then on /ready, never on the ports.
    this.withExposedPorts(...new Set(Object.values(COMPONENT_PORTS).flat()));
    // The admin API keeps to loopback by default (it has no authentication); a test reaches it through its published port.
    if (this.components.includes('gateway')) this.withEnvironment({ OFFCLOUD_GATEWAY_ADMIN_HOST: '0.0.0.0' });
    // The certificates carry the host the ports are reached by: a Docker host on another machine
    // (DOCKER_HOST=tcp://…, TESTCONTAINERS_HOST_OVERRIDE) is reached by a name of its own.
    const host = reachableHost((await getContainerRuntimeClient()).info.containerRuntime.host);
    if (host !== 'localhost') this.withEnvironment({ OFFCLOUD_TLS_NAMES: host });
    const deadline = Date.now() + (this.startupTimeoutMs ?? DEFAULT_STARTUP_TIMEOUT_MS);
    const container = await super.start();
    try {
      const state = JSON.parse(await readFileIn(container, STATE_FILE)) as UpRecord;
      const notStarted = this.components.filter((name) => !state.components[name]);
      if (notStarted.length) {
        const why = notStarted.map(
          (name) => `${name}: ${state.failed[name]?.reason ?? 'not in this image'}${state.failed[name] ? ` (${state.failed[name].fix})` : ''}`,
        );
        throw new Error(`OffcloudContainer: offcloud up did not start ${notStarted.join(', ')}\n${why.join('\n')}`);
      }
      const caPath = Object.values(state.components).find((c) => c.caCertPath)?.caCertPath;
      const ca = caPath ? await readFileIn(container, caPath) : undefined;
      const started = new StartedOffcloudContainer(container, state, ca);
      for (const component of this.components) await waitReady(component, started.getUrls(component), ca, deadline);
      return started;
    } catch (err) {
      await container.stop();
      throw err;
    }
  }
}

/**
 * The host a client reaches the published ports by. Testcontainers answers the
 * container network's gateway when it believes it runs inside a container (a
 * `/.dockerenv` on a CI machine); when that address is this machine's own, the
 * ports are reached on `localhost` as well, the name the CA's certificates carry.
 */
export function reachableHost(host: string, localAddresses: () => string[] = ownAddresses): string {
  return isIP(host) && localAddresses().includes(host) ? 'localhost' : host;
}

function ownAddresses(): string[] {
  return Object.values(networkInterfaces()).flatMap((addresses) => (addresses ?? []).map(({ address }) => address));
}

export class StartedOffcloudContainer extends AbstractStartedContainer {
  constructor(
    startedTestContainer: StartedTestContainer,
    private readonly state: UpRecord,
    private readonly ca: string | undefined,
  ) {
    super(startedTestContainer);
  }

  /** The host the container's ports are reached by: Testcontainers' own, or `localhost` for an address of this machine (see reachableHost). */
  override getHost(): string {
    return reachableHost(super.getHost());
  }

  /** The components running in the container: the ones named and those they need. */
  getComponents(): string[] {
    return Object.keys(this.state.components);
  }

  private record(component: OffcloudComponent): ComponentRecord {
    const record = this.state.components[component];
    if (!record) {
      throw new Error(`OffcloudContainer: ${component} does not run in this container (${this.getComponents().join(', ')} do); add it with withComponents`);
    }
    return record;
  }

  /** A URL from inside the container, on the host's mapped port (templates such as `{device}` kept). */
  private mapped(component: OffcloudComponent, url: string): string {
    const { protocol, host, port } = new URL(url);
    const inside = Number(port);
    if (!(COMPONENT_PORTS[component] as readonly number[]).includes(inside)) {
      throw new Error(`OffcloudContainer: ${component} serves ${url}, on a port this module does not publish`);
    }
    const origin = `${protocol}//${host}`;
    return `${protocol}//${this.getHost()}:${this.getMappedPort(inside)}${url.slice(origin.length)}`;
  }

  /**
   * Every URL the component printed (what `offcloud up`'s table shows), reachable from the
   * host; an entry that is no URL (devdata's `multicast DNS …` registry) is given as printed.
   */
  getUrls(component: OffcloudComponent): Endpoint[] {
    return this.record(component).urls.map(({ label, url }) => ({ label, url: URL.canParse(url) ? this.mapped(component, url) : url }));
  }

  /** The origin of the component's first URL, as `offcloud env`'s `<COMPONENT>_URL`. */
  getUrl(component: OffcloudComponent): string {
    const first = this.getUrls(component)[0];
    if (!first) throw new Error(`OffcloudContainer: ${component} has no URL`);
    const { protocol, host } = new URL(first.url);
    return `${protocol}//${host}`;
  }

  /** What `offcloud up`'s table shows under the component's URLs, label and value (hosts and ports are the container's own). */
  getDetails(component: OffcloudComponent): Detail[] {
    return this.record(component).details.map((detail) => ({ ...detail }));
  }

  /** The local CA's certificate (PEM): trust it for the https:// and mqtts:// URLs, whose certificate names `localhost` and the host handed back. */
  getCaCertificate(): string {
    if (!this.ca) throw new Error('OffcloudContainer: none of the started components serves TLS');
    return this.ca;
  }

  /** A component's published facts, from up.json. */
  private facts<C extends keyof UpRecord['facts']>(component: C): NonNullable<UpRecord['facts'][C]> {
    this.record(component);
    const facts = this.state.facts[component];
    if (!facts) throw new Error(`OffcloudContainer: ${component} published no facts`);
    return facts;
  }

  getAccountName(): string {
    return this.facts('storage').accountName;
  }

  getAccountKey(): string {
    return this.facts('storage').accountKey;
  }

  /** Storage over plain HTTP with Shared Key (what `UseDevelopmentStorage=true` means, on the mapped port). */
  getConnectionString(): string {
    const { accountName, accountKey, httpBlobEndpoint } = this.facts('storage');
    return `DefaultEndpointsProtocol=http;AccountName=${accountName};AccountKey=${accountKey};BlobEndpoint=${this.mapped('storage', httpBlobEndpoint)};`;
  }

  /** Storage's HTTPS blob endpoint, where bearer tokens work (§4.10); trust the CA. */
  getBlobEndpoint(): string {
    return this.mapped('storage', this.facts('storage').blobEndpoint);
  }

  getIdentity(): OffcloudIdentity {
    const { authorityHost, imdsUrl, tenantId, demoClient } = this.facts('identity');
    if (!demoClient) throw new Error('OffcloudContainer: identity has no demo client (its secret was removed)');
    return {
      authorityHost: this.mapped('identity', authorityHost),
      imdsUrl: this.mapped('identity', imdsUrl),
      tenantId,
      clientId: demoClient.clientId,
      clientSecret: demoClient.clientSecret,
    };
  }
}
