/**
 * What a cognitive container and the billing endpoint say to each other. The
 * real wire between containers and the cloud is private; this is ours, close
 * in spirit to the metering body in the containers' FAQ (reference §5): a
 * container type, its id and version, and meters with quantities. Nothing in
 * it can carry a document's text or an image: the billing side refuses any
 * field it does not know.
 */

/** The billing status vocabulary of the real containers (container FAQ). */
export const API_STATUSES = [
  'Valid',
  'Invalid',
  'Mismatch',
  'CouldNotConnect',
  'OutOfQuota',
  'BillingEndpointBusy',
  'ContainerUseUnauthorized',
  'Unknown',
] as const;
export type ApiStatus = (typeof API_STATUSES)[number];

export const API_STATUS_MESSAGES: Record<ApiStatus, string> = {
  Valid: 'Api Key is valid, no action needed.',
  Invalid: 'The Api Key is invalid for the billing endpoint.',
  Mismatch: 'The Api Key belongs to a resource of another kind than this container.',
  CouldNotConnect: 'Could not connect to the billing endpoint. Check the Billing URL and that the endpoint is up.',
  OutOfQuota: 'The resource is out of quota for this period.',
  BillingEndpointBusy: 'The billing endpoint is busy. Try again later.',
  ContainerUseUnauthorized: 'This resource is not allowed to run this container.',
  Unknown: 'The billing status is not known yet.',
};

/** Container kinds a billing resource can be made for, and the meter each is billed on. */
export const CONTAINER_KINDS = {
  sentiment: { apiType: 'textanalytics', billedMeter: 'CognitiveServices.TextAnalytics.Container.BatchScoring' },
  face: { apiType: 'face', billedMeter: 'CognitiveServices.Face.Container.Transactions' },
} as const;
export type ContainerKind = keyof typeof CONTAINER_KINDS;
export const CONTAINER_KIND_NAMES = Object.keys(CONTAINER_KINDS) as ContainerKind[];

/** Paths on the billing endpoint, relative to the Billing URL. */
export const BILLING_PATHS = {
  validate: '/billing/v1/validate',
  usage: '/billing/v1/usage',
} as const;

/** The header that carries the container's ApiKey, as the cloud resources take it. */
export const API_KEY_HEADER = 'ocp-apim-subscription-key';

/** Who is calling: sent with both the validation and the usage report. */
export interface ContainerIdentity {
  containerType: ContainerKind;
  /** Random per container process. */
  containerId: string;
  containerVersion: string;
}

export interface Meter {
  /** e.g. `CognitiveServices.TextAnalytics.Container.BatchScoring`. */
  name: string;
  /** A count: documents, images, transactions. */
  quantity: number;
}

export interface UsageReport extends ContainerIdentity {
  /** ISO 8601: the span the quantities were counted in. */
  periodStart: string;
  periodEnd: string;
  meters: Meter[];
}

/** The billing endpoint's answer to both calls. */
export interface BillingAnswer {
  apiStatus: ApiStatus;
  apiStatusMessage: string;
}

/** Shapes of meter names and quantities; the billing side validates reports against these. */
export const METER_NAME_PATTERN = '^[A-Za-z][A-Za-z0-9.]{0,127}$';
export const MAX_METERS_PER_REPORT = 16;
export const MAX_METER_QUANTITY = 1_000_000_000;
