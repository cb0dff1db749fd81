/**
 * `npm run bench -- sentiment`: accuracy of the trained model and of the npm
 * lexicon analysers on the model's own validation split (all lines, and lines
 * of 10 tokens or more), then each model version's accuracy on the long held-out
 * lines beside its documents/s (in process, and through v3.1 with
 * `model-version`), per language, then documents/s through POST /sentiment with
 * 100-document batches against a bare node:http server scoring with VADER.
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { loadFusedModel } from '../../src/sentiment/fused.ts';
import { MEASURED_LEXICON_LANGUAGES, UNMEASURED_LEXICON_LANGUAGES } from '../../src/sentiment/lexicons.ts';
import { ENCODER_MODEL_DIR, ENCODER_VERSION, MODEL_VERSIONS, NGRAM_VERSION, type ModelVersion } from '../../src/sentiment/versions.ts';
import { loadSentimentModel, type SentimentModel } from '../../src/sentiment/model.ts';
import { DEFAULT_MODEL_DIR } from '../../src/sentiment/server.ts';
import { existsSync } from 'node:fs';
import { accuracy as accuracyOf, readSst2, trainingDataPath, splitBySentence, type Accuracy, type Example } from '../../src/sentiment/train.ts';
import { formatTable } from '../../src/common/table.ts';
import { startChildServers } from '../common/child.ts';
import { alternate, median, requestsPerSecond } from '../common/load.ts';
import { sized } from '../common/quick.ts';
import { result, type BenchResult } from '../common/result.ts';
import { afinnScorer, vaderScorer, type Scorer } from './baselines.ts';

const BATCH = 100;
/** The versions measured: a quick run (inside npm run check) leaves out the encoder version, whose load alone takes a minute on a busy machine. */
const MEASURED_VERSIONS: readonly ModelVersion[] = sized<readonly ModelVersion[]>(MODEL_VERSIONS, [NGRAM_VERSION]);
/** v3.1's limit per request. */
const V3_BATCH = 10;
const ROUNDS = sized(3, 1);
const SECONDS = sized(3, 1);
/** Documents for the load when the SST-2 data is not there (a checkout without the shared data). */
const STAND_IN = [
  'The film drags in its second half, and not even the fine cast can save the muddled ending.',
  'A warm, funny and beautifully acted story that stays with you long after the credits roll.',
  'The service was slow, the food arrived cold, and nobody seemed to care about fixing either.',
  'I expected little from this phone, but the battery lasts two days and the camera is superb.',
];

function documentsPerSecond(scorer: Scorer, examples: Example[]): number {
  const started = performance.now();
  for (const e of examples) scorer(e.text);
  return examples.length / ((performance.now() - started) / 1000);
}

/** Accuracy of our model and of the two lexicon analysers on the validation split, as a table and as figures. */
function accuracyFigures(model: SentimentModel, validation: Example[]): BenchResult[] {
  const scorers: [string, Scorer][] = [
    ['offcloud model (trained here)', model.score],
    ['vader-sentiment', vaderScorer],
    ['sentiment (AFINN-165)', afinnScorer],
  ];
  const measured = new Map<string, Accuracy & { inProcessDocsPerSecond: number }>();
  for (const [name, scorer] of scorers)
    measured.set(name, { ...accuracyOf(validation, scorer), inProcessDocsPerSecond: documentsPerSecond(scorer, validation) });
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
  ];
}

const loadAverage = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(', ');

/** Accuracy and in-process documents/s of each model version on the same long held-out lines. */
async function versionFigures(model: SentimentModel, validation: Example[]) {
  const lines = validation.filter((e) => e.tokens >= 10);
  const figures = new Map<ModelVersion, { accuracy: Accuracy; docsPerSecond: number }>();
  for (const version of MEASURED_VERSIONS) {
    const fused = version === ENCODER_VERSION ? await loadFusedModel(ENCODER_MODEL_DIR, model) : null;
    const started = performance.now();
    const scores = fused ? await fused.scoreAll(lines.map((e) => e.text)) : lines.map((e) => model.score(e.text));
    const docsPerSecond = lines.length / ((performance.now() - started) / 1000);
    const byText = new Map(lines.map((e, i) => [e.text, scores[i]!]));
    figures.set(version, { accuracy: accuracyOf(lines, (text) => byText.get(text)!), docsPerSecond });
  }
  return { lines: lines.length, figures };
}

/** Documents/s through POST v3.1 with `model-version`, 10 long documents a request (their sentences are scored too). */
async function v3DocumentsPerSecond(url: string, texts: string[], version: ModelVersion): Promise<number> {
  const v3 = url.replace('/v2.0/', '/v3.1/') + `?model-version=${version}`;
  const body = JSON.stringify({ documents: texts.slice(0, V3_BATCH).map((text, i) => ({ language: 'en', id: String(i), text })) });
  // One request first: a version that is not the container's default loads at its first request.
  await fetch(v3, { method: 'POST', body, headers: { 'content-type': 'application/json' } }).then((response) => response.text());
  const round = await requestsPerSecond({
    url: v3,
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json' },
    connections: 2,
    seconds: SECONDS * 2,
  });
  return round.rps * V3_BATCH;
}

