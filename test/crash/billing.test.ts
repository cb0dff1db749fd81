import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { BillingStore } from '../../src/billing/store.ts';
import { CONTAINER_KINDS } from '../../src/cognitive/protocol.ts';
import { crashRounds, diskFullRound, runOffcloud, startChild, type Child } from './harness.ts';

const WRITERS = 4;
/** A usage report as a sentiment container sends it, less its id. */
const REPORT = {
  containerType: 'sentiment',
  containerId: 'crash',
  containerVersion: '1',
  periodStart: '2026-01-01T00:00:00Z',
  periodEnd: '2026-01-01T00:10:00Z',
  meters: [{ name: CONTAINER_KINDS.sentiment.billedMeter, quantity: 1 }],
};

interface BillingChild extends Child {
  url: string;
}

async function startBillingChild(dataDir: string): Promise<BillingChild> {
  const child = await startChild(['billing', '--data-dir', dataDir, '--port', '0'], /http:\/\/127\.0\.0\.1:\d+/);
  return { ...child, url: /http:\/\/127\.0\.0\.1:\d+/.exec(child.readyLine)![0] };
}

test('crash: billing keeps every acknowledged usage report exactly once over kill -9, retries included (R-SENT-9)', async (t) => {
  let key = '';
  const acknowledged = new Set<string>();
  const sent = new Set<string>();

  await crashRounds(t, {
    async start(dataDir) {
      key ||= /ApiKey: ([0-9a-f]{32})/.exec(await runOffcloud(['billing', 'resource', 'create', '--kind', 'sentiment', '--data-dir', dataDir]))![1]!;
      return startBillingChild(dataDir);
    },
    async load({ url }, writers) {
      await writers.run(WRITERS, async (_writer, iteration) => {
        const reportId = randomUUID();
        sent.add(reportId);
        const report = { ...REPORT, reportId };
        // Every other report is sent twice, as a container retries a batch whose answer it lost.
        for (let i = 0; i < 1 + (iteration % 2); i++) {
          const answer = await request(`${url}/billing/v1/usage`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'ocp-apim-subscription-key': key },
            body: JSON.stringify(report),
          });
          await answer.body.dump();
          assert.equal(answer.statusCode, 200);
        }
        acknowledged.add(reportId);
      });
    },
    async check(_server, round, dataDir) {
      const records = (await BillingStore.open(dataDir)).usageRecords;
      const ids = records.map((r) => r.reportId);
      assert.equal(new Set(ids).size, ids.length, `round ${round}: each report recorded once`);
      for (const id of acknowledged) assert.ok(ids.includes(id), `round ${round}: acknowledged report ${id} is recorded`);
      for (const id of ids) assert.ok(sent.has(id), `round ${round}: only reports that were sent`);
    },
  });
});

test('disk full: billing refuses usage reports with 503 while its disk is full, records none of them, records again once space returns, and keeps every acknowledged one over restarts (R-SENT-9)', async (t) => {
  let key = '';
  const acknowledged = new Set<string>();
  const refused = new Set<string>();

  await diskFullRound(t, {
    async start(dataDir) {
      key ||= /ApiKey: ([0-9a-f]{32})/.exec(await runOffcloud(['billing', 'resource', 'create', '--kind', 'sentiment', '--data-dir', dataDir]))![1]!;
      return startBillingChild(dataDir);
    },
    async load({ url }, writers) {
      await writers.run(WRITERS, async () => {
        const reportId = randomUUID();
        const answer = await request(`${url}/billing/v1/usage`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'ocp-apim-subscription-key': key },
          body: JSON.stringify({ ...REPORT, reportId }),
        });
        const body = (await answer.body.json()) as { error?: { code: string } } | null;
        if (answer.statusCode === 503 && body?.error?.code === 'ServiceUnavailable') {
          refused.add(reportId);
          writers.refused();
          return;
        }
        assert.equal(answer.statusCode, 200, JSON.stringify(body));
        acknowledged.add(reportId);
      });
    },
    async check(_server, stage, dataDir) {
      const ids = (await BillingStore.open(dataDir)).usageRecords.map((r) => r.reportId);
      assert.equal(new Set(ids).size, ids.length, `${stage}: each report recorded once`);
      for (const id of acknowledged) assert.ok(ids.includes(id), `${stage}: acknowledged report ${id} is recorded`);
      for (const id of ids) assert.ok(!refused.has(id), `${stage}: refused report ${id} is not recorded`);
    },
  });
});
