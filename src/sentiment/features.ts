/**
 * Text → hashed feature indices, the same at training and at scoring: SST-style
 * tokens (lower case, clitics and punctuation split off), negation scope
 * marking, word n-grams and character n-grams, each hashed (FNV-1a) into a
 * fixed number of buckets. The trained weights are only meaningful with the
 * exact config they were trained with, so it is stored beside them.
 */

export interface FeatureConfig {
  /** log2 of the number of weight buckets. */
  hashBits: number;
  /** Longest word n-gram (1 = unigrams only). */
  wordNgrams: number;
  /** Character n-gram lengths inside words (with boundary marks); [0, 0] = none. */
  charNgrams: [number, number];
  /** Prefix words after a negation, up to the next punctuation, with "not_". */
  negation: boolean;
  /** Also mark the words after the last "but"/"however"/…: in "X, but Y" the Y part usually decides. */
  contrast?: boolean;
}

const NEGATIONS = new Set(["not", "n't", 'no', 'never', 'nothing', 'nobody', 'none', 'neither', 'nor', 'nowhere', 'cannot', 'without', 'hardly', 'barely', 'lacks', 'lack']);
const SCOPE_END = /^[.,;:!?]$/;
const CONTRAST = new Set(['but', 'however', 'yet', 'though', 'although', 'nevertheless', 'still']);

/** Splits like the Stanford Sentiment Treebank's tokenizer, which the training phrases use. */
export function tokenize(text: string): string[] {
  return text
    .toLowerCase()
    .normalize('NFKC')
    .replace(/[\u2018\u2019\u02bc`]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/(\w)n't\b/g, "$1 n't")
    .replace(/(\w)'(s|re|ve|ll|d|m)\b/g, "$1 '$2")
    .replace(/([.,;:!?"()[\]{}]|\.\.\.|--)/g, ' $1 ')
    .split(/\s+/)
    .filter(Boolean);
}

function markNegation(tokens: string[]): string[] {
  let negated = false;
  return tokens.map((token) => {
    if (SCOPE_END.test(token)) {
      negated = false;
      return token;
    }
    const out = negated ? `not_${token}` : token;
    if (NEGATIONS.has(token)) negated = true;
    return out;
  });
}

/** 32-bit FNV-1a over UTF-16 code units. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The distinct buckets a text touches, sorted. */
export function featureIndices(text: string, config: FeatureConfig): Uint32Array {
  const tokens = tokenize(text);
  const words = config.negation ? markNegation(tokens) : tokens;
  const mask = (1 << config.hashBits) - 1;
  const seen = new Set<number>();
  for (let n = 1; n <= config.wordNgrams; n++) {
    for (let i = 0; i + n <= words.length; i++) seen.add(fnv1a(`w${n}:${words.slice(i, i + n).join(' ')}`) & mask);
  }
  if (config.contrast) {
    let last = -1;
    words.forEach((word, i) => {
      if (CONTRAST.has(word)) last = i;
    });
    for (let i = last + 1; last >= 0 && i < words.length; i++) seen.add(fnv1a(`a1:${words[i]}`) & mask);
  }
  const [minChars, maxChars] = config.charNgrams;
  if (minChars > 0) {
    for (const token of tokens) {
      const marked = `<${token}>`;
      for (let n = minChars; n <= maxChars; n++) {
        for (let i = 0; i + n <= marked.length; i++) seen.add(fnv1a(`c:${marked.slice(i, i + n)}`) & mask);
      }
    }
  }
  return Uint32Array.from(seen).sort();
}

/** The model's raw output for one text: bias plus the weights of its buckets, scaled by 1/sqrt(count). */
export function logit(indices: Uint32Array, weights: Float32Array, bias: number): number {
  if (indices.length === 0) return bias;
  let sum = 0;
  for (const index of indices) sum += weights[index]!;
  return bias + sum / Math.sqrt(indices.length);
}

export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}
