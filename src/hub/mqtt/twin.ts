/**
 * Twin traffic (§3, R-TWIN-6/7/9): GET and reported PATCH answered on
 * `$iothub/twin/res/<status>/?$rid=…`, desired changes pushed on
 * `$iothub/twin/PATCH/properties/desired/`. Errors go back as the twin
 * response body the device SDK reads, never empty.
 */
import type { JsonObject } from '../domain/twin.ts';
import { HubError } from '../domain/errors.ts';
import { deviceErrorBody, toHubError } from '../errors.ts';
import type { DeviceSession, EndpointContext } from './session.ts';
import { desiredPatchTopic, twinResponseTopic } from './topics.ts';

export async function answerTwinRequest(
  { hub, logger }: EndpointContext,
  session: DeviceSession,
  kind: 'twin-get' | 'twin-patch-reported',
  rid: string,
  payload: Buffer,
): Promise<void> {
  if (!session.connection.twinAllowed) {
    // §7: twin operations need api-version 2016-11-14 or newer in the username.
    throw new Error('twin operation without api-version');
  }
  let topic: string;
  let body: string;
  try {
    if (kind === 'twin-get') {
      body = JSON.stringify(await hub.deviceTwin(session.key));
      topic = twinResponseTopic(200, rid);
    } else {
      topic = twinResponseTopic(204, rid, await hub.patchReported(session.key, payload));
      body = '';
    }
  } catch (err) {
    const error = toHubError(err);
    if (!(err instanceof HubError)) logger.error({ err, key: session.key }, 'twin operation failed');
    topic = twinResponseTopic(error.status, rid);
    body = deviceErrorBody(error);
  }
  if (session.subscriptions.has('twin-responses')) session.send(topic, body);
}

/** Desired pushes go only to a connected device that subscribed to them (not queued, as the real hub). */
export function pushDesired(session: DeviceSession, patch: JsonObject): void {
  if (session.subscriptions.has('desired')) session.send(desiredPatchTopic(Number(patch.$version)), JSON.stringify(patch));
}
