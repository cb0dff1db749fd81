/**
 * The storage service's wire errors and their one mapping: every error is an XML
 * <Error> body plus an `x-ms-error-code` header equal to its <Code> (the SDK's
 * createIfNotExists and exists() key on that header). HEAD errors carry the header only.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { clientErrorStatus, type WireAnswer, WireError } from '../common/errors.ts';
import { isDiskFull } from '../common/files.ts';
import { errorXml } from './xml.ts';

export class StorageError extends WireError {
  constructor(
    status: number,
    code: string,
    message: string,
    /** Elements after <Message>: <AuthenticationErrorDetail>, <HeaderName> and <HeaderValue>, … */
    readonly details: Record<string, string> = {},
    /** Extra response headers (the 401 challenge). */
    readonly headers: Record<string, string> = {},
  ) {
    super(status, code, message);
  }
}

export type LeaseTarget = 'blob' | 'container';

export const errors = {
  noAuthentication: (challenge: string) =>
    new StorageError(
      401,
      'NoAuthenticationInformation',
      'Server failed to authenticate the request. Please refer to the information in the www-authenticate header.',
      {},
      {
        'www-authenticate': challenge,
      },
    ),
  invalidAuthenticationInfo: () =>
    new StorageError(
      400,
      'InvalidAuthenticationInfo',
      'Authentication information is not given in the correct format. Check the value of Authorization header.',
    ),
  authenticationFailed: (detail: string) =>
    new StorageError(
      403,
      'AuthenticationFailed',
      'Server failed to authenticate the request. Make sure the value of the Authorization header is formed correctly including the signature.',
      { AuthenticationErrorDetail: detail },
    ),
  permissionMismatch: () =>
    new StorageError(403, 'AuthorizationPermissionMismatch', 'This request is not authorized to perform this operation using this permission.'),
  protocolMismatch: () =>
    new StorageError(403, 'AuthorizationProtocolMismatch', 'This request is not authorized to perform this operation using this protocol.'),
  sourceIpMismatch: (ip: string) =>
    new StorageError(403, 'AuthorizationSourceIPMismatch', `This request is not authorized to perform this operation using this source IP ${ip}.`),
  serviceMismatch: () => new StorageError(403, 'AuthorizationServiceMismatch', 'This request is not authorized to perform this operation using this service.'),
  resourceTypeMismatch: () =>
    new StorageError(403, 'AuthorizationResourceTypeMismatch', 'This request is not authorized to perform this operation using this resource type.'),
  missingHeader: (name: string) =>
    new StorageError(400, 'MissingRequiredHeader', "An HTTP header that's mandatory for this request is not specified.", { HeaderName: name }),
  invalidHeader: (name: string, value?: string) =>
    new StorageError(400, 'InvalidHeaderValue', 'The value for one of the HTTP headers is not in the correct format.', {
      HeaderName: name,
      ...(value === undefined ? {} : { HeaderValue: value }),
    }),
  invalidQuery: (name: string) =>
    new StorageError(400, 'InvalidQueryParameterValue', `Value for one of the query parameters specified in the request URI is invalid: ${name}.`),
  writeOnSecondary: () =>
    new StorageError(403, 'AuthorizationFailure', 'This request is not authorized to perform this operation: the secondary endpoint is read-only.'),
  invalidUri: () => new StorageError(400, 'InvalidUri', 'The requested URI does not represent any resource on the server.'),
  invalidResourceName: () => new StorageError(400, 'InvalidResourceName', 'The specifed resource name contains invalid characters.'),
  outOfRangeInput: (what: string) => new StorageError(400, 'OutOfRangeInput', `One of the request inputs is out of range: ${what}.`),
  invalidXml: () => new StorageError(400, 'InvalidXmlDocument', 'XML specified is not syntactically valid.'),
  invalidBlockList: () => new StorageError(400, 'InvalidBlockList', 'The specified block list is invalid.'),
  invalidBlockId: () =>
    new StorageError(400, 'InvalidQueryParameterValue', 'Value for one of the query parameters specified in the request URI is invalid: blockid.'),
  requestBodyTooLarge: () => new StorageError(413, 'RequestBodyTooLarge', 'The request body is too large and exceeds the maximum permissible limit.'),
  md5Mismatch: () => new StorageError(400, 'Md5Mismatch', 'The MD5 value specified in the request did not match with the MD5 value calculated by the server.'),
  accountNotFound: () => new StorageError(400, 'InvalidUri', 'The requested URI does not represent any resource on the server.'),
  containerNotFound: () => new StorageError(404, 'ContainerNotFound', 'The specified container does not exist.'),
  containerExists: () => new StorageError(409, 'ContainerAlreadyExists', 'The specified container already exists.'),
  containerBeingDeleted: () => new StorageError(409, 'ContainerBeingDeleted', 'The specified container is being deleted.'),
  blobNotFound: () => new StorageError(404, 'BlobNotFound', 'The specified blob does not exist.'),
  blobAlreadyExists: () => new StorageError(409, 'BlobAlreadyExists', 'The specified blob already exists.'),
  invalidBlobType: () => new StorageError(400, 'InvalidBlobType', 'The blob type is invalid for this operation.'),
  conditionNotMet: () => new StorageError(412, 'ConditionNotMet', 'The condition specified using HTTP conditional header(s) is not met.'),
  invalidRange: () => new StorageError(416, 'InvalidRange', 'The range specified is invalid for the current size of the resource.'),
  unsupportedOperation: () => new StorageError(400, 'UnsupportedHttpVerb', "The resource doesn't support specified Http Verb."),
  /** The service's code for a request it cannot take now (its account limits); here, a full disk. */
  diskFull: () => new StorageError(503, 'ServerBusy', "The server's disk is full: the request was not stored. Please retry your request once space is freed."),
  invalidMetadata: (name: string) =>
    new StorageError(400, 'InvalidMetadata', 'The metadata specified is invalid. It has characters that are not permitted.', { MetadataName: name }),
  /** Lease failures: `target` is 'blob' or 'container', as the service's messages name them. */
  leaseIdMissing: (target: LeaseTarget) =>
    new StorageError(412, 'LeaseIdMissing', `There is currently a lease on the ${target} and no lease ID was specified in the request.`),
  leaseIdMismatchWithOperation: (target: LeaseTarget) =>
    new StorageError(
      412,
      target === 'blob' ? 'LeaseIdMismatchWithBlobOperation' : 'LeaseIdMismatchWithContainerOperation',
      `The lease ID specified did not match the lease ID for the ${target}.`,
    ),
  leaseNotPresentWithOperation: (target: LeaseTarget) =>
    new StorageError(
      412,
      target === 'blob' ? 'LeaseNotPresentWithBlobOperation' : 'LeaseNotPresentWithContainerOperation',
      `There is currently no lease on the ${target}.`,
    ),
  leaseAlreadyPresent: () => new StorageError(409, 'LeaseAlreadyPresent', 'There is already a lease present.'),
  leaseNotPresentWithLeaseOperation: () => new StorageError(409, 'LeaseNotPresentWithLeaseOperation', 'There is currently no lease on the resource.'),
  leaseIdMismatchWithLeaseOperation: () =>
    new StorageError(409, 'LeaseIdMismatchWithLeaseOperation', 'The lease ID specified did not match the lease ID for the resource.'),
  leaseIsBreaking: (operation: 'Acquired' | 'Changed') =>
    new StorageError(
      409,
      `LeaseIsBreakingAndCannotBe${operation}`,
      `There is already a breaking lease present and it cannot be ${operation === 'Acquired' ? 'acquired' : 'changed'}.`,
    ),
  leaseIsBrokenAndCannotBeRenewed: () =>
    new StorageError(409, 'LeaseIsBrokenAndCannotBeRenewed', 'The lease has been broken explicitly and cannot be renewed.'),
  snapshotsPresent: () => new StorageError(409, 'SnapshotsPresent', 'This operation is not permitted because the blob has snapshots.'),
  blobArchived: () => new StorageError(409, 'BlobArchived', 'This operation is not permitted on an archived blob.'),
  invalidTag: () => new StorageError(400, 'InvalidTag', 'The tags specified are invalid. It contains characters that are not permitted.'),
  blobTypeMismatch: () => new StorageError(409, 'InvalidBlobType', 'The blob type is invalid for this operation.'),
  cannotVerifyCopySource: (status: number, detail: string) =>
    new StorageError(
      status >= 400 && status < 500 ? status : 400,
      'CannotVerifyCopySource',
      `Could not verify the copy source within the specified time. ${detail}`,
    ),
  corsPreflightFailure: () => new StorageError(403, 'CorsPreflightFailure', 'CORS not enabled or no matching rule found for this request.'),
  invalidXmlNodeValue: (node: string) =>
    new StorageError(400, 'InvalidXmlNodeValue', 'The value for one of the XML nodes is not in the correct format.', { XmlNodeName: node }),
  internal: () => new StorageError(500, 'InternalError', 'The server encountered an internal error. Please retry the request.'),
};

