/** A scoring thread: loads the English model and the lexicons once, then scores batches sent by the main thread. */
import { parentPort, workerData } from 'node:worker_threads';
import { createLexiconScorer } from './lexicons.ts';
import { loadSentimentModel } from './model.ts';

export interface ScoreRequest {
  id: number;
  /** Lower-case v2 language code. */
  language: string;
  texts: string[];
}
export interface ScoreReply {
  id: number;
  scores?: Float64Array;
  error?: string;
}

const model = await loadSentimentModel((workerData as { modelDir: string }).modelDir);
const lexicon = createLexiconScorer();
const port = parentPort!;

async function score(request: ScoreRequest): Promise<Float64Array<ArrayBuffer>> {
  if (request.language === 'en') return Float64Array.from(request.texts, (text) => model.score(text));
  const scores = new Float64Array(request.texts.length);
  for (let i = 0; i < scores.length; i++) scores[i] = await lexicon(request.language, request.texts[i]!);
  return scores;
}

port.on('message', (request: ScoreRequest) => {
  score(request).then(
    (scores) => port.postMessage({ id: request.id, scores } satisfies ScoreReply, [scores.buffer]),
    (err: unknown) => port.postMessage({ id: request.id, error: (err as Error).message } satisfies ScoreReply),
  );
});
port.postMessage({ ready: true });
