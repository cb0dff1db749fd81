/**
 * SUBSCRIBE and UNSUBSCRIBE: a device may subscribe to its own topics of
 * §4.11 only (anything else gets SUBACK 0x80); a C2D subscription starts the
 * delivery of its pending messages.
 */
import type { AedesOptions, Client, Subscription } from 'aedes';
import type { EndpointContext } from './session.ts';
import { subscriptionKind } from './topics.ts';

/** The QoS aedes reports for a refused filter (SUBACK 0x80). */
const REFUSED = 128;

export function authorizeSubscribe({ sessions, logger }: EndpointContext): AedesOptions['authorizeSubscribe'] {
  return (client, subscription, callback) => {
    const session = sessions.of(client);
    const kind = session && subscriptionKind(subscription.topic, session.connection.identity);
    if (!session || !kind) {
      logger.info({ key: session?.key, topic: subscription.topic.slice(0, 256) }, 'subscription refused');
      callback(null, null);
      return;
    }
    // Recorded before SUBACK goes out, so an answer to the next publish finds it.
    session.subscriptions.add(kind);
    callback(null, subscription);
  };
}

export function onSubscribe({ hub, sessions, logger }: EndpointContext, subscriptions: Subscription[], client: Client): void {
  const session = sessions.of(client);
  if (!session?.c2d) return;
  const c2d = subscriptions.some((s) => (s.qos as number) !== REFUSED && subscriptionKind(s.topic, session.connection.identity) === 'c2d');
  if (!c2d) return;
  const delivery = session.c2d;
  hub
    .c2dSubscribed(session.connection.identity.deviceId, session.keepSession)
    .then(() => delivery.subscribe())
    .catch((err: unknown) => logger.error({ err, key: session.key }, 'subscription bookkeeping failed'));
}

export function onUnsubscribe({ hub, sessions, logger }: EndpointContext, topics: string[], client: Client): void {
  const session = sessions.of(client);
  // aedes also "unsubscribes" everything of a closing connection; only a device's UNSUBSCRIBE counts.
  if (!session || client.closed) return;
  for (const topic of topics) {
    const kind = subscriptionKind(topic, session.connection.identity);
    if (!kind) continue;
    session.subscriptions.delete(kind);
    if (kind !== 'c2d') continue;
    session.c2d?.unsubscribe();
    hub
      .c2dUnsubscribed(session.connection.identity.deviceId)
      .catch((err: unknown) => logger.error({ err, key: session.key }, 'subscription bookkeeping failed'));
  }
}