export async function run(): Promise<BenchResult[]> {
  console.log(`load average at start (uptime): ${loadAverage()}`);
  const model = await loadSentimentModel(DEFAULT_MODEL_DIR);
  const dataPath = trainingDataPath();
  let accuracy: BenchResult[] = [];
  let versions: Awaited<ReturnType<typeof versionFigures>> | null = null;
  let texts: string[];
  if (existsSync(dataPath)) {
    const { examples } = readSst2(dataPath);
    const { validation } = splitBySentence(examples, model.card.training.validationShare, model.card.training.seed);
    accuracy = accuracyFigures(model, validation);
    versions = await versionFigures(model, validation);
    texts = validation
      .filter((e) => e.tokens >= 10)
      .slice(0, BATCH)
      .map((e) => e.text);
  } else {
    console.log(`no SST-2 data at ${dataPath} (or $SST2_TRAIN): accuracy left out, the batches repeat the sentences written in this bench`);
    texts = Array.from({ length: BATCH }, (_, i) => STAND_IN[i % STAND_IN.length]!);
  }
  const body = JSON.stringify({ documents: texts.map((text, i) => ({ language: 'en', id: String(i), text })) });
  const servers = await startChildServers<{ ours: string; baseline: string }>(new URL('./servers.ts', import.meta.url));
  let rounds: Awaited<ReturnType<typeof alternate<{ rps: number; errors: number; p99ms: number }>>>;
  const httpByVersion = new Map<ModelVersion, number>();
  try {
    const load = (url: string) => () =>
      requestsPerSecond({ url, method: 'POST', body, headers: { 'content-type': 'application/json' }, connections: 4, seconds: SECONDS });
    rounds = await alternate(ROUNDS, load(servers.info.ours), load(servers.info.baseline));
    for (const version of MEASURED_VERSIONS) httpByVersion.set(version, await v3DocumentsPerSecond(servers.info.ours, texts, version));
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

  const pct = (x: number) => `${(100 * x).toFixed(2)} %`;
  console.log(
    versions
      ? `model versions on the same ${versions.lines} held-out validation lines of 10+ tokens (load average ${loadAverage()}):`
      : `model versions (no SST-2 data: accuracy not measured; load average ${loadAverage()}):`,
  );
  console.log(
    formatTable(
      ['model version', 'language', 'accuracy (≥ 10 tokens)', 'docs/s in process', 'docs/s via v3.1 (10-document requests)'],
      [
        ...MODEL_VERSIONS.map((version) => {
          const figure = versions?.figures.get(version);
          if (!httpByVersion.has(version)) return [version, 'en', 'not measured in a quick run', '—', '—'];
          return [
            version,
            'en',
            figure ? pct(figure.accuracy.long) : '—',
            figure ? figure.docsPerSecond.toFixed(0) : '—',
            httpByVersion.get(version)!.toFixed(1),
          ];
        }),
        ['(lexicons)', MEASURED_LEXICON_LANGUAGES.join(' '), 'no labelled data here; figures measured elsewhere in docs/sentiment.md', '—', '—'],
        ['(lexicons, --unmeasured-languages)', UNMEASURED_LEXICON_LANGUAGES.join(' '), 'never measured: refused unless the option is given', '—', '—'],
      ],
    ),
  );
  const versionResults = versions?.figures.has(ENCODER_VERSION)
    ? [
        result({
          name: `sentiment accuracy by model version, held-out lines of ≥ 10 tokens (${ENCODER_VERSION} vs ${NGRAM_VERSION})`,
          unit: '%',
          ours: 100 * versions.figures.get(ENCODER_VERSION)!.accuracy.long,
          baseline: `model version ${NGRAM_VERSION}`,
          baselineValue: 100 * versions.figures.get(NGRAM_VERSION)!.accuracy.long,
          better: 'higher',
          details: { lines: versions.lines, docsPerSecondInProcess: Object.fromEntries([...versions.figures].map(([v, f]) => [v, f.docsPerSecond])) },
        }),
      ]
    : [];
  const httpResults = httpByVersion.has(ENCODER_VERSION)
    ? [
        result({
          name: `POST v3.1 documents/s by model version (${ENCODER_VERSION} vs ${NGRAM_VERSION})`,
          unit: 'docs/s',
          ours: httpByVersion.get(ENCODER_VERSION)!,
          baseline: `model version ${NGRAM_VERSION}`,
          baselineValue: httpByVersion.get(NGRAM_VERSION)!,
          better: 'higher',
          details: { documentsPerRequest: V3_BATCH, loadAverage: loadavg() },
        }),
      ]
    : [];
  return [
    ...accuracy,
    ...versionResults,
    ...httpResults,
    result({
      name: 'POST /sentiment documents/s, 100-document batches',
      unit: 'docs/s',
      ours: oursDocs,
      baseline: 'bare node:http + vader-sentiment',
      baselineValue: baseDocs,
      better: 'higher',
      details: { rounds, connections: 4, secondsPerRound: SECONDS },
    }),
  ];
}
