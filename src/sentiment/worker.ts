/** A scoring thread: loads the English model and the lexicons once, then scores batches sent by the main thread. */
import { serveTasks } from '../common/worker-pool.ts';
import type { MeasuredTexts } from './analyze.ts';
import { createLexiconScorer } from './lexicons.ts';
import { loadSentimentModel } from './model.ts';
import { countTextElements } from './text-elements.ts';

export interface ScoreRequest {
  /** Lower-case v2 language code. */
  language: string;
  texts: string[];
  /** Texts longer than this, in text elements, are measured but not scored. */
  maxTextElements: number;
}

await serveTasks<ScoreRequest, MeasuredTexts>(async (data) => {
  const model = await loadSentimentModel((data as { modelDir: string }).modelDir);
  const lexicon = createLexiconScorer();
  return async (request) => {
    const characters = Uint32Array.from(request.texts, (text) => countTextElements(text, request.maxTextElements));
    const scores = new Float64Array(request.texts.length).fill(NaN);
    for (let i = 0; i < scores.length; i++) {
      if (characters[i]! > request.maxTextElements) continue;
      scores[i] = request.language === 'en' ? model.score(request.texts[i]!) : await lexicon(request.language, request.texts[i]!);
    }
    return { characters, scores };
  };
});
