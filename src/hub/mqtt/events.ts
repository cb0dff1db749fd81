/**
 * Hub events (from this replica or another, over the bus) that reach a device
 * connected here: C2D messages, desired pushes, method requests, and the
 * connections a newer one or a revoked identity ends.
 */
import type { HubEvent } from '../domain/bus.ts';
import type { EndpointContext } from './session.ts';
import { methodRequestTopic } from './topics.ts';
import { pushDesired } from './twin.ts';

export function onHubEvent({ hub, sessions, logger }: EndpointContext, event: HubEvent): void {
  switch (event.type) {
    case 'c2d':
      void sessions.get(event.deviceId)?.c2d?.pump();
      return;
    case 'desired': {
      const session = sessions.get(event.key);
      if (session) pushDesired(session, event.patch);
      return;
    }
    case 'method-request': {
      const session = sessions.get(event.key);
      if (!session) return;
      if (!session.subscriptions.has('methods')) {
        hub.methodNotSubscribed(event.rid, event.origin).catch((err: unknown) => logger.error({ err }, 'method answer failed'));
        return;
      }
      session.methodOrigins.set(event.rid, event.origin);
      // An answer after the caller gave up is dropped, and so is the entry.
      setTimeout(() => session.methodOrigins.delete(event.rid), event.timeoutMs).unref();
      session.send(methodRequestTopic(event.methodName, event.rid), JSON.stringify(event.payload));
      return;
    }
    case 'connected': {
      const session = sessions.get(event.key);
      if (session && session.connectionId !== event.connectionId) session.client.close();
      return;
    }
    case 'revoked':
      sessions.get(event.key)?.client.close();
      return;
    default:
      return;
  }
}
