/**
 * File upload, as the real hub does it: a device asks for a SAS URI for one
 * blob (`{deviceId}/{blobName}` in the container of the hub's file-upload
 * settings), uploads to storage itself, and tells the hub how it went; a
 * successful upload becomes a file notification for the service side.
 *
 * The correlation id a device gets is a signed token (HS256, by jose) naming
 * the device, the blob and when the SAS ends, so any replica, after any
 * restart, can take the notification; a device may have at most 10 uploads
 * open at once on a replica (the real hub's limit). jose is loaded on first
 * use, so the CLI's help and management commands, which reach this module,
 * load no server package.
 */
import { randomUUID } from 'node:crypto';
import { HubError, invalidArgument } from './errors.ts';

/** Where uploads go: the storage account and container of the file-upload settings, reached through the storage's own API. */
export interface UploadStorage {
  /** The container is made when missing; a SAS for one blob (read, create, write) until `expiresOn`. */
  blobSas(blobName: string, expiresOn: Date): Promise<{ hostName: string; containerName: string; sasToken: string }>;
  /** The blob's URL (no SAS), size and last change, or undefined when there is no such blob. */
  blobProperties(blobName: string): Promise<{ url: string; size: number; lastModified: Date } | undefined>;
}

export interface FileUploadSettings {
  storage: UploadStorage;
  sasTtlSeconds: number;
  /** Whether successful uploads become file notifications for the service side. */
  notify: boolean;
}

/** What `POST /devices/{id}/files` answers: the device builds `https://{hostName}/{containerName}/{blobName}{sasToken}`. */
export interface FileUploadGrant {
  correlationId: string;
  hostName: string;
  containerName: string;
  blobName: string;
  sasToken: string;
}

/** The body of a message on `/messages/serviceBound/filenotifications`. */
export interface FileNotification {
  deviceId: string;
  blobUri: string;
  blobName: string;
  lastUpdatedTime: string;
  blobSizeInBytes: number;
  enqueuedTimeUtc: string;
}

/** What a device reports once its upload is done (`POST /devices/{id}/files/notifications`). */
export interface UploadOutcome {
  isSuccess: boolean;
  statusCode?: number;
  statusDescription?: string;
}

/** The real hub's limits: 10 uploads open at once per device; a blob name (with the device id in front) up to 1024 characters. */
export const MAX_ACTIVE_UPLOADS = 10;
const MAX_BLOB_NAME = 1024;

/**
 * A blob name a device may ask for. The SDKs put it in a URL path as it is
 * (`https://{hostName}/{container}/{blobName}{sas}`), so characters that would
 * end or change that path (`?`, `#`, `%`, `\`, controls) are refused, and so are
 * empty, `.` and `..` segments, which would name a blob outside the device's folder.
 */
