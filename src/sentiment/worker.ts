/** A scoring thread: loads the English model and the lexicons once, then scores batches sent by the main thread. */
import { serveTasks } from '../common/worker-pool.ts';
import type { MeasuredTexts } from './analyze.ts';
import { createLexiconScorer } from './lexicons.ts';
import { loadSentimentModel } from './model.ts';
import { mineOpinions } from './opinions.ts';
import { splitSentences } from './sentences.ts';
import { countTextElements } from './text-elements.ts';

export interface ScoreRequest {
  /** Lower-case v2 language code. */
  language: string;
  texts: string[];
  /** Texts longer than this, in text elements, are measured but not scored. */
  maxTextElements: number;
  /** Also split each text into sentences and score each one (the v3 and Language answers). */
  sentences: boolean;
  /** Also mine each sentence's opinions (English only). */
  opinions: boolean;
}

await serveTasks<ScoreRequest, MeasuredTexts>(async (data) => {
  const model = await loadSentimentModel((data as { modelDir: string }).modelDir);
  const lexicon = createLexiconScorer();
  const score = (language: string, text: string) => (language === 'en' ? Promise.resolve(model.score(text)) : lexicon(language, text));
  return async ({ language, texts, maxTextElements, sentences, opinions }) => {
    const characters = Uint32Array.from(texts, (text) => countTextElements(text, maxTextElements));
    const scores = new Float64Array(texts.length).fill(NaN);
    const scoredSentences: MeasuredTexts['sentences'] = sentences ? [] : undefined;
    for (let i = 0; i < scores.length; i++) {
      if (characters[i]! > maxTextElements) {
        scoredSentences?.push([]);
        continue;
      }
      const text = texts[i]!;
      scores[i] = await score(language, text);
      if (!scoredSentences) continue;
      const spans = splitSentences(text, language);
      const mine = opinions && language === 'en';
      scoredSentences.push(
        await Promise.all(
          spans.map(async (span) => {
            const sentence = text.slice(span.offset, span.offset + span.length);
            const scored = { ...span, score: await score(language, sentence) };
            return mine ? { ...scored, opinions: await mineOpinions(sentence, (word) => score(language, word)) } : scored;
          }),
        ),
      );
    }
    return scoredSentences ? { characters, scores, sentences: scoredSentences } : { characters, scores };
  };
});
