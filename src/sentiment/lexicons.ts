/**
 * Sentiment for the v2 languages other than English, from the lexicons that
 * nlp.js ships per language (AFINN, SentiCon or Pattern lists, with each
 * language's negation words). No model is trained for these: the score is
 * the lexicon's valence squashed into [0, 1], and a text with no lexicon word
 * scores 0.5, the v2 service's "neutral".
 */
import { createRequire } from 'node:module';

/** The v2 sentiment languages in the order the real service lists them, English first (the trained model). */
export const V2_LANGUAGES = ['en', 'es', 'pt', 'fr', 'de', 'it', 'nl', 'no', 'sv', 'pl', 'da', 'fi', 'ru', 'el', 'tr'] as const;
export const LEXICON_LANGUAGES = V2_LANGUAGES.filter((code) => code !== 'en');
/**
 * The lexicon languages whose accuracy has been measured (docs/sentiment.md "Other languages").
 * The others are answered with the unsupported-language error unless the container's
 * --unmeasured-languages asks for their lexicon scores.
 */
export const MEASURED_LEXICON_LANGUAGES: readonly string[] = ['es', 'pt', 'fr', 'de', 'it'];
export const UNMEASURED_LEXICON_LANGUAGES = LEXICON_LANGUAGES.filter((code) => !MEASURED_LEXICON_LANGUAGES.includes(code));

/** The languages a container scores, in the service's order: English, the measured lexicons, and the others when asked. */
export function servedLanguages(unmeasured: boolean): string[] {
  return V2_LANGUAGES.filter((code) => code === 'en' || unmeasured || MEASURED_LEXICON_LANGUAGES.includes(code));
}

interface LexiconResult {
  sentiment: { score: number; type: string };
}
interface SentimentAnalyzer {
  process(input: { locale: string; text: string }): Promise<LexiconResult>;
}

const require = createRequire(import.meta.url);

/** AFINN valences are whole numbers from -5 to 5 per word; SentiCon and Pattern are already within [-1, 1]. */
const VALENCE_SCALE: Record<string, number> = { afinn: 5 };

export type LexiconScorer = (language: string, text: string) => Promise<number>;

export function createLexiconScorer(): LexiconScorer {
  const { Container } = require('@nlpjs/core') as { Container: new () => { use(plugin: unknown): void } };
  const { SentimentAnalyzer } = require('@nlpjs/sentiment') as { SentimentAnalyzer: new (settings: object) => SentimentAnalyzer };
  const container = new Container();
  for (const code of LEXICON_LANGUAGES) {
    const plugin = require(`@nlpjs/lang-${code}`) as Record<string, unknown>;
    container.use(plugin[`Lang${code[0]!.toUpperCase()}${code.slice(1)}`]);
  }
  const analyzer = new SentimentAnalyzer({ container });
  return async (language, text) => {
    const { sentiment } = (await analyzer.process({ locale: language, text })) ?? { sentiment: { score: 0, type: '' } };
    const valence = sentiment.score / (VALENCE_SCALE[sentiment.type] ?? 1);
    return 1 / (1 + Math.exp(-2 * valence));
  };
}
