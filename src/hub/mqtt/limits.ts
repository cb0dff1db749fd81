/**
 * What one client may cost the device endpoint before it is cut off: time to
 * finish the TLS handshake and send CONNECT, and the size of any one packet.
 * A connection over a limit is closed; every other device keeps being served.
 */
import type { Client } from 'aedes';
import { DEFAULT_CONNECT_TIMEOUT_MS } from '../defaults.ts';
import { MAX_TELEMETRY_BYTES } from '../domain/messages.ts';

export interface ClientLimits {
  /** From TCP accept to the end of the TLS handshake, and from there to CONNECT: each at most this long. */
  connectTimeoutMs: number;
  /** Largest packet before the connection is accepted (a CONNECT is a few hundred bytes). */
  maxPacketBytesBeforeConnect: number;
  /** Largest packet afterwards. */
  maxPacketBytes: number;
}

export const DEFAULT_CLIENT_LIMITS: ClientLimits = {
  connectTimeoutMs: DEFAULT_CONNECT_TIMEOUT_MS,
  maxPacketBytesBeforeConnect: 16 * 1024,
  // The real hub's 256 KB message, plus a QoS 1 PUBLISH's own fields (topic length, packet id);
  // the topic counts towards the 256 KB, checked again when the message is recorded.
  maxPacketBytes: MAX_TELEMETRY_BYTES + 4,
};

/** The part of mqtt-packet's parser that aedes keeps per client (`client._parser`). */
interface PacketParser {
  parse(chunk: Buffer): number;
  /** The packet being read; `length` is its remaining length once the fixed header is in, -1 before. */
  packet: { length: number };
}

/**
 * Closes the connection as soon as a packet's fixed header announces more
 * than the limit, before its body is buffered. aedes has no option for this
 * (moscajs/aedes#831) and reads every packet whole, up to MQTT's 256 MB, so
 * the check wraps the parser aedes made for this client: at most the limit
 * plus one socket read is ever held. test/hub/limits.test.ts fails loudly if
 * an aedes or mqtt-packet upgrade moves these fields.
 */
export function capPacketSize(client: Client, limits: ClientLimits): void {
  const parser = (client as unknown as { _parser: PacketParser })._parser;
  const parse = parser.parse.bind(parser);
  parser.parse = (chunk) => {
    const left = parse(chunk);
    const limit = client.connected ? limits.maxPacketBytes : limits.maxPacketBytesBeforeConnect;
    if (parser.packet.length > limit) client.conn.destroy(new Error(`a packet of ${parser.packet.length} bytes is over the limit of ${limit}`));
    return left;
  };
}
