/**
 * A SentencePiece unigram tokenizer, written from the algorithm's description
 * (Kudo 2018; the SentencePiece paper): the text is normalised (NFKC, runs of
 * white space made one, trimmed), each space becomes "▁" and one "▁" starts the
 * text; then, of every way to cut it into pieces of the vocabulary, the one
 * whose pieces' log-probabilities add up to the most is chosen (Viterbi over
 * the lattice of pieces that match at each position). A character that no
 * piece covers becomes the unknown piece (id 0), and a run of them one unknown,
 * with the usual penalty of 10 below the least likely piece.
 */

/** `[piece, log-probability]` by id, as the encoder package's vocab.json lists them. */
export type Vocabulary = readonly (readonly [string, number | null])[];

interface TrieNode {
  next: Map<string, TrieNode>;
  /** The piece that ends here, if any. */
  id: number;
  score: number;
}

/** Ids below this are control symbols (`<s>`, `</s>`, …), never matched in text. */
const RESERVED = 6;
export const UNKNOWN_ID = 0;
const UNKNOWN_PENALTY = 10;
const WORD_START = '▁';

export class SentencePieceTokenizer {
  private readonly root: TrieNode = { next: new Map(), id: -1, score: 0 };
  private readonly unknownScore: number;

  constructor(vocabulary: Vocabulary) {
    const valid = (score: number | null): score is number => typeof score === 'number' && score < 0;
    let least = 0;
    for (const [, score] of vocabulary) if (valid(score)) least = Math.min(least, score);
    // A few entries of the package's vocab.json lost their score (null) or carry a positive one
    // (":30" → 30); they are taken as the least likely piece, so they are used only where nothing else fits.
    vocabulary.forEach(([piece, score], id) => {
      if (id >= RESERVED) this.insert(piece, id, valid(score) ? score : least);
    });
    this.unknownScore = least - UNKNOWN_PENALTY;
  }

  private insert(piece: string, id: number, score: number): void {
    let node = this.root;
    for (const char of piece) {
      let child = node.next.get(char);
      if (!child) node.next.set(char, (child = { next: new Map(), id: -1, score: 0 }));
      node = child;
    }
    node.id = id;
    node.score = score;
  }

  /** The piece ids of `text`, in order. */
  encode(text: string): number[] {
    const normalized = text.normalize('NFKC').replace(/\s+/gu, ' ').trim();
    if (!normalized) return [];
    const chars = Array.from(WORD_START + normalized.replaceAll(' ', WORD_START));
    const n = chars.length;
    // best[i]: the highest total score of a cut of chars[0..i); from[i], piece[i]: where its last piece starts, and its id.
    const best = new Float64Array(n + 1).fill(-Infinity);
    const from = new Int32Array(n + 1);
    const piece = new Int32Array(n + 1);
    best[0] = 0;
    for (let start = 0; start < n; start++) {
      const base = best[start]!;
      if (base === -Infinity) continue;
      let node: TrieNode | undefined = this.root;
      let coveredOne = false;
      for (let end = start; end < n && node; end++) {
        node = node.next.get(chars[end]!);
        if (!node || node.id < 0) continue;
        if (end === start) coveredOne = true;
        const total = base + node.score;
        if (total > best[end + 1]!) [best[end + 1], from[end + 1], piece[end + 1]] = [total, start, node.id];
      }
      if (!coveredOne && base + this.unknownScore > best[start + 1]!) {
        [best[start + 1], from[start + 1], piece[start + 1]] = [base + this.unknownScore, start, UNKNOWN_ID];
      }
    }
    const ids: number[] = [];
    for (let end = n; end > 0; end = from[end]!) {
      const id = piece[end]!;
      // A run of unknown characters is one unknown piece.
      if (!(id === UNKNOWN_ID && ids.at(-1) === UNKNOWN_ID)) ids.push(id);
    }
    return ids.reverse();
  }
}
