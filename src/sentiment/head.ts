/**
 * The second model version's own parts: a small network (512 → 512 ReLU → 1)
 * that reads a sentence embedding and gives the logit of "positive", and the
 * logistic blend that fuses its logit with the n-gram model's:
 * p = σ(a·head + b·ngram + c). Plain Float32Arrays, trained here by seeded
 * mini-batch Adam; no framework is needed for a network this small.
 */
import { seededRandom } from '../common/random.ts';
import { sigmoid } from './features.ts';

export interface MlpHead {
  inputs: number;
  hidden: number;
  /** hidden × inputs, row by row. */
  w1: Float32Array;
  b1: Float32Array;
  w2: Float32Array;
  b2: number;
}

export interface Blend {
  head: number;
  ngram: number;
  bias: number;
}

export const logitOf = (p: number) => Math.log(Math.max(p, 1e-7) / Math.max(1 - p, 1e-7));

/** The head's logit of "positive" for one embedding (`x` at `offset` in a block of embeddings). */
export function headLogit(head: MlpHead, x: Float32Array, offset = 0, hiddenOut?: Float32Array): number {
  const { inputs, hidden, w1, b1, w2 } = head;
  let out = head.b2;
  for (let j = 0; j < hidden; j++) {
    let sum = b1[j]!;
    const row = j * inputs;
    for (let k = 0; k < inputs; k++) sum += w1[row + k]! * x[offset + k]!;
    const h = sum > 0 ? sum : 0;
    if (hiddenOut) hiddenOut[j] = h;
    out += w2[j]! * h;
  }
  return out;
}

export function blended(blend: Blend, headLogitValue: number, ngramProbability: number): number {
  return sigmoid(blend.head * headLogitValue + blend.ngram * logitOf(ngramProbability) + blend.bias);
}

export interface HeadSettings {
  hidden: number;
  epochs: number;
  batch: number;
  learningRate: number;
  l2: number;
  seed: number;
}

/** Adam's running moments for one parameter block. */
class AdamBlock {
  private readonly m: Float32Array;
  private readonly v: Float32Array;
  constructor(readonly values: Float32Array) {
    this.m = new Float32Array(values.length);
    this.v = new Float32Array(values.length);
  }
  step(gradient: Float32Array, rate: number, t: number, l2: number): void {
    const [b1, b2] = [0.9, 0.999];
    const correction = Math.sqrt(1 - b2 ** t) / (1 - b1 ** t);
    for (let i = 0; i < gradient.length; i++) {
      const g = gradient[i]! + l2 * this.values[i]!;
      this.m[i] = b1 * this.m[i]! + (1 - b1) * g;
      this.v[i] = b2 * this.v[i]! + (1 - b2) * g * g;
      this.values[i]! -= (rate * correction * this.m[i]!) / (Math.sqrt(this.v[i]!) + 1e-8);
    }
  }
}

/** Trains the head on embeddings (`inputs` numbers per example, back to back) and 0/1 labels; deterministic for a seed. */
export function trainHead(embeddings: Float32Array, labels: Uint8Array, inputs: number, settings: HeadSettings): MlpHead {
  const random = seededRandom(settings.seed);
  const { hidden } = settings;
  // He initialisation from the seeded generator (Box–Muller).
  const gaussian = () => Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random());
  const w1 = Float32Array.from({ length: hidden * inputs }, () => gaussian() * Math.sqrt(2 / inputs));
  const w2 = Float32Array.from({ length: hidden }, () => gaussian() * Math.sqrt(1 / hidden));
  const head: MlpHead = { inputs, hidden, w1, b1: new Float32Array(hidden), w2, b2: 0 };
  const bias2 = new Float32Array(1);
  const blocks = [new AdamBlock(w1), new AdamBlock(head.b1), new AdamBlock(w2), new AdamBlock(bias2)];
  const gradients = [new Float32Array(w1.length), new Float32Array(hidden), new Float32Array(hidden), new Float32Array(1)] as const;
  const activations = new Float32Array(hidden);
  const order = Array.from(labels, (_, i) => i);
  let t = 0;
  for (let epoch = 0; epoch < settings.epochs; epoch++) {
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j]!, order[i]!];
    }
    for (let start = 0; start < order.length; start += settings.batch) {
      const batch = order.slice(start, start + settings.batch);
      for (const g of gradients) g.fill(0);
      for (const n of batch) {
        const offset = n * inputs;
        const error = (sigmoid(headLogit(head, embeddings, offset, activations)) - labels[n]!) / batch.length;
        gradients[3][0]! += error;
        for (let j = 0; j < hidden; j++) {
          gradients[2][j]! += error * activations[j]!;
          if (activations[j]! <= 0) continue;
          const back = error * w2[j]!;
          gradients[1][j]! += back;
          const row = j * inputs;
          for (let k = 0; k < inputs; k++) gradients[0][row + k]! += back * embeddings[offset + k]!;
        }
      }
      t++;
      blocks.forEach((block, b) => block.step(gradients[b]!, settings.learningRate, t, b === 0 || b === 2 ? settings.l2 : 0));
      head.b2 = bias2[0]!;
    }
  }
  return head;
}

/** Fits the blend's three numbers by Newton's method on the log-loss (a tiny, convex problem). */
export function fitBlend(headLogits: Float64Array, ngramProbabilities: Float64Array, labels: Uint8Array): Blend {
  const features = Array.from(headLogits, (h, i) => [h, logitOf(ngramProbabilities[i]!), 1] as const);
  const w = [0, 0, 0];
  for (let iteration = 0; iteration < 50; iteration++) {
    const gradient = [0, 0, 0];
    const hessian = [
      [1e-6, 0, 0],
      [0, 1e-6, 0],
      [0, 0, 1e-6],
    ];
    features.forEach((x, n) => {
      const p = sigmoid(w[0]! * x[0] + w[1]! * x[1] + w[2]! * x[2]);
      const weight = p * (1 - p);
      for (let a = 0; a < 3; a++) {
        gradient[a]! += (p - labels[n]!) * x[a]!;
        for (let b = 0; b < 3; b++) hessian[a]![b]! += weight * x[a]! * x[b]!;
      }
    });
    const step = solve3(hessian, gradient);
    for (let a = 0; a < 3; a++) w[a]! -= step[a]!;
    if (Math.hypot(...step) < 1e-9) break;
  }
  return { head: w[0]!, ngram: w[1]!, bias: w[2]! };
}

/** Solves a 3 × 3 linear system by Cramer's rule. */
function solve3(m: number[][], v: number[]): number[] {
  const det = (a: number[][]) =>
    a[0]![0]! * (a[1]![1]! * a[2]![2]! - a[1]![2]! * a[2]![1]!) -
    a[0]![1]! * (a[1]![0]! * a[2]![2]! - a[1]![2]! * a[2]![0]!) +
    a[0]![2]! * (a[1]![0]! * a[2]![1]! - a[1]![1]! * a[2]![0]!);
  const d = det(m);
  return [0, 1, 2].map((column) => det(m.map((row, r) => row.map((x, c) => (c === column ? v[r]! : x)))) / d);
}
