/**
 * PUBLISH from a device: telemetry, twin requests and direct-method answers,
 * each on the device's own topics only. A refusal closes the connection (the
 * real hub does the same); QoS 2 is refused. Nothing is routed to other
 * clients: the hub is not a broker.
 */
import type { AedesOptions, PublishPacket } from 'aedes';
import { parsePropertyBag } from '../domain/messages.ts';
import type { DeviceSession, EndpointContext } from './session.ts';
import { parsePublishTopic } from './topics.ts';
import { answerTwinRequest } from './twin.ts';

async function handlePublish(context: EndpointContext, session: DeviceSession, packet: PublishPacket, retained: boolean): Promise<void> {
  const { hub } = context;
  const request = parsePublishTopic(packet.topic, session.connection.identity);
  if (!request) throw new Error('topic not allowed');
  const payload = Buffer.isBuffer(packet.payload) ? packet.payload : Buffer.from(packet.payload);
  switch (request.kind) {
    case 'telemetry': {
      const bag = parsePropertyBag(request.bag);
      if (retained) bag.properties['mqtt-retain'] = 'true';
      await hub.recordTelemetry(session.connection.identity, bag, payload, Buffer.byteLength(packet.topic));
      return;
    }
    case 'method-response': {
      const origin = session.methodOrigins.get(request.rid);
      if (origin === undefined) return;
      session.methodOrigins.delete(request.rid);
      await hub.methodResponse(request.rid, origin, request.status, payload);
      return;
    }
    default:
      return answerTwinRequest(context, session, request.kind, request.rid, payload);
  }
}

export function authorizePublish(context: EndpointContext): AedesOptions['authorizePublish'] {
  const { sessions, logger } = context;
  return (client, packet, callback) => {
    const session = sessions.of(client);
    if (!session) return callback(new Error('not connected'));
    if (packet.qos === 2) {
      logger.info({ key: session.key }, 'QoS 2 publish refused: connection closed');
      return callback(new Error('QoS 2 is not supported'));
    }
    const retained = packet.retain;
    // Nothing is kept for later subscribers: a retained telemetry topic would be stored forever.
    packet.retain = false;
    session
      .serially(() => handlePublish(context, session, packet, retained))
      .then(
        () => callback(null),
        (err: unknown) => {
          logger.info({ key: session.key, topic: packet.topic.slice(0, 256), reason: (err as Error).message }, 'publish refused: connection closed');
          callback(err as Error);
        },
      );
  };
}
