/**
 * PUBLISH from a device: telemetry, twin requests and direct-method answers,
 * each on the device's own topics only. A refusal closes the connection (the
 * real hub does the same); QoS 2 is refused. Nothing is routed to other
 * clients: the hub is not a broker.
 */
import type { AedesOptions, Client, PublishPacket } from 'aedes';
import mqttPacket from 'mqtt-packet';
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

/** Handles one device publish after the ones before it; rejects (and logs) what closes the connection. */
function acceptPublish(context: EndpointContext, session: DeviceSession, packet: PublishPacket, retained: boolean): Promise<void> {
  return session
    .serially(() => handlePublish(context, session, packet, retained))
    .catch((err: unknown) => {
      context.logger.info({ key: session.key, topic: packet.topic.slice(0, 256), reason: (err as Error).message }, 'publish refused: connection closed');
      throw err;
    });
}

/** The publishes aedes itself handles: those read before CONNACK went out, and QoS 2 (refused). */
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
    acceptPublish(context, session, packet, retained).then(
      () => callback(null),
      (err: unknown) => callback(err as Error),
    );
  };
}

/** aedes' own checks of a PUBLISH topic (lib/handlers/publish.js): such topics are left to aedes, which closes the connection. */
const MAX_TOPIC_LEVELS = 100;
function needsBrokerChecks(topic: string): boolean {
  return topic.includes('#') || topic.includes('+') || (topic.length >= MAX_TOPIC_LEVELS && topic.split('/').length > MAX_TOPIC_LEVELS);
}

/** The parts of aedes' client (lib/client.js) the direct path works with. */
interface ClientInternals {
  _parser: {
    _queue: unknown[] | null;
    listeners(event: 'packet'): ((packet: PublishPacket) => void)[];
    removeAllListeners(event: 'packet'): void;
    on(event: 'packet', listener: (packet: PublishPacket) => void): void;
  };
  /** Packets of the current socket read still being handled; the next read starts at 0. */
  _parsingBatch: number;
  _nextBatch(err: Error | null): void;
  _keepaliveInterval: number;
  _keepaliveTimer: NodeJS.Timeout | null;
  connackSent: boolean;
  /** Calls back once the socket drained, or with an error after aedes' drain timeout. */
  waitForDrain(callback: (err?: Error | null) => void): void;
}

/**
 * A connected device's QoS 0 and 1 PUBLISH, answered without aedes' publish
 * pipeline: aedes would run it through its per-client series, route it
 * through its emitter (nothing a device may subscribe to matches a topic it
 * may publish on) and write the PUBACK through a corked stream. Here the
 * PUBACK is one write, once the message is accepted, as before; reading
 * waits for it, as in aedes (the next socket read starts when every packet
 * of this one is answered). Every other packet takes aedes' own path. If an
 * aedes upgrade changes how a client reads packets, the first connection
 * throws here, and every test in test/hub fails.
 */
export function answerPublishesDirectly(context: EndpointContext, client: Client): void {
  const internals = client as unknown as ClientInternals;
  const parser = internals._parser;
  const [enqueue, ...others] = parser.listeners('packet');
  if (!enqueue || others.length > 0) throw new Error('aedes no longer reads packets as this endpoint expects');
  parser.removeAllListeners('packet');
  parser.on('packet', function (this: unknown, packet) {
    const session = packet.cmd === 'publish' && packet.qos !== 2 && internals.connackSent && parser._queue === null ? context.sessions.of(client) : undefined;
    if (!session || needsBrokerChecks(packet.topic)) return enqueue.call(this, packet);
    internals._parsingBatch++;
    if (internals._keepaliveInterval > 0) internals._keepaliveTimer?.refresh();
    acceptPublish(context, session, packet, packet.retain).then(
      () => {
        if (!client.connected) return;
        if (packet.qos === 0 || client.conn.write(mqttPacket.generate({ cmd: 'puback', messageId: packet.messageId }))) internals._nextBatch(null);
        else internals.waitForDrain((err) => internals._nextBatch(err ?? null));
      },
      (err: unknown) => internals._nextBatch(err as Error),
    );
  });
}
