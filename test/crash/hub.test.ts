import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { connectDevice, eventually, spawnHub, type TestHub } from '../hub/helpers.ts';
import { crashRounds, diskFullRound, type Child } from './harness.ts';

const WRITERS = 3;
/** C2D messages a writer queues between two checks, under the hub's 50 pending per device. */
const C2D_PER_ROUND = 40;

interface HubChild extends Child {
  hub: TestHub;
}

interface Twin {
  properties: { desired: { n?: number; $version: number } };
}

test('crash: the hub keeps every acknowledged device, twin patch (and its version) and queued C2D message exactly once over kill -9', async (t) => {
  const devices = { acknowledged: new Set<string>(), started: new Set<string>() };
  /** Per writer: the last desired `n` acknowledged and the last sent (one more while a patch is cut off). */
  const patches = Array.from({ length: WRITERS }, () => ({ acknowledged: 0, sent: 0 }));
  /** Per writer: C2D bodies acknowledged and not yet received, those sent, those received. */
  const c2d = Array.from({ length: WRITERS }, () => ({ pending: new Set<string>(), sent: new Set<string>(), received: new Set<string>(), thisRound: 0 }));
  const keys = new Map<string, string>();
  let previous: TestHub | undefined;

  await crashRounds(t, {
    async start(dataDir): Promise<HubChild> {
      await previous?.close();
      const { child, hub } = await spawnHub({ dataDir, demoDevice: '' });
      previous = hub;
      return { process: child, readyLine: hub.restUrl, hub };
    },
    // The hub clears its folders of temporaries, whatever file they were beside.
    planted: (dataDir) => ['policies.json', 'identities/planted.json', 'c2d/planted.json'].map((name) => join(dataDir, 'hub', name)),
    async load({ hub }, writers) {
      // The devices whose twin and C2D queue the writers use, made once.
      for (let w = 0; w < WRITERS; w++) {
        if (!keys.has(`q-${w}`)) keys.set(`q-${w}`, await hub.createDevice(`q-${w}`));
        c2d[w]!.thisRound = 0;
      }
      await writers.run(WRITERS, async (w, iteration) => {
        const kind = iteration % 3;
        if (kind === 0 || (kind === 2 && c2d[w]!.thisRound >= C2D_PER_ROUND)) {
          const deviceId = `d-${w}-${devices.started.size}`;
          devices.started.add(deviceId);
          const created = await hub.rest('PUT', `/devices/${deviceId}`, {});
          assert.equal(created.status, 200, JSON.stringify(created.body));
          devices.acknowledged.add(deviceId);
        } else if (kind === 1) {
          const n = ++patches[w]!.sent;
          const patched = await hub.rest('PATCH', `/twins/q-${w}`, { properties: { desired: { n } } });
          assert.equal(patched.status, 200, JSON.stringify(patched.body));
          patches[w]!.acknowledged = n;
        } else {
          const body = `${w}:${iteration}:${c2d[w]!.sent.size}`;
          c2d[w]!.sent.add(body);
          c2d[w]!.thisRound++;
          const queued = await hub.rest('POST', `/devices/q-${w}/messages/devicebound`, { body });
          assert.equal(queued.status, 201, JSON.stringify(queued.body));
          c2d[w]!.pending.add(body);
        }
      });
    },
    async check({ hub }, round) {
      const listed = ((await hub.rest('GET', '/devices')).body as { deviceId: string }[]).map((d) => d.deviceId);
      for (const id of devices.acknowledged) assert.ok(listed.includes(id), `round ${round}: acknowledged device ${id} is there`);
      for (const id of listed) assert.ok(devices.started.has(id) || keys.has(id), `round ${round}: only devices that were made (${id})`);
      for (let w = 0; w < WRITERS; w++) {
        const twin = (await hub.rest('GET', `/twins/q-${w}`)).body as Twin;
        const { n = 0, $version } = twin.properties.desired;
        const { acknowledged, sent } = patches[w]!;
        assert.ok(n === acknowledged || n === sent, `round ${round}: twin q-${w} desired n=${n}, acknowledged ${acknowledged}, sent ${sent}`);
        // Created at version 1, one more per patch applied: each applied exactly once.
        assert.equal($version, n + 1, `round ${round}: twin q-${w} desired version`);
        patches[w]!.acknowledged = n;
        patches[w]!.sent = n;
        await drainC2d(hub, w, round);
      }
    },
  });

  /** Receives q-w's queued messages until every acknowledged one has come, each once; completing them empties the queue. */
  async function drainC2d(hub: TestHub, w: number, round: number): Promise<void> {
    const queue = c2d[w]!;
    const duplicates: string[] = [];
    const device = await connectDevice(hub, `q-${w}`, keys.get(`q-${w}`)!);
    device.on('message', (_topic, payload: Buffer) => {
      const body = payload.toString();
      if (queue.received.has(body)) duplicates.push(body);
      assert.ok(queue.sent.has(body), `round ${round}: q-${w} got ${body}, which was never sent`);
      queue.received.add(body);
      queue.pending.delete(body);
    });
    await device.subscribeAsync(`devices/q-${w}/messages/devicebound/#`, { qos: 1 });
    await eventually(async () => queue.pending.size === 0 || undefined, 30_000, `round ${round}: q-${w} to receive ${[...queue.pending].join(' ')}`);
    await device.endAsync();
    assert.deepEqual(duplicates, [], `round ${round}: q-${w} C2D messages delivered once`);
  }
});