/** Each request's `x-ms-request-id`, given when it arrives, so that its error body names the same id. */
const requestIds = new WeakMap<FastifyRequest, string>();

export function assignRequestId(request: FastifyRequest): string {
  const id = randomUUID();
  requestIds.set(request, id);
  return id;
}

/** What fastify refused before a handler ran, in the service's terms. */
function storageErrorOf(error: unknown): StorageError {
  if (error instanceof StorageError) return error;
  if (isDiskFull(error)) return errors.diskFull();
  const status = clientErrorStatus(error);
  if (status === 413) return errors.requestBodyTooLarge();
  if (status !== undefined) return errors.invalidUri();
  return errors.internal();
}

/** The one mapping from any failure to the storage error answer. */
export function toWireError(error: unknown, request: FastifyRequest): WireAnswer {
  const storageError = storageErrorOf(error);
  const requestId = requestIds.get(request) ?? randomUUID();
  return {
    status: storageError.status,
    headers: {
      'x-ms-request-id': requestId,
      'x-ms-error-code': storageError.code,
      ...storageError.headers,
      'content-type': 'application/xml',
      // Answered before the body was read whole (a refused upload): the rest is not read, so the connection ends here.
      ...(request.raw.complete ? {} : { connection: 'close' }),
    },
    body: request.method === 'HEAD' ? '' : errorXml(storageError, requestId),
  };
}
