/** A scoring thread: loads the model once, then scores batches of texts sent by the main thread. */
import { parentPort, workerData } from 'node:worker_threads';
import { loadSentimentModel } from './model.ts';

export interface ScoreRequest {
  id: number;
  texts: string[];
}
export interface ScoreReply {
  id: number;
  scores?: Float64Array;
  error?: string;
}

const model = await loadSentimentModel((workerData as { modelDir: string }).modelDir);
const port = parentPort!;
port.on('message', (request: ScoreRequest) => {
  try {
    const scores = Float64Array.from(request.texts, (text) => model.score(text));
    port.postMessage({ id: request.id, scores } satisfies ScoreReply, [scores.buffer]);
  } catch (err) {
    port.postMessage({ id: request.id, error: (err as Error).message } satisfies ScoreReply);
  }
});
port.postMessage({ ready: true });
