/** Cloud-to-device messages on the wire: a QoS 1 PUBLISH out, its PUBACK back. */
import type { Client } from 'aedes';
import { encodePropertyBag, type C2dMessage } from '../domain/messages.ts';
import type { DeviceSession, EndpointContext } from './session.ts';
import { c2dTopic } from './topics.ts';

export function sendC2d(session: DeviceSession, message: C2dMessage): void {
  const { deviceId } = session.connection.identity;
  session.send(c2dTopic(deviceId, encodePropertyBag(message)), Buffer.from(message.payload, 'base64'), 1);
}

/** Only C2D messages go out at QoS 1, one at a time per device, so a PUBACK acknowledges the one in flight. */
export function onPuback(context: EndpointContext, client: Client): void {
  void context.sessions.of(client)?.c2d?.acknowledged();
}
