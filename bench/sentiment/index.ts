/**
 * `npm run bench -- sentiment`: accuracy of the trained model and of the npm
 * lexicon analysers on the model's own validation split (all lines, and lines
 * of 10 tokens or more), then documents/s through POST /sentiment with
 * 100-document batches against a bare node:http server scoring with VADER.
 */
import { performance } from 'node:perf_hooks';
import { loadSentimentModel } from '../../src/sentiment/model.ts';
import { DEFAULT_MODEL_DIR } from '../../src/sentiment/server.ts';
import { accuracy, DEFAULT_DATA, readSst2, splitBySentence, type Accuracy, type Example } from '../../src/sentiment/train.ts';
import { formatTable } from '../../src/common/table.ts';
import { startChildServers } from '../common/child.ts';
import { alternate, median, requestsPerSecond } from '../common/load.ts';
import { result, type BenchResult } from '../common/result.ts';
import { afinnScorer, vaderScorer, type Scorer } from './baselines.ts';

const BATCH = 100;

function documentsPerSecond(scorer: Scorer, examples: Example[]): number {
  const started = performance.now();
  for (const e of examples) scorer(e.text);
  return examples.length / ((performance.now() - started) / 1000);
}

export async function run(): Promise<BenchResult[]> {
  const model = await loadSentimentModel(DEFAULT_MODEL_DIR);
  const { examples } = readSst2(DEFAULT_DATA);
  const { validation } = splitBySentence(examples, model.card.training.validationShare, model.card.training.seed);
  const scorers: [string, Scorer][] = [
    ['offcloud model (trained here)', model.score],
    ['vader-sentiment', vaderScorer],
    ['sentiment (AFINN-165)', afinnScorer],
  ];
  const measured = new Map<string, Accuracy & { inProcessDocsPerSecond: number }>();
  for (const [name, scorer] of scorers) measured.set(name, { ...accuracy(validation, scorer), inProcessDocsPerSecond: documentsPerSecond(scorer, validation) });
  const ours = measured.get('offcloud model (trained here)')!;
  const pct = (x: number) => `${(100 * x).toFixed(2)} %`;
  console.log(`validation split: ${ours.allCount} lines, ${ours.longCount} of 10 tokens or more`);
  console.log(
    formatTable(
      ['analyser', 'accuracy (all)', 'ratio', 'accuracy (≥ 10 tokens)', 'ratio', 'docs/s in process'],
      [...measured].map(([name, m]) => [
        name,
        pct(m.all),
        (ours.all / m.all).toFixed(2),
        pct(m.long),
        (ours.long / m.long).toFixed(2),
        m.inProcessDocsPerSecond.toFixed(0),
      ]),
    ),
  );

  const long = validation.filter((e) => e.tokens >= 10);
  const body = JSON.stringify({ documents: long.slice(0, BATCH).map((e, i) => ({ language: 'en', id: String(i), text: e.text })) });
  const servers = await startChildServers<{ ours: string; baseline: string }>(new URL('./servers.ts', import.meta.url));
  let rounds: Awaited<ReturnType<typeof alternate<{ rps: number; errors: number; p99ms: number }>>>;
  try {
    const load = (url: string) => () =>
      requestsPerSecond({ url, method: 'POST', body, headers: { 'content-type': 'application/json' }, connections: 4, seconds: 3 });
    rounds = await alternate(3, load(servers.info.ours), load(servers.info.baseline));
  } finally {
    await servers.stop();
  }
  const oursDocs = median(rounds.a.map((r) => r.rps)) * BATCH;
  const baseDocs = median(rounds.b.map((r) => r.rps)) * BATCH;
  console.log(
    formatTable(
      ['server', 'documents/s (100-document batches)'],
      [
        ['offcloud sentiment container', oursDocs.toFixed(0)],
        ['bare node:http + vader-sentiment', baseDocs.toFixed(0)],
        ['ratio', (oursDocs / baseDocs).toFixed(2)],
      ],
    ),
  );

  const vader = measured.get('vader-sentiment')!;
  const afinn = measured.get('sentiment (AFINN-165)')!;
  return [
    result({
      name: 'sentiment accuracy, all validation lines',
      unit: '%',
      ours: 100 * ours.all,
      baseline: 'vader-sentiment',
      baselineValue: 100 * vader.all,
      better: 'higher',
      details: { afinn: 100 * afinn.all, lines: ours.allCount },
    }),
    result({
      name: 'sentiment accuracy, lines of ≥ 10 tokens',
      unit: '%',
      ours: 100 * ours.long,
      baseline: 'vader-sentiment',
      baselineValue: 100 * vader.long,
      better: 'higher',
      details: { afinn: 100 * afinn.long, lines: ours.longCount },
    }),
    result({
      name: 'sentiment accuracy, lines of ≥ 10 tokens (AFINN)',
      unit: '%',
      ours: 100 * ours.long,
      baseline: 'sentiment (AFINN-165)',
      baselineValue: 100 * afinn.long,
      better: 'higher',
    }),
    result({
      name: 'POST /sentiment documents/s, 100-document batches',
      unit: 'docs/s',
      ours: oursDocs,
      baseline: 'bare node:http + vader-sentiment',
      baselineValue: baseDocs,
      better: 'higher',
      details: { rounds, connections: 4, secondsPerRound: 3 },
    }),
  ];
}