export function parseBlobName(body: unknown, deviceId: string): string {
  const blobName = (typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { blobName?: unknown }) : {}).blobName;
  if (typeof blobName !== 'string' || blobName === '') throw invalidArgument('the body must be {"blobName": "<name>"}');
  const full = `${deviceId}/${blobName}`;
  if (full.length > MAX_BLOB_NAME) throw invalidArgument(`the blob name with the device id in front is longer than ${MAX_BLOB_NAME} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[?#%\\\u0000-\u001f\u007f]/.test(blobName)) throw invalidArgument('a blob name may not hold ? # % \\ or control characters');
  if (blobName.split('/').some((segment) => segment === '' || segment === '.' || segment === '..'))
    throw invalidArgument('a blob name may not have empty, "." or ".." segments');
  return full;
}

function parseOutcome(body: unknown): UploadOutcome & { correlationId?: unknown } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidArgument('the body must be a JSON object');
  const { isSuccess, statusCode, statusDescription, correlationId } = body as Record<string, unknown>;
  if (typeof isSuccess !== 'boolean') throw invalidArgument('isSuccess must be true or false');
  if (statusCode !== undefined && statusCode !== null && (typeof statusCode !== 'number' || !Number.isInteger(statusCode)))
    throw invalidArgument('statusCode must be an integer');
  if (statusDescription !== undefined && statusDescription !== null && typeof statusDescription !== 'string')
    throw invalidArgument('statusDescription must be a string');
  return { isSuccess, correlationId };
}

const notOurs = () => new HubError('IotHubFormatError', 'the correlation id is not one this hub gave for this device, or its upload has expired');

export class FileUploads {
  /** Open uploads by device on this replica: correlation token id → when its SAS ends. */
  private readonly open = new Map<string, Map<string, number>>();

  constructor(
    private readonly settings: FileUploadSettings | undefined,
    /** The key correlation ids are signed with (the `iothubowner` policy's). */
    private readonly signingKey: () => Promise<string>,
    private readonly now: () => number = Date.now,
  ) {}

  private configured(): FileUploadSettings {
    if (!this.settings)
      throw invalidArgument('file upload is not configured for this hub: start it with --file-upload-connection-string, or under offcloud up beside storage');
    return this.settings;
  }

  private async key(): Promise<Uint8Array> {
    return new TextEncoder().encode(await this.signingKey());
  }

  private openOf(deviceId: string): Map<string, number> {
    let uploads = this.open.get(deviceId);
    if (!uploads) this.open.set(deviceId, (uploads = new Map()));
    for (const [id, until] of uploads) if (until <= this.now()) uploads.delete(id);
    return uploads;
  }

  /** `POST /devices/{id}/files`: a SAS URI for `{deviceId}/{blobName}` and the correlation id of the upload. */
  async start(deviceId: string, body: unknown): Promise<FileUploadGrant> {
    const { storage, sasTtlSeconds } = this.configured();
    const blobName = parseBlobName(body, deviceId);
    const uploads = this.openOf(deviceId);
    if (uploads.size >= MAX_ACTIVE_UPLOADS)
      throw new HubError('DeviceMaximumActiveFileUploadLimitExceeded', `device ${deviceId} already has ${MAX_ACTIVE_UPLOADS} file uploads open`);
    const expiresAt = this.now() + sasTtlSeconds * 1000;
    const sas = await storage.blobSas(blobName, new Date(expiresAt));
    const id = randomUUID();
    const { SignJWT } = await import('jose');
    const correlationId = await new SignJWT({ blob: blobName })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(deviceId)
      .setJti(id)
      .setExpirationTime(Math.ceil(expiresAt / 1000))
      .sign(await this.key());
    uploads.set(id, expiresAt);
    return { correlationId, ...sas, blobName };
  }

  /**
   * `POST /devices/{id}/files/notifications[/{correlationId}]`: the upload is closed; a successful one
   * that left a blob becomes a file notification (returned, for the service side), a failed one does not.
   */
  async complete(deviceId: string, correlationInPath: string | undefined, body: unknown): Promise<FileNotification | undefined> {
    const { storage, notify } = this.configured();
    const outcome = parseOutcome(body);
    const correlationId = correlationInPath ?? outcome.correlationId;
    if (typeof correlationId !== 'string' || correlationId === '') throw invalidArgument('correlationId must be the one POST /files gave');
    const { errors: joseErrors, jwtVerify } = await import('jose');
    let claims: { sub?: unknown; jti?: unknown; blob?: unknown };
    try {
      ({ payload: claims } = await jwtVerify(correlationId, await this.key(), { algorithms: ['HS256'], currentDate: new Date(this.now()) }));
    } catch (err) {
      if (err instanceof joseErrors.JOSEError) throw notOurs();
      throw err;
    }
    if (claims.sub !== deviceId || typeof claims.blob !== 'string' || typeof claims.jti !== 'string') throw notOurs();
    this.openOf(deviceId).delete(claims.jti);
    if (!outcome.isSuccess || !notify) return undefined;
    const blob = await storage.blobProperties(claims.blob);
    if (!blob) return undefined;
    return {
      deviceId,
      blobUri: blob.url,
      blobName: claims.blob,
      lastUpdatedTime: blob.lastModified.toISOString(),
      blobSizeInBytes: blob.size,
      enqueuedTimeUtc: new Date(this.now()).toISOString(),
    };
  }
}
