/**
 * The hub's close() ends connections that never got as far as a device:
 * a TCP connection that sends nothing, one that stops inside its ClientHello,
 * one that finished the TLS handshake but sends no CONNECT, and a silent one
 * on the REST port. Without that, close() waits for the TLS handshake timeout
 * or the broker's CONNECT timeout (--connect-timeout-ms, 10 s each; Node's
 * 120 s on the REST port), or for the client to leave.
 */
import { test } from 'node:test';
import { once } from 'node:events';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { startTestHub, type TestHub } from './helpers.ts';
import { eventWithin } from '../helpers/index.ts';

/** The first bytes of a TLS 1.2 ClientHello record announcing 200 bytes, then nothing. */
const PARTIAL_CLIENT_HELLO = Buffer.from([0x16, 0x03, 0x01, 0x00, 0xc8, 0x01, 0x00, 0x00, 0xc4, 0x03, 0x03, 0x5a, 0x5a]);

const silentClients: Record<string, (hub: TestHub) => Promise<Socket>> = {
  'MQTT port, TCP connected, nothing sent': async (hub) => {
    const socket = netConnect(hub.mqttPort, '127.0.0.1');
    await eventWithin(socket, 'connect', 'a TCP connection to the hub');
    return socket;
  },
  'MQTT port, half a ClientHello sent': async (hub) => {
    const socket = netConnect(hub.mqttPort, '127.0.0.1');
    await eventWithin(socket, 'connect', 'a TCP connection to the hub');
    socket.write(PARTIAL_CLIENT_HELLO);
    return socket;
  },
  'MQTT port, TLS handshake done, no CONNECT': async (hub) => {
    const socket = tlsConnect({ host: '127.0.0.1', port: hub.mqttPort, ca: hub.ca, servername: 'localhost' });
    await eventWithin(socket, 'secureConnect', 'a TLS connection to the hub');
    return socket;
  },
  'REST port, TCP connected, nothing sent': async (hub) => {
    const socket = netConnect(Number(new URL(hub.restUrl).port), '127.0.0.1');
    await eventWithin(socket, 'connect', 'a TCP connection to the hub');
    return socket;
  },
};

function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

for (const [name, connectSilently] of Object.entries(silentClients)) {
  test(`hub close() ends a connection that never became a device: ${name}`, async (t) => {
    const hub = await startTestHub(t);
    const socket = await connectSilently(hub);
    socket.on('error', () => undefined);
    const closedByServer = once(socket, 'close');
    // The server has accepted it (and read what was sent) before the hub closes.
    await new Promise((resolve) => setTimeout(resolve, 100));
    try {
      await within(5000, 'close()', hub.close());
      await within(2000, "the client socket's close event", closedByServer);
    } finally {
      // Only does something when the hub left the socket open: then close() can finish and the test fail.
      socket.destroy();
    }
  });
}