test('disk full: the hub refuses device creations and twin patches with 503 ServiceUnavailable while its disk is full, keeps none of them, and keeps every acknowledged one over restarts', async (t) => {
  const devices = { acknowledged: new Set<string>(), refused: new Set<string>() };
  const patches = Array.from({ length: WRITERS }, () => ({ acknowledged: 0, refused: new Set<number>() }));
  let next = 0;
  let previous: TestHub | undefined;
  const refusal = (answer: { status: number; body: unknown }) =>
    answer.status === 503 && /^ErrorCode:ServiceUnavailable;/.test((answer.body as { Message?: string }).Message ?? '');

  await diskFullRound(t, {
    async start(dataDir): Promise<HubChild> {
      await previous?.close();
      const { child, hub } = await spawnHub({ dataDir, demoDevice: '' });
      previous = hub;
      return { process: child, readyLine: hub.restUrl, hub };
    },
    async load({ hub }, writers) {
      for (let w = 0; w < WRITERS; w++) if (!(await hub.rest('GET', `/devices/p-${w}`)).status.toString().startsWith('2')) await hub.createDevice(`p-${w}`);
      await writers.run(WRITERS, async (w, iteration) => {
        if (iteration % 2 === 0) {
          const deviceId = `full-${next++}`;
          const created = await hub.rest('PUT', `/devices/${deviceId}`, {});
          if (refusal(created)) {
            devices.refused.add(deviceId);
            return writers.refused();
          }
          assert.equal(created.status, 200, JSON.stringify(created.body));
          devices.acknowledged.add(deviceId);
          return;
        }
        const n = ++next;
        const patched = await hub.rest('PATCH', `/twins/p-${w}`, { properties: { desired: { n } } });
        if (refusal(patched)) {
          patches[w]!.refused.add(n);
          return writers.refused();
        }
        assert.equal(patched.status, 200, JSON.stringify(patched.body));
        patches[w]!.acknowledged = n;
      });
    },
    async check({ hub }, stage) {
      const listed = ((await hub.rest('GET', '/devices')).body as { deviceId: string }[]).map((d) => d.deviceId);
      for (const id of devices.acknowledged) assert.ok(listed.includes(id), `${stage}: acknowledged device ${id} is there`);
      for (const id of devices.refused) assert.ok(!listed.includes(id), `${stage}: refused device ${id} is not there`);
      for (let w = 0; w < WRITERS; w++) {
        const twin = (await hub.rest('GET', `/twins/p-${w}`)).body as Twin;
        assert.equal(twin.properties.desired.n ?? 0, patches[w]!.acknowledged, `${stage}: twin p-${w} has its last acknowledged patch`);
      }
    },
  });
  await previous?.close();
});
