/**
 * Debian's pebble ACME test CA with pebble-challtestsrv as its DNS (every name
 * resolves to 127.0.0.1), started on loopback for one test file.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { debianProgram } from '../helpers/index.ts';

/** A port free for TCP and UDP on 127.0.0.1 right now. */
export async function freePort(): Promise<number> {
  for (;;) {
    const server = createServer();
    const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
    await new Promise((resolve) => server.close(resolve));
    const udp = createSocket('udp4');
    const free = await new Promise<boolean>((resolve) => {
      udp.once('error', () => resolve(false));
      udp.bind(port, '127.0.0.1', () => resolve(true));
    });
    await new Promise<void>((resolve) => udp.close(() => resolve()));
    if (free) return port;
  }
}

/** Starts a program and resolves once a line of its output matches `ready`. */
async function startUntil(command: string, args: string[], env: NodeJS.ProcessEnv, ready: RegExp): Promise<ChildProcess> {
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let seen = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${command} did not get ready: ${seen.slice(-500)}`)), 20_000);
    const look = (chunk: Buffer) => {
      seen += chunk.toString();
      if (ready.test(seen)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', look);
    child.stderr!.on('data', look);
    child.once('exit', (code) => reject(new Error(`${command} exited with ${code}: ${seen.slice(-500)}`)));
  });
  return child;
}

export interface Pebble {
  directoryUrl: string;
  /** The CA file that signs pebble's own HTTPS (the directory), for --acme-ca-file. */
  wfeCaFile: string;
  /** PEM of the root that issued the certificates pebble hands out. */
  root(): Promise<string>;
  close(): void;
}

/** @param httpPort the port pebble's VA connects to for HTTP-01 (our server's HTTP port). */
export async function startPebble(dir: string, httpPort: number): Promise<Pebble> {
  const pebble = debianProgram('pebble', '/usr/bin/pebble');
  const challtestsrv = debianProgram('pebble', '/usr/bin/pebble-challtestsrv');
  const openssl = debianProgram('openssl', '/usr/bin/openssl');
  const wfeCaFile = join(dir, 'wfe.pem');
  const wfeKey = join(dir, 'wfe.key');
  execFileSync(
    openssl,
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      wfeKey,
      '-out',
      wfeCaFile,
      '-days',
      '2',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
  const [dnsPort, dirPort, managementPort, challManagementPort, tlsPort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const config = join(dir, 'pebble.json');
  await writeFile(
    config,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${dirPort}`,
        managementListenAddress: `127.0.0.1:${managementPort}`,
        certificate: wfeCaFile,
        privateKey: wfeKey,
        httpPort,
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );
  const dns = await startUntil(
    challtestsrv,
    [
      '-defaultIPv4',
      '127.0.0.1',
      '-defaultIPv6',
      '',
      '-dns01',
      `127.0.0.1:${dnsPort}`,
      '-http01',
      '',
      '-https01',
      '',
      '-tlsalpn01',
      '',
      '-management',
      `127.0.0.1:${challManagementPort}`,
    ],
    {},
    /Starting management server/,
  );
  let ca: ChildProcess;
  try {
    ca = await startUntil(
      pebble,
      ['-config', config, '-dnsserver', `127.0.0.1:${dnsPort}`],
      { PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
      /ACME directory available/,
    );
  } catch (err) {
    dns.kill();
    throw err;
  }
  return {
    directoryUrl: `https://127.0.0.1:${dirPort}/dir`,
    wfeCaFile,
    root: async () => {
      const dispatcher = new Agent({ connect: { ca: await readFile(wfeCaFile, 'utf8') } });
      const answer = await request(`https://127.0.0.1:${managementPort}/roots/0`, { dispatcher });
      const pem = await answer.body.text();
      await dispatcher.close();
      return pem;
    },
    close: () => {
      ca.kill();
      dns.kill();
    },
  };
}
