// The sentiment container (with its billing endpoint) and, as the baseline, a bare node:http server
// answering the same v2 request with VADER scores.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBilling } from '../../src/billing/server.ts';
import { BillingStore } from '../../src/billing/store.ts';
import { startSentiment } from '../../src/sentiment/server.ts';
import { announce } from '../common/child.ts';
import { vaderScorer } from './baselines.ts';

const dataDir = await mkdtemp(join(tmpdir(), 'offcloud-bench-sentiment-'));
const { key } = await (await BillingStore.open(dataDir)).createResource({ kind: 'sentiment' });
const quiet = { port: 0, logLevel: 'silent', dataDir } as const;
const billing = await startBilling(quiet);
const ours = await startSentiment({
  ...quiet,
  eula: 'accept',
  billing: billing.facts!.billing!.billingUrl,
  apiKey: key,
  workers: Number(process.env.SENTIMENT_WORKERS ?? 1),
});

const baseline = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const { documents } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { documents: { id: string; text: string }[] };
    const body = JSON.stringify({ documents: documents.map((d) => ({ id: d.id, score: vaderScorer(d.text) })), errors: [] });
    res.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
});
await new Promise<void>((resolve) => baseline.listen(0, '127.0.0.1', resolve));
announce({ ours: ours.urls[0]!.url, baseline: `http://127.0.0.1:${(baseline.address() as AddressInfo).port}/text/analytics/v2.0/sentiment` }, async () => {
  await ours.close();
  await billing.close();
  await new Promise((resolve) => baseline.close(resolve));
  await rm(dataDir, { recursive: true, force: true });
});
