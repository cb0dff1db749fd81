/**
 * Slow or silent TLS clients on every HTTPS listener: each component
 * whose options have --tls-handshake-timeout is started with TLS on and a
 * small bound, and on each of its HTTPS ports raw TCP connections that never
 * send a ClientHello (or only part of one) must be closed by the server, a
 * connection that sends a FIN before its handshake at once, while a
 * well-behaved TLS client of the same process keeps being served: one request
 * during the flood, and one on a connection that finished its handshake
 * before the flood and stays idle for longer than the bound.
 *
 * A regression shows as connections that stay open: Node's own bound is
 * 120 s, so each test fails at its timeout instead of the runner's.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { Agent, request } from 'undici';
import { components } from '../../src/components.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import { withDefaults, type OptionValues } from '../../src/common/config.ts';
import { tempDataDir, eventWithin } from '../helpers/index.ts';
import { closedByServer, PARTIAL_CLIENT_HELLO, rawConnection } from './harness.ts';

/** Short enough to wait for, long enough for a real client's handshake on a busy machine. */
const HANDSHAKE_BOUND_MS = 2000;
const SILENT = 20;
const HALF_HELLO = 5;
const FIN_ONLY = 10;

const withTls = components.filter((c) => 'tlsHandshakeTimeout' in c.options);

test('every component that serves TLS has the shared --tls-handshake-timeout option, default 10 s', () => {
  assert.deepEqual(withTls.map((c) => c.name).sort(), ['face', 'gateway', 'hub', 'identity', 'scoring-frontend', 'scripts', 'sentiment', 'storage']);
  for (const component of withTls) assert.equal(component.options.tlsHandshakeTimeout!.default, 10_000, component.name);
});

/** The component on free ports, TLS on where it is optional, with the small bound. */
async function startWithBound(name: string, dataDir: string): Promise<RunningComponent> {
  const component = withTls.find((c) => c.name === name)!;
  const given: Record<string, unknown> = { dataDir, logLevel: 'silent', host: '127.0.0.1', tlsHandshakeTimeout: HANDSHAKE_BOUND_MS };
  for (const [key, spec] of Object.entries(component.options)) {
    if (spec.type === 'integer' && /^(port|.*Port)$/.test(key)) given[key] = 0;
  }
  if ('tls' in component.options) given.tls = true;
  // The cognitive containers start with their container parameters; billing need not answer for /health.
  if ('eula' in component.options) Object.assign(given, { eula: 'accept', billing: 'http://127.0.0.1:9', apiKey: 'resilience', env: {} });
  return component.start(withDefaults(component.options, given as Partial<OptionValues<typeof component.options>>));
}

/** GET /health over a TLS connection opened (and handshaken) now, sent later with `send()`. */
async function keptConnection(origin: URL, ca: string): Promise<{ send(): Promise<string> }> {
  const socket: TLSSocket = tlsConnect({ host: '127.0.0.1', port: Number(origin.port), ca, servername: 'localhost' });
  await eventWithin(socket, 'secureConnect', 'the TLS handshake of the well-behaved client');
  after(() => socket.destroy());
  return {
    async send() {
      socket.write(`GET /health HTTP/1.1\r\nHost: ${origin.host}\r\n\r\n`);
      const [chunk] = await eventWithin<[Buffer]>(socket, 'data', 'the answer to the well-behaved client');
      return chunk.toString('latin1').split('\r\n')[0]!;
    },
  };
}

for (const { name } of withTls) {
  test(
    `resilience: ${name}: connections that never finish the TLS handshake are closed after --tls-handshake-timeout, a FIN before it at once; TLS clients keep being served`,
    { timeout: 60_000 },
    async () => {
      const dataDir = await tempDataDir({ after });
      const running = await startWithBound(name, dataDir);
      after(() => running.close());
      const ca = await readFile(running.caCertPath ?? join(dataDir, 'ca', 'ca.crt'), 'utf8');
      const agent = new Agent({ connect: { ca } });
      after(() => agent.close());
      const origins = [
        ...new Set(
          running.urls
            .map((u) => u.url)
            .filter((u) => u.startsWith('https:'))
            .map((u) => new URL(u).origin),
        ),
      ].map((o) => new URL(o));
      assert.ok(origins.length > 0, `${name} lists an HTTPS URL: ${running.urls.map((u) => u.url).join(' ')}`);
      for (const origin of origins) {
        const wellBehaved = async () => {
          const answer = await request(`${origin.origin}/health`, { dispatcher: agent });
          await answer.body.dump();
          assert.ok(answer.statusCode < 500, `${name} ${origin.origin}/health answered ${answer.statusCode} during the flood`);
        };
        const kept = await keptConnection(origin, ca);
        const silent = await Promise.all(Array.from({ length: SILENT }, () => rawConnection(origin)));
        const halfHello = await Promise.all(Array.from({ length: HALF_HELLO }, () => rawConnection(origin)));
        for (const socket of halfHello) socket.write(PARTIAL_CLIENT_HELLO);
        const finOnly = await Promise.all(Array.from({ length: FIN_ONLY }, () => rawConnection(origin)));
        for (const socket of finOnly) socket.end();
        await Promise.all([wellBehaved(), ...finOnly.map(closedByServer)]);
        // Closed for their FIN, not by the bound: the silent ones, opened earlier, are all still open.
        assert.equal(silent.filter((s) => s.closed).length, 0, `${name} ${origin.origin}: silent connections closed as early as FIN ones`);
        await Promise.all([...silent, ...halfHello].map(closedByServer));
        await wellBehaved();
        assert.match(await kept.send(), /^HTTP\/1\.1 [1-4]\d\d /, `${name} ${origin.origin}: a connection handshaken before the flood`);
      }
    },
  );
}
