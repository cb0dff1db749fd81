/**
 * The v3 and Language answers' labels and class confidences, from the same
 * one probability of "positive" (p) that v2 reports as its score: the model
 * is a two-class one, so how far p is from 0.5 (s = |2p − 1|) is the share
 * the polar classes get, split between them as p : 1 − p, and the rest is
 * neutral. The label is the most confident class, so a text is positive from
 * p ≈ 0.78 up, negative from p ≈ 0.22 down, neutral between. Scores are
 * rounded to two decimals, as the service's are.
 */

export type SentimentLabel = 'positive' | 'neutral' | 'negative';
export type DocumentLabel = SentimentLabel | 'mixed';

export interface ConfidenceScores {
  positive: number;
  neutral: number;
  negative: number;
}

const round2 = (x: number) => Math.round(x * 100) / 100;

export function confidenceScores(p: number): ConfidenceScores {
  const strength = Math.abs(2 * p - 1);
  const positive = round2(p * strength);
  const negative = round2((1 - p) * strength);
  return { positive, neutral: round2(1 - positive - negative), negative };
}

export function labelOf(scores: ConfidenceScores): SentimentLabel {
  if (scores.positive > scores.neutral && scores.positive >= scores.negative) return 'positive';
  if (scores.negative > scores.neutral && scores.negative > scores.positive) return 'negative';
  return 'neutral';
}

/**
 * The document's label from its sentences', by the service's documented rule:
 * positive and negative sentences together make it mixed; otherwise any
 * polar sentence decides; all neutral is neutral.
 */
export function documentLabel(sentences: readonly SentimentLabel[]): DocumentLabel {
  const positive = sentences.includes('positive');
  const negative = sentences.includes('negative');
  if (positive && negative) return 'mixed';
  if (positive) return 'positive';
  if (negative) return 'negative';
  return 'neutral';
}
