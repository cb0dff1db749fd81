/**
 * The device-facing topics of §4.11 (with `$hub` = `$iothub`), parsed and
 * built for one identity. Anything not listed here is refused.
 */
import type { Identity } from '../domain/registry.ts';

export type DevicePublish =
  | { kind: 'telemetry'; bag: string }
  | { kind: 'twin-get'; rid: string }
  | { kind: 'twin-patch-reported'; rid: string }
  | { kind: 'method-response'; rid: string; status: number };

export type SubscriptionKind = 'c2d' | 'methods' | 'twin-responses' | 'desired' | 'inputs';

function identityPrefix(identity: Identity): string {
  return identity.moduleId ? `devices/${identity.deviceId}/modules/${identity.moduleId}` : `devices/${identity.deviceId}`;
}

/** The request id exactly as the device wrote it: it is echoed byte for byte. */
function ridOf(query: string): string | undefined {
  const pair = query.split('&').find((p) => p.startsWith('$rid='));
  const rid = pair?.slice('$rid='.length);
  return rid ? rid : undefined;
}

function splitQuery(topic: string, path: string): string | undefined {
  if (!topic.startsWith(path)) return undefined;
  const rest = topic.slice(path.length);
  return rest.startsWith('?') ? rest.slice(1) : undefined;
}

export function parsePublishTopic(topic: string, identity: Identity): DevicePublish | undefined {
  const events = `${identityPrefix(identity)}/messages/events`;
  if (topic === events) return { kind: 'telemetry', bag: '' };
  if (topic.startsWith(`${events}/`)) {
    // Module output events end the bag with '/'.
    return { kind: 'telemetry', bag: topic.slice(events.length + 1).replace(/\/$/, '') };
  }
  let query = splitQuery(topic, '$iothub/twin/GET/');
  if (query !== undefined) {
    const rid = ridOf(query);
    return rid ? { kind: 'twin-get', rid } : undefined;
  }
  query = splitQuery(topic, '$iothub/twin/PATCH/properties/reported/');
  if (query !== undefined) {
    const rid = ridOf(query);
    return rid ? { kind: 'twin-patch-reported', rid } : undefined;
  }
  const method = /^\$iothub\/methods\/res\/(\d{3})\/\?(.*)$/s.exec(topic);
  if (method) {
    const rid = ridOf(method[2]!);
    return rid ? { kind: 'method-response', rid, status: Number(method[1]) } : undefined;
  }
  return undefined;
}

/** The filters a device may subscribe to; other devices' topics and wildcards are refused. */
export function subscriptionKind(filter: string, identity: Identity): SubscriptionKind | undefined {
  if (filter === '$iothub/twin/res/#') return 'twin-responses';
  if (filter === '$iothub/methods/POST/#') return 'methods';
  if (filter === '$iothub/twin/PATCH/properties/desired/#') return 'desired';
  if (!identity.moduleId && filter === `devices/${identity.deviceId}/messages/devicebound/#`) return 'c2d';
  if (identity.moduleId && filter === `${identityPrefix(identity)}/inputs/#`) return 'inputs';
  return undefined;
}

export const twinResponseTopic = (status: number, rid: string, version?: number) =>
  `$iothub/twin/res/${status}/?$rid=${rid}${version === undefined ? '' : `&$version=${version}`}`;

export const desiredPatchTopic = (version: number) => `$iothub/twin/PATCH/properties/desired/?$version=${version}`;

export const methodRequestTopic = (methodName: string, rid: string) => `$iothub/methods/POST/${methodName}/?$rid=${rid}`;

export const c2dTopic = (deviceId: string, bag: string) => `devices/${deviceId}/messages/devicebound/${bag}`;
