/** A scoring thread: loads the English model and the lexicons once, then scores batches sent by the main thread. */
import { parentPort, workerData } from 'node:worker_threads';
import { createLexiconScorer } from './lexicons.ts';
import { loadSentimentModel } from './model.ts';
import { countTextElements } from './text-elements.ts';

export interface ScoreRequest {
  id: number;
  /** Lower-case v2 language code. */
  language: string;
  texts: string[];
  /** Texts longer than this, in text elements, are measured but not scored. */
  maxTextElements: number;
}
export interface ScoreReply {
  id: number;
  characters?: Uint32Array;
  scores?: Float64Array;
  error?: string;
}

const model = await loadSentimentModel((workerData as { modelDir: string }).modelDir);
const lexicon = createLexiconScorer();
const port = parentPort!;

async function measureAndScore(request: ScoreRequest): Promise<{ characters: Uint32Array<ArrayBuffer>; scores: Float64Array<ArrayBuffer> }> {
  const characters = Uint32Array.from(request.texts, (text) => countTextElements(text, request.maxTextElements));
  const scores = new Float64Array(request.texts.length).fill(NaN);
  for (let i = 0; i < scores.length; i++) {
    if (characters[i]! > request.maxTextElements) continue;
    scores[i] = request.language === 'en' ? model.score(request.texts[i]!) : await lexicon(request.language, request.texts[i]!);
  }
  return { characters, scores };
}

port.on('message', (request: ScoreRequest) => {
  measureAndScore(request).then(
    ({ characters, scores }) => port.postMessage({ id: request.id, characters, scores } satisfies ScoreReply, [characters.buffer, scores.buffer]),
    (err: unknown) => port.postMessage({ id: request.id, error: (err as Error).message } satisfies ScoreReply),
  );
});
port.postMessage({ ready: true });
