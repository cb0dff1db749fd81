/**
 * A scoring thread: loads the English models and the lexicons once, then
 * scores batches sent by the main thread. Every text of a batch (documents and,
 * when asked, their sentences) is scored in one call, so the sentence encoder
 * embeds them in batches. The encoder version loads when the container's
 * default names it, else at its first request.
 */
import { serveTasks } from '../common/worker-pool.ts';
import type { MeasuredTexts, ScoreOptions } from './analyze.ts';
import { loadFusedModel, type FusedModel } from './fused.ts';
import { createLexiconScorer } from './lexicons.ts';
import { loadSentimentModel } from './model.ts';
import { mineOpinions } from './opinions.ts';
import { splitSentences, type SentenceSpan } from './sentences.ts';
import { countTextElements } from './text-elements.ts';
import { ENCODER_VERSION, type ModelVersion } from './versions.ts';

export interface ScoreRequest extends ScoreOptions {
  /** Lower-case v2 language code. */
  language: string;
  texts: string[];
}

export interface ScorerData {
  ngramDir: string;
  encoderDir: string;
  /** The version loaded before the thread says it is ready (the container's default). */
  preload: ModelVersion;
}

await serveTasks<ScoreRequest, MeasuredTexts>(async (data) => {
  const { ngramDir, encoderDir, preload } = data as ScorerData;
  const ngram = await loadSentimentModel(ngramDir);
  const lexicon = createLexiconScorer();
  let fused: Promise<FusedModel> | null = null;
  const fusedModel = () => (fused ??= loadFusedModel(encoderDir, ngram));
  if (preload === ENCODER_VERSION) await fusedModel();

  const scoreAll = async (language: string, version: ModelVersion, texts: string[]): Promise<ArrayLike<number>> => {
    if (language !== 'en') return Promise.all(texts.map((text) => lexicon(language, text)));
    if (version === ENCODER_VERSION) return (await fusedModel()).scoreAll(texts);
    return texts.map((text) => ngram.score(text));
  };

  return async ({ language, texts, maxTextElements, sentences, opinions, modelVersion }) => {
    const characters = Uint32Array.from(texts, (text) => countTextElements(text, maxTextElements));
    const scored = texts.map((_, i) => characters[i]! <= maxTextElements);
    const spans: SentenceSpan[][] = texts.map((text, i) => (sentences && scored[i] ? splitSentences(text, language) : []));
    // Every text to score, documents first, then each document's sentences in order.
    const documentTexts = texts.filter((_, i) => scored[i]);
    const sentenceTexts = spans.flatMap((list, i) => list.map((span) => texts[i]!.slice(span.offset, span.offset + span.length)));
    const all = await scoreAll(language, modelVersion, [...documentTexts, ...sentenceTexts]);

    const scores = new Float64Array(texts.length).fill(NaN);
    let next = 0;
    texts.forEach((_, i) => scored[i] && (scores[i] = all[next++]!));
    if (!sentences) return { characters, scores };
    const mine = opinions && language === 'en';
    const scoredSentences: NonNullable<MeasuredTexts['sentences']> = [];
    for (let i = 0; i < texts.length; i++) {
      scoredSentences.push(
        await Promise.all(
          spans[i]!.map(async (span) => {
            const scoredSpan = { ...span, score: all[next++]! };
            if (!mine) return scoredSpan;
            const sentence = texts[i]!.slice(span.offset, span.offset + span.length);
            // Assessments are words the n-gram model scores clearly polar alone (docs/sentiment.md), whichever version scores the sentence.
            return { ...scoredSpan, opinions: await mineOpinions(sentence, (word) => Promise.resolve(ngram.score(word))) };
          }),
        ),
      );
    }
    return { characters, scores, sentences: scoredSentences };
  };
});
