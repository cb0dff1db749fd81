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

const NEGATIONS = new Set([
  'not',
  "n't",
  'no',
  'never',
  'nothing',
  'nobody',
  'none',
  'neither',
  'nor',
  'nowhere',
  'cannot',
  'without',
  'hardly',
  'barely',
  'lacks',
  'lack',
]);
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

const FNV_OFFSET = 0x811c9dc5;

/** 32-bit FNV-1a over UTF-16 code units, continuing from `hash` (so a prefix is hashed once). */
function fnv1a(text: string, hash = FNV_OFFSET): number {
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

const CHAR_PREFIX = fnv1a('c:');

/**
 * The distinct buckets a text touches, sorted. Each feature is the FNV-1a hash of a prefix
 * ("w2:", "c:", "a1:") followed by its text; hashes are extended one unit at a time instead of
 * building every n-gram string, which is where scoring spends its time.
 */
export function featureIndices(text: string, config: FeatureConfig): Uint32Array {
  const tokens = tokenize(text);
  const words = config.negation ? markNegation(tokens) : tokens;
  const mask = (1 << config.hashBits) - 1;
  const seen: number[] = [];
  for (let n = 1; n <= config.wordNgrams; n++) {
    const prefix = fnv1a(`w${n}:`);
    for (let i = 0; i + n <= words.length; i++) {
      let hash = fnv1a(words[i]!, prefix);
      for (let k = 1; k < n; k++) hash = fnv1a(words[i + k]!, fnv1a(' ', hash));
      seen.push(hash & mask);
    }
  }
  if (config.contrast) {
    let last = -1;
    words.forEach((word, i) => {
      if (CONTRAST.has(word)) last = i;
    });
    const prefix = fnv1a('a1:');
    for (let i = last + 1; last >= 0 && i < words.length; i++) seen.push(fnv1a(words[i]!, prefix) & mask);
  }
  const [minChars, maxChars] = config.charNgrams;
  if (minChars > 0) {
    for (const token of tokens) {
      const marked = `<${token}>`;
      for (let start = 0; start + minChars <= marked.length; start++) {
        let hash = CHAR_PREFIX;
        for (let end = start; end < marked.length && end - start < maxChars; end++) {
          hash = Math.imul(hash ^ marked.charCodeAt(end), 0x01000193);
          if (end - start + 1 >= minChars) seen.push((hash >>> 0) & mask);
        }
      }
    }
  }
  return distinctSorted(Uint32Array.from(seen).sort());
}

/** Drops repeats from a sorted array, in place; returns the distinct prefix. */
function distinctSorted(sorted: Uint32Array): Uint32Array {
  let length = 0;
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[i - 1]) sorted[length++] = sorted[i]!;
  return sorted.subarray(0, length);
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
