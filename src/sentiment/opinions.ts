/**
 * Opinion mining (v3.1 and the Language API's `opinionMining`) for English,
 * from the same model: an assessment is a word the model alone scores
 * clearly polar (p ≤ 0.2 or ≥ 0.8), negated when a negation comes shortly
 * before it; its target is the word it describes, found by the two surface
 * patterns English opinions mostly take: an adjective before its noun ("great
 * food") and a noun, a linking verb, then the adjective ("the waiter was
 * rude"). There is no parser here: other structures ("makes it beautiful")
 * are missed, and an assessment with no target is not reported.
 */

export interface MinedAssessment {
  /** UTF-16 units from the start of the sentence. */
  offset: number;
  length: number;
  /** The model's probability of positive for the word, turned round when negated. */
  score: number;
  isNegated: boolean;
}
export interface MinedTarget {
  offset: number;
  length: number;
  /** Indices into the sentence's assessments. */
  assessments: number[];
}
export interface MinedOpinions {
  targets: MinedTarget[];
  assessments: MinedAssessment[];
}

const POLAR = 0.3;
const WORD = /[\p{L}\p{N}]+(?:['’-][\p{L}\p{N}]+)*/gu;
const NEGATIONS = new Set(['not', "n't", 'no', 'never', 'hardly', 'barely', 'nothing', 'nor']);
const LINKING = new Set([
  'is',
  'was',
  'are',
  'were',
  'be',
  'been',
  'being',
  'seems',
  'seemed',
  'looks',
  'looked',
  'tastes',
  'tasted',
  'feels',
  'felt',
  'remains',
  'remained',
  'became',
  'becomes',
  "'s",
  "'re",
]);
const DEGREE = new Set([
  'very',
  'so',
  'really',
  'too',
  'quite',
  'extremely',
  'pretty',
  'rather',
  'incredibly',
  'truly',
  'absolutely',
  'super',
  'fairly',
  'always',
  'just',
]);
const FUNCTION_WORDS = new Set([
  ...NEGATIONS,
  ...LINKING,
  ...DEGREE,
  'a',
  'an',
  'the',
  'and',
  'or',
  'but',
  'of',
  'to',
  'in',
  'on',
  'at',
  'for',
  'with',
  'by',
  'from',
  'as',
  'it',
  'its',
  'this',
  'that',
  'these',
  'those',
  'i',
  'we',
  'you',
  'he',
  'she',
  'they',
  'me',
  'us',
  'him',
  'her',
  'them',
  'my',
  'our',
  'your',
  'his',
  'their',
  'there',
  'here',
  'what',
  'which',
  'who',
  'whom',
  'whose',
  'when',
  'where',
  'why',
  'how',
  'all',
  'any',
  'some',
  'every',
  'each',
  'more',
  'most',
  'less',
  'least',
  'than',
  'then',
  'had',
  'has',
  'have',
  'do',
  'does',
  'did',
  'will',
  'would',
  'can',
  'could',
  'should',
  'may',
  'might',
  'must',
  'also',
  'even',
  'still',
  'if',
]);

interface Word {
  text: string;
  lower: string;
  offset: number;
}

function words(sentence: string): Word[] {
  return [...sentence.matchAll(WORD)].map((m) => ({ text: m[0], lower: m[0].toLowerCase().replace('’', "'"), offset: m.index }));
}

/** Whether a negation stands within three words before `index`. */
function negatedAt(list: Word[], index: number): boolean {
  for (let j = Math.max(0, index - 3); j < index; j++) if (NEGATIONS.has(list[j]!.lower) || list[j]!.lower.endsWith("n't")) return true;
  return false;
}

export async function mineOpinions(sentence: string, wordScore: (word: string) => Promise<number>): Promise<MinedOpinions> {
  const list = words(sentence);
  const content = (i: number) => i >= 0 && i < list.length && !FUNCTION_WORDS.has(list[i]!.lower) && !/^\p{N}+$/u.test(list[i]!.lower);
  const scores = await Promise.all(list.map((w, i) => (content(i) ? wordScore(w.lower) : Promise.resolve(0.5))));
  const polar = (i: number) => Math.abs(scores[i]! - 0.5) >= POLAR;
  const targetOf = (i: number): number | undefined => {
    // The noun ends the run of plain words after the adjective: "sleek premium aluminum design".
    let end = i;
    while (end < i + 3 && content(end + 1) && !polar(end + 1)) end++;
    if (end > i) return end;
    let j = i - 1;
    while (j >= 0 && (DEGREE.has(list[j]!.lower) || NEGATIONS.has(list[j]!.lower))) j--;
    if (j >= 1 && LINKING.has(list[j]!.lower) && content(j - 1) && !polar(j - 1)) return j - 1;
    return undefined;
  };
  const assessments: MinedAssessment[] = [];
  const targets = new Map<number, MinedTarget>();
  list.forEach((word, i) => {
    if (!content(i) || !polar(i)) return;
    const target = targetOf(i);
    if (target === undefined) return;
    const isNegated = negatedAt(list, i);
    assessments.push({ offset: word.offset, length: word.text.length, score: isNegated ? 1 - scores[i]! : scores[i]!, isNegated });
    const { offset, text } = list[target]!;
    const entry = targets.get(target) ?? { offset, length: text.length, assessments: [] };
    entry.assessments.push(assessments.length - 1);
    targets.set(target, entry);
  });
  return { targets: [...targets.values()].sort((a, b) => a.offset - b.offset), assessments };
}
