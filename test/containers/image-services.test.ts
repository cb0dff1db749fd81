/**
 * The offcloud image, run the way the spec's containers are run: the spec's
 * `podman run` lines (container ports 5000/5001, `--memory`/`--cpus`, the
 * `Eula`/`Billing`/`ApiKey` start-up parameters), official clients on the host
 * talking through published ports, and `podman stop` ending each container
 * cleanly. Host ports are free ones, so the suite runs beside anything else.
 * This file: scoring and its front-end, the hub with the device SDK, the script server.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import deviceSdk from 'azure-iot-device';
import mqttTransport from 'azure-iot-device-mqtt';
import { tempDataDir } from '../helpers/index.ts';
import { argmax, honeycombSvg, pictureBody } from '../scoring/fixtures.ts';
import { podman, podmanStatus, printedKeyInLogs } from './podman.ts';
import { containerSuite, stopCleanly } from './suite.ts';

const HONEYCOMB = 599;
const suite = containerSuite();

test('R-SCORE-1 R-SCORE-11 scoring on 5001, and the front-end in a second container forwarding to it over TCP 5001', async () => {
  const scoring = await suite.run('scoring', { publish: [5001], args: ['scoring'], readyPath: '/ready' });
  const body = await pictureBody(honeycombSvg());
  const direct = await fetch(`http://127.0.0.1:${scoring.ports[5001]}/score`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  assert.equal(direct.status, 200);
  assert.equal(argmax(((await direct.json()) as { result: number[] }).result), HONEYCOMB);

  const frontend = await suite.run('frontend', {
    publish: [5080],
    args: ['scoring-frontend', '--services', `imagenet=${scoring.name}:5001`],
    readyPath: '/ready',
  });
  const { key } = await printedKeyInLogs(frontend.name, 'imagenet primary key');
  const forwarded = await fetch(`http://127.0.0.1:${frontend.ports[5080]}/api/v1/service/imagenet/score`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body,
  });
  assert.equal(forwarded.status, 200);
  assert.equal(argmax(((await forwarded.json()) as { result: number[] }).result), HONEYCOMB);

  for (const name of [frontend.name, scoring.name]) await stopCleanly(name);
});

test('R-TWIN-1 R-TWIN-6 R-TWIN-9 the device SDK on the host patches reported properties of the hub in a container, trusting its CA', async (t) => {
  const hub = await suite.run('hub', { publish: [8883], args: ['hub'] });
  const { key } = await printedKeyInLogs(hub.name, 'DeviceId=demo-device;SharedAccessKey=');
  // The CA as a user takes it: `podman cp` out of the /data volume.
  const dir = await tempDataDir(t);
  await podman(['cp', `${hub.name}:/data/ca/ca.crt`, join(dir, 'ca.crt')]);
  const ca = await readFile(join(dir, 'ca.crt'), 'utf8');

  const { Client } = deviceSdk;
  const device = Client.fromConnectionString(`HostName=localhost:${hub.ports[8883]};DeviceId=demo-device;SharedAccessKey=${key}`, mqttTransport.Mqtt);
  await device.setOptions({ ca });
  await device.open();
  try {
    const twin = await device.getTwin();
    await new Promise<void>((resolve, reject) => twin.properties.reported.update({ firmware: '1.2.3' }, (err?: Error) => (err ? reject(err) : resolve())));
    const fresh = await device.getTwin();
    assert.equal((fresh.properties.reported as unknown as { firmware: string }).firmware, '1.2.3');
  } finally {
    await device.close();
  }
  await stopCleanly(hub.name);
});

test('podman stop ends the script server with exit code 0 and no script it started is left', async () => {
  const scripts = await suite.run('scripts', { publish: [8080], args: ['scripts'], readyPath: '/ready' });
  // A script that would outlive the test by far; its argument marks it in the host's process list.
  const marker = String(4000 + (process.pid % 1000));
  await podman([
    'exec',
    scripts.name,
    'sh',
    '-c',
    `mkdir -p /data/scripts/long && printf '#!/bin/sh\\necho started\\nexec sleep ${marker}\\n' > /data/scripts/long/wait.sh && chmod +x /data/scripts/long/wait.sh`,
  ]);
  const curl = spawn('curl', ['-sN', '-X', 'POST', `http://127.0.0.1:${scripts.ports[8080]}/long/wait`]);
  await new Promise<void>((resolve, reject) => {
    curl.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('data: started') && resolve());
    curl.once('exit', (code) => reject(new Error(`curl ended (${code}) before the script started`)));
  });
  const running = () => podmanStatus(['top', scripts.name, 'args']).stdout;
  assert.match(running(), new RegExp(`sleep ${marker}`));
  await stopCleanly(scripts.name);
  curl.kill();
  assert.deepEqual(await hostProcesses(`sleep ${marker}`), []);
});

/** PIDs of host processes whose command line is exactly `command`. */
async function hostProcesses(command: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0').filter(Boolean).join(' ') === command) found.push(Number(entry));
  }
  return found;
}
