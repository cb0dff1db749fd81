/**
 * The offcloud image, run the way the spec's containers are run: the spec's
 * `podman run` lines (container ports 5000/5001, `--memory`/`--cpus`, the
 * `Eula`/`Billing`/`ApiKey` start-up parameters), official clients on the host
 * talking through published ports, and `podman stop` ending each container
 * cleanly. Host ports are free ones, so the suite runs beside anything else.
 * This file: the cognitive containers and the billing endpoint they report to.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TextAnalyticsClient, type TextAnalyticsModels } from '@azure/cognitiveservices-textanalytics';
import { ApiKeyCredentials } from '@azure/ms-rest-js';
import { eventually } from '../hub/helpers.ts';
import { portrait } from '../face/images.ts';
import { podman } from './podman.ts';
import { containerSuite, stopCleanly, throttled } from './suite.ts';

const suite = containerSuite();

async function billingKey(billing: string, kind: 'sentiment' | 'face'): Promise<string> {
  const { stdout } = await podman(['exec', billing, 'offcloud', 'billing', 'resource', 'create', '--kind', kind]);
  return /ApiKey: (\S+)/.exec(stdout)![1]!;
}

/** Usage recorded by a billing container, by meter. */
async function usage(billing: string): Promise<Record<string, number>> {
  const { stdout } = await podman(['exec', billing, 'offcloud', 'billing', 'usage', '--period', 'all', '--format', 'json']);
  const rows = JSON.parse(stdout) as { meter: string; quantity: number }[];
  return Object.fromEntries(rows.map((row) => [row.meter, row.quantity]));
}

function sentimentClient(port: number): TextAnalyticsClient {
  return new TextAnalyticsClient(new ApiKeyCredentials({ inHeader: { 'Ocp-Apim-Subscription-Key': 'any-key' } }), `http://127.0.0.1:${port}`);
}

async function scoreTwoDocuments(port: number): Promise<void> {
  // The client spreads the parsed body onto its response; its typings only say `body: any`.
  const result = (await sentimentClient(port).sentiment({
    multiLanguageBatchInput: {
      documents: [
        { language: 'en', id: 'good', text: 'A wonderful, moving film with brilliant performances.' },
        { language: 'en', id: 'bad', text: 'A dull, lifeless mess. The worst movie of the year.' },
      ],
    },
  })) as unknown as TextAnalyticsModels.SentimentBatchResult;
  assert.deepEqual(result.errors, []);
  const [good, bad] = result.documents!;
  assert.ok(good!.score! > 0.5 && bad!.score! < 0.5, `scores ${good!.score} ${bad!.score}`);
}

test('R-SENT-1 R-SENT-8 R-SENT-9 R-FACE-1 R-FACE-6 the spec commands: sentiment (arguments and -e) and face, usage reaching a billing container', async () => {
  const billing = await suite.run('billing', { publish: [5100], args: ['billing'], readyPath: '/ready' });
  const sentimentKey = await billingKey(billing.name, 'sentiment');
  const faceKey = await billingKey(billing.name, 'face');
  const billingUrl = `http://${billing.name}:5100`;
  // Usage every second instead of every ten minutes, so the report is seen while the test runs.
  const fastMetering = ['-e', 'OFFCLOUD_SENTIMENT_METERING_INTERVAL_MS=1000'];

  const byArguments = await suite.run('sentiment-args', {
    publish: [5000],
    flags: ['--memory', '4g', '--cpus', '1', ...fastMetering],
    args: ['sentiment', 'Eula=accept', `Billing=${billingUrl}`, `ApiKey=${sentimentKey}`],
    readyPath: '/ready',
  });
  await scoreTwoDocuments(byArguments.ports[5000]!);
  const meters = await eventually(
    throttled(async () => {
      const recorded = await usage(billing.name);
      return Object.values(recorded).some((quantity) => quantity >= 2) ? recorded : undefined;
    }),
    30_000,
    'sentiment usage in the billing container',
  );
  assert.ok(
    Object.keys(meters).some((meter) => /TextAnalytics/.test(meter)),
    JSON.stringify(meters),
  );

  const byEnvironment = await suite.run('sentiment-env', {
    publish: [5000],
    flags: ['--memory', '4g', '--cpus', '1', '-e', 'Eula=accept', '-e', `Billing=${billingUrl}`, '-e', `ApiKey=${sentimentKey}`],
    args: ['sentiment'],
    readyPath: '/ready',
  });
  await scoreTwoDocuments(byEnvironment.ports[5000]!);

  const face = await suite.run('face', {
    publish: [5000],
    flags: ['--memory', '6g', '--cpus', '2'],
    args: ['face', 'Eula=accept', `Billing=${billingUrl}`, `ApiKey=${faceKey}`],
    readyPath: '/ready',
  });
  const detected = await fetch(`http://127.0.0.1:${face.ports[5000]}/face/v1.0/detect`, {
    method: 'POST',
    headers: { 'content-type': 'application/octet-stream', 'Ocp-Apim-Subscription-Key': faceKey },
    body: new Uint8Array(await portrait()),
  });
  assert.equal(detected.status, 200);
  const faces = (await detected.json()) as { faceRectangle: { width: number } }[];
  assert.equal(faces.length, 1);
  assert.ok(faces[0]!.faceRectangle.width > 50);

  for (const name of [byArguments.name, byEnvironment.name, face.name, billing.name]) await stopCleanly(name);
});
