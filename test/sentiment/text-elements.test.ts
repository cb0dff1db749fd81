/** The 5,120 limit counts text elements: the windowed count must equal Intl.Segmenter's over the whole text. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countTextElements } from '../../src/sentiment/text-elements.ts';
import { seededRandom } from '../../src/common/random.ts';

const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });
function wholeTextCount(text: string): number {
  let count = 0;
  for (const _ of segmenter.segment(text)) count++;
  return count;
}

test('R-SENT-6 text elements are counted as grapheme clusters, the same as one pass of the segmenter', () => {
  // Combining marks, emoji with skin tones and ZWJ families, flags (regional indicator pairs), CR LF,
  // Devanagari conjuncts, Hangul, a lone surrogate: pieces that join or split clusters.
  const pieces = ['a', 'é', 'e\u0301', '😀', '👍🏽', '👨‍👩‍👧‍👦', '🇫🇷', '🇩🇪', '\r\n', 'क्षि', '한', ' ', '\u200d', '\u0301', '©\u200d😀', '\ud83c', '\r'];
  const random = seededRandom(42);
  for (let trial = 0; trial < 200; trial++) {
    let text = 'x'.repeat(Math.floor(random() * 300));
    const length = Math.floor(random() * 500);
    for (let i = 0; i < length; i++) text += pieces[Math.floor(random() * pieces.length)];
    assert.equal(countTextElements(text), wholeTextCount(text), JSON.stringify(text.slice(0, 80)));
  }
  assert.equal(countTextElements('😀'.repeat(5121), 5120) > 5120, true);
  assert.equal(countTextElements('e' + '\u0301'.repeat(2000)), 1, 'one letter with 2,000 marks is one element');
  assert.equal(countTextElements('a\r\nb'), 3);
});
