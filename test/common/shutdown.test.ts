import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { Agent, request } from 'undici';
import { createHttpServer, listen } from '../../src/common/http.ts';
import { createLogger } from '../../src/common/log.ts';
import { resolveTls } from '../../src/common/tls.ts';
import { LineWatcher, tempDataDir, eventWithin } from '../helpers/index.ts';

test('shutdown: after SIGTERM the in-flight request completes, new connections are refused, exit code 0', async (t) => {
  const child = spawn(process.execPath, ['--import', 'tsx', new URL('./fixtures/slow-server.ts', import.meta.url).pathname], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => child.kill('SIGKILL'));
  const stdout = new LineWatcher(child.stdout);
  const stderr = new LineWatcher(child.stderr);
  const url = await stdout.waitFor(/^http:\/\//);
  const inFlight = request(`${url}/slow`).then(async (r) => ({ status: r.statusCode, body: await r.body.text() }));
  await stdout.waitFor(/^received$/);
  child.kill('SIGTERM');
  await stderr.waitFor(/draining/);
  await assert.rejects(request(`${url}/health`, { headersTimeout: 2000 }), /ECONNREFUSED|other side closed|ECONNRESET/);
  assert.deepEqual(await inFlight, { status: 200, body: 'finished' });
  const [code] = await eventWithin(child, 'exit', 'the server to exit once its parent is gone', 60_000);
  assert.equal(code, 0);
});

test(
  'shutdown: close() ends connections that never sent a request (a browser preconnect), plain and TLS, or never finished the TLS handshake, and lets a busy one finish',
  { timeout: 20_000 },
  async (t) => {
    const logger = createLogger('silent', 'test');
    for (const tls of [null, await resolveTls({ tlsCert: '', tlsKey: '', dataDir: await tempDataDir(t) })]) {
      const app = createHttpServer({ logger, tls });
      app.get('/slow', async () => {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return 'finished';
      });
      const url = new URL(await listen(app, { host: '127.0.0.1', port: 0, component: 'test' }));
      const connect = () =>
        tls ? tlsConnect({ host: '127.0.0.1', port: Number(url.port), rejectUnauthorized: false }) : netConnect(Number(url.port), '127.0.0.1');
      const silent = connect();
      await eventWithin(silent, tls ? 'secureConnect' : 'connect', 'a silent client to connect');
      // A TCP connection that sends nothing: on the TLS server, a handshake never begun.
      const handshaking = netConnect(Number(url.port), '127.0.0.1');
      await eventWithin(handshaking, 'connect', 'a handshaking client to connect');
      const agent = new Agent({ connect: { rejectUnauthorized: false } });
      t.after(() => agent.close());
      const busy = request(`${url.origin}/slow`, { dispatcher: agent });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const silentClosed = [once(silent, 'close'), once(handshaking, 'close')];
      await app.close();
      await Promise.all(silentClosed);
      const answer = await busy;
      assert.equal(await answer.body.text(), 'finished', url.protocol);
    }
  },
);

test('shutdown: started by npm, the server closes once npm is gone and logs that cause, not a signal it never got', async (t) => {
  const fixture = new URL('./fixtures/slow-server.ts', import.meta.url).pathname;
  // npm stands between the shell and the server: a SIGTERM (here SIGKILL) ends npm and never reaches its child.
  const npm = spawn(
    process.execPath,
    [
      '-e',
      `const c = require('node:child_process').spawn(process.execPath, ['--import', 'tsx', ${JSON.stringify(fixture)}], { stdio: 'inherit' }); console.log('pid ' + c.pid);`,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, npm_command: 'exec' } },
  );
  const stdout = new LineWatcher(npm.stdout);
  const stderr = new LineWatcher(npm.stderr);
  const pid = Number((await stdout.waitFor(/^pid \d+$/)).slice(4));
  t.after(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  });
  await stdout.waitFor(/^http:\/\//);
  npm.kill('SIGKILL');
  const draining = await stderr.waitFor(/draining/);
  assert.match(draining, /"cause":"parent process gone"/);
  assert.doesNotMatch(stderr.text, /SIGHUP/);
});
