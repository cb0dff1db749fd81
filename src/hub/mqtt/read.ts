/**
 * Reading a device's connection: each chunk the socket delivers goes straight
 * to the client's MQTT parser ('data', flowing mode). aedes' own loop waits
 * for 'readable' (a process.nextTick away), pulls the stream's buffer with
 * read() and reads again only once every packet of the last read is handled:
 * three steps per QoS 1 message that mosquitto does not pay.
 *
 * The bound on what one client may leave unhandled stays: before CONNACK, as
 * in aedes, the socket is paused while any packet is being handled (CONNECT
 * is authenticated first, and aedes queues what follows it); afterwards, while
 * MAX_UNHANDLED_PACKETS are. A paused socket buffers at most its high-water
 * mark (16 KiB) before the kernel holds the rest. If an aedes upgrade changes
 * how a client reads (the pinned version is tested), taking it over throws at
 * the first connection and every test in test/hub fails.
 */
import type { Client } from 'aedes';
import type { Duplex } from 'node:stream';

/**
 * Packets read but not yet handled, past which reading waits. A device that
 * waits for each PUBACK has one; a QoS 0 burst reads ahead up to this many.
 */
export const MAX_UNHANDLED_PACKETS = 32;

/** The parts of aedes' client (lib/client.js) its read loop is made of. */
interface ReadLoop {
  conn: Duplex;
  closed: boolean;
  connackSent: boolean;
  /** Set while CONNECT is authenticated; resume() calls _nextBatch. */
  _paused?: boolean;
  _parser: { parse(chunk: Buffer): number };
  /** Packets read and not yet handled; each handler calls _nextBatch when done. */
  _parsingBatch: number;
  _nextBatch(err?: Error | null): void;
  emit(event: 'error', err: Error): boolean;
}

export function readFlowing(client: Client): void {
  const loop = client as unknown as ReadLoop;
  const { conn } = loop;
  if (!conn.listeners('readable').includes(loop._nextBatch) || loop._parsingBatch !== 1) {
    throw new Error('aedes no longer reads a connection as this endpoint expects');
  }
  conn.removeListener('readable', loop._nextBatch);
  // aedes starts at 1 for the 'readable' event that opens its loop.
  loop._parsingBatch = 0;
  const limit = () => (loop.connackSent ? MAX_UNHANDLED_PACKETS : 1);
  // What every handler calls when its packet is done (aedes reads the property each time).
  loop._nextBatch = (err) => {
    if (err) {
      loop.emit('error', err);
      return;
    }
    if (loop._paused) return;
    loop._parsingBatch = Math.max(0, loop._parsingBatch - 1);
    if (loop._parsingBatch < limit() && conn.isPaused()) conn.resume();
  };
  conn.on('data', (chunk: Buffer) => {
    if (loop.closed) return;
    loop._parser.parse(chunk);
    if (loop._parsingBatch >= limit()) conn.pause();
  });
}
