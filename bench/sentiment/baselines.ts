/**
 * The npm lexicon analysers the trained model is measured against, as
 * [0, 1] scorers so one accuracy rule (≥ 0.5 is positive) fits all. A text
 * with no lexicon word scores exactly 0.5 and so counts as positive, the
 * larger class in SST-2.
 */
import vader from 'vader-sentiment';
import Sentiment from 'sentiment';

export type Scorer = (text: string) => number;

/** VADER's compound score is already in [-1, 1]. */
export const vaderScorer: Scorer = (text) => (vader.SentimentIntensityAnalyzer.polarity_scores(text).compound + 1) / 2;

const afinn = new Sentiment();
/** AFINN-165 sum of word valences, squashed to [0, 1]. */
export const afinnScorer: Scorer = (text) => 1 / (1 + Math.exp(-afinn.analyze(text).score));
