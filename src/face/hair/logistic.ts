/**
 * L2-regularised logistic regression on dense features, fitted by L-BFGS
 * from zero weights (so the same data always gives the same weights), and
 * the area under the ROC curve to judge it. Written here because the one npm
 * package for it (ml-logistic-regression) has neither a penalty nor an
 * intercept and runs a fixed 50,000 gradient steps.
 *
 * The objective is scikit-learn's: Σ log(1 + e^(−y·(w·x + b))) + ‖w‖² / (2C)
 * over the faces used, y = ±1, the intercept b not penalised.
 */

/** Features of n faces, d each, row after row (standardised by the caller). */
export interface Design {
  x: Float32Array;
  d: number;
}

export interface Fitted {
  weights: Float64Array;
  bias: number;
}

const HISTORY = 10;
const MAX_ITERATIONS = 300;
/** Stop when the gradient's norm falls below this share of its first value. */
const GRADIENT_TOLERANCE = 1e-5;

/** log(1 + e^(−m)) without overflow. */
const softplusOfMinus = (m: number) => (m > 0 ? Math.log1p(Math.exp(-m)) : -m + Math.log1p(Math.exp(m)));

/** The objective and its gradient (weights, then the bias) at theta. */
function objective(design: Design, rows: Int32Array, labels: Int8Array, inverseL2: number, theta: Float64Array, gradient: Float64Array): number {
  const { x, d } = design;
  gradient.fill(0);
  let loss = 0;
  for (const row of rows) {
    const y = labels[row]!;
    const at = row * d;
    let z = theta[d]!;
    for (let j = 0; j < d; j++) z += theta[j]! * x[at + j]!;
    const margin = y * z;
    loss += softplusOfMinus(margin);
    // d/dz of the loss: −y · σ(−y·z).
    const slope = -y / (1 + Math.exp(margin));
    for (let j = 0; j < d; j++) gradient[j]! += slope * x[at + j]!;
    gradient[d]! += slope;
  }
  let penalty = 0;
  for (let j = 0; j < d; j++) {
    penalty += theta[j]! * theta[j]!;
    gradient[j]! += theta[j]! / inverseL2;
  }
  return loss + penalty / (2 * inverseL2);
}

const dot = (a: Float64Array, b: Float64Array) => {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i]! * b[i]!;
  return sum;
};

/**
 * Fits the rows of the design whose label is ±1 (0: not labelled, left out).
 * `inverseL2` is C: smaller means stronger regularisation.
 */
export function fitLogistic(design: Design, rows: Int32Array, labels: Int8Array, inverseL2: number): Fitted {
  const size = design.d + 1;
  const theta = new Float64Array(size);
  const gradient = new Float64Array(size);
  let value = objective(design, rows, labels, inverseL2, theta, gradient);
  const firstNorm = Math.sqrt(dot(gradient, gradient));
  const steps: Float64Array[] = [];
  const changes: Float64Array[] = [];
  const candidate = new Float64Array(size);
  const nextGradient = new Float64Array(size);
  for (let iteration = 0; iteration < MAX_ITERATIONS && Math.sqrt(dot(gradient, gradient)) > GRADIENT_TOLERANCE * firstNorm; iteration++) {
    // Two-loop recursion: the direction −H·g from the last HISTORY steps.
    const direction = Float64Array.from(gradient, (g) => -g);
    const alphas: number[] = [];
    for (let k = steps.length - 1; k >= 0; k--) {
      const alpha = dot(steps[k]!, direction) / dot(changes[k]!, steps[k]!);
      alphas[k] = alpha;
      for (let i = 0; i < size; i++) direction[i]! -= alpha * changes[k]![i]!;
    }
    const last = steps.length - 1;
    const scale = last >= 0 ? dot(steps[last]!, changes[last]!) / dot(changes[last]!, changes[last]!) : 1 / Math.sqrt(dot(gradient, gradient));
    for (let i = 0; i < size; i++) direction[i]! *= scale;
    for (let k = 0; k < steps.length; k++) {
      const beta = dot(changes[k]!, direction) / dot(changes[k]!, steps[k]!);
      for (let i = 0; i < size; i++) direction[i]! += steps[k]![i]! * (alphas[k]! - beta);
    }
    // Backtracking until the objective falls enough (Armijo).
    const descent = dot(gradient, direction);
    let step = 1;
    let nextValue = Infinity;
    for (let tries = 0; tries < 40; tries++, step /= 2) {
      for (let i = 0; i < size; i++) candidate[i] = theta[i]! + step * direction[i]!;
      nextValue = objective(design, rows, labels, inverseL2, candidate, nextGradient);
      if (nextValue <= value + 1e-4 * step * descent) break;
    }
    if (!(nextValue < value)) break;
    const s = Float64Array.from(candidate, (c, i) => c - theta[i]!);
    const yk = Float64Array.from(nextGradient, (g, i) => g - gradient[i]!);
    if (dot(s, yk) > 1e-12) {
      steps.push(s);
      changes.push(yk);
      if (steps.length > HISTORY) {
        steps.shift();
        changes.shift();
      }
    }
    theta.set(candidate);
    gradient.set(nextGradient);
    value = nextValue;
  }
  return { weights: theta.slice(0, design.d), bias: theta[design.d]! };
}

/** The probability a fitted head gives one row of the design. */
export function predict(fitted: Fitted, design: Design, row: number): number {
  let z = fitted.bias;
  const at = row * design.d;
  for (let j = 0; j < design.d; j++) z += fitted.weights[j]! * design.x[at + j]!;
  return 1 / (1 + Math.exp(-z));
}

/** Area under the ROC curve of scores for labels ±1 (ties count half); null without both classes. */
export function areaUnderCurve(scores: readonly number[], labels: readonly number[]): number | null {
  const order = scores.map((_, i) => i).sort((a, b) => scores[a]! - scores[b]!);
  let positives = 0;
  let rankSum = 0;
  for (let start = 0; start < order.length;) {
    let end = start;
    while (end + 1 < order.length && scores[order[end + 1]!] === scores[order[start]!]) end++;
    // Ranks start..end (1-based: start+1..end+1) share their mean.
    const meanRank = (start + end) / 2 + 1;
    for (let k = start; k <= end; k++) {
      if (labels[order[k]!]! > 0) {
        positives++;
        rankSum += meanRank;
      }
    }
    start = end + 1;
  }
  const negatives = order.length - positives;
  if (positives === 0 || negatives === 0) return null;
  return (rankSum - (positives * (positives + 1)) / 2) / (positives * negatives);
}
