/**
 * FaceRes with its batch norms and ReLU6 folded into fused convolutions at
 * load time (src/face/models/fuse.ts) answers as the model as shipped does,
 * on real faces, and is left with no separate element-wise op to run; written
 * as ONNX (src/face/models/onnx-graph.ts) and run by onnxruntime, as the
 * workers run it, it answers the same again, descriptor included; so does
 * the emotion model.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs';
import ort from 'onnxruntime-node';
import { decodeImage } from '../../src/face/decode.ts';
import { fuseConvolutions } from '../../src/face/models/fuse.ts';
import { ageOf, humanModelFile } from '../../src/face/models/human.ts';
import { FaceModels } from '../../src/face/models/index.ts';
import { onnxModel } from '../../src/face/models/onnx-graph.ts';
import { sampleSquares, squareAround } from '../../src/face/models/square.ts';
import { fileModelHandler } from '../../src/common/tfjs-files.ts';
import { defaultModelPaths } from './container.ts';
import { portrait, sheetFaces } from './images.ts';

let shipped: tf.io.ModelArtifacts;
let fused: tf.io.ModelArtifacts;
let faces: tf.Tensor4D;
/** The same faces as the emotion model reads them: 64-px grey crops. */
let greyFaces: tf.Tensor4D;

before(async () => {
  // Selects the wasm backend, as the workers run it, and gives the detector for the crops.
  const models = await FaceModels.load(defaultModelPaths());
  shipped = await fileModelHandler(humanModelFile('faceres')).load!();
  fused = await fuseConvolutions(shipped);
  const crops: tf.Tensor4D[] = [];
  const greyCrops: tf.Tensor4D[] = [];
  for (const bytes of [await portrait(), await sheetFaces(1, 8)]) {
    const image = await decodeImage(bytes);
    const boxes = await models.detect(image, 100);
    const rgb = tf.tensor4d(
      sampleSquares(
        image,
        boxes.map((b) => squareAround(b, 1.2)),
        64,
      ),
      [boxes.length, 64, 64, 3],
    );
    greyCrops.push(tf.tidy(() => rgb.mul([0.2989, 0.587, 0.114]).sum(3, true).div(127.5).sub(1) as tf.Tensor4D));
    rgb.dispose();
    crops.push(
      tf.tensor4d(
        sampleSquares(
          image,
          boxes.map((b) => squareAround(b, 1.3)),
          224,
        ),
        [boxes.length, 224, 224, 3],
      ),
    );
  }
  faces = tf.concat(crops);
  greyFaces = tf.concat(greyCrops);
});

const opsOf = (artifacts: tf.io.ModelArtifacts) => (artifacts.modelTopology as { node: { op: string }[] }).node.map((n) => n.op);

test('the fused FaceRes runs each convolution with its batch norm and ReLU6 as one op', () => {
  const before = opsOf(shipped);
  const after = opsOf(fused);
  for (const op of ['Mul', 'Add', 'Relu', 'Minimum', 'Maximum']) assert.ok(before.includes(op), `the shipped model has ${op}`);
  for (const op of ['Mul', 'Add', 'Relu', 'Minimum', 'Maximum', 'Conv2D', 'DepthwiseConv2dNative']) assert.ok(!after.includes(op), `${op} is left`);
  const count = (ops: string[], op: string) => ops.filter((o) => o === op).length;
  assert.equal(count(after, '_FusedConv2D'), count(before, 'Conv2D'));
  assert.equal(count(after, 'FusedDepthwiseConv2dNative'), count(before, 'DepthwiseConv2dNative'));
});

interface FaceResAnswers {
  male: Float32Array;
  ages: Float32Array;
  descriptors: Float32Array;
}

async function runTfjs(artifacts: tf.io.ModelArtifacts): Promise<FaceResAnswers> {
  const model = await tf.loadGraphModel(tf.io.fromMemory(artifacts));
  const outputs = model.execute(faces) as tf.Tensor[];
  const [male, ages, descriptors] = await Promise.all(
    [1, 100, 1024].map((width) => outputs.find((t) => t.shape[1] === width)!.data() as Promise<Float32Array>),
  );
  tf.dispose(outputs);
  model.dispose();
  return { male: male!, ages: ages!, descriptors: descriptors! };
}

function assertSameAnswers(a: FaceResAnswers, b: FaceResAnswers): void {
  for (let n = 0; n < faces.shape[0]; n++) {
    assert.ok(Math.abs(a.male[n]! - b.male[n]!) < 1e-3, `face ${n}: P(male) ${a.male[n]} against ${b.male[n]}`);
    const ageA = ageOf(a.ages.subarray(n * 100, (n + 1) * 100) as Float32Array);
    const ageB = ageOf(b.ages.subarray(n * 100, (n + 1) * 100) as Float32Array);
    assert.ok(Math.abs(ageA - ageB) < 0.05, `face ${n}: age ${ageA} against ${ageB}`);
  }
}

test('the fused FaceRes answers as the shipped one on real faces (age, gender)', async () => {
  assert.ok(faces.shape[0] >= 8, `${faces.shape[0]} faces`);
  assertSameAnswers(await runTfjs(shipped), await runTfjs(fused));
});

test('FaceRes written as ONNX answers in onnxruntime as the shipped model does in TF.js (age, gender, descriptor)', async () => {
  const outputs = ['gender_pred/Sigmoid', 'age_pred/Softmax', 'global_pooling/Mean'];
  const session = await ort.InferenceSession.create(onnxModel(fused, outputs), { logSeverityLevel: 3 });
  const answered = await session.run({ [session.inputNames[0]!]: new ort.Tensor('float32', faces.dataSync() as Float32Array, faces.shape) });
  const [male, ages, descriptors] = outputs.map((name) => answered[name]!.data as Float32Array);
  const ours = { male: male!, ages: ages!, descriptors: descriptors! };
  const expected = await runTfjs(shipped);
  assertSameAnswers(expected, ours);
  assert.equal(ours.descriptors.length, faces.shape[0] * 1024);
  let largest = 0;
  let furthest = 0;
  for (let i = 0; i < ours.descriptors.length; i++) {
    largest = Math.max(largest, Math.abs(expected.descriptors[i]!));
    furthest = Math.max(furthest, Math.abs(expected.descriptors[i]! - ours.descriptors[i]!));
  }
  assert.ok(largest > 0.1 && furthest < 1e-3 * largest, `descriptor values differ by up to ${furthest} (largest ${largest})`);
  await session.release();
});

test('an op the ONNX writer has no translation for is refused by name', async () => {
  const topology = fused.modelTopology as { node: { name: string; op: string; input?: string[] }[] };
  const last = topology.node.find((node) => node.op === 'Sigmoid')!;
  const changed = { ...fused, modelTopology: { ...topology, node: topology.node.map((node) => (node === last ? { ...node, op: 'Tanh' } : node)) } };
  assert.throws(() => onnxModel(changed, ['gender_pred/Sigmoid']), /op Tanh \(gender_pred\/Sigmoid\)/);
});

test('the emotion model written as ONNX answers in onnxruntime as in TF.js', async () => {
  const shippedEmotion = await fileModelHandler(humanModelFile('emotion')).load!();
  const model = await tf.loadGraphModel(tf.io.fromMemory(shippedEmotion));
  const output = model.execute(greyFaces) as tf.Tensor;
  const expected = (await output.data()) as Float32Array;
  tf.dispose([output]);
  model.dispose();
  const session = await ort.InferenceSession.create(onnxModel(await fuseConvolutions(shippedEmotion), ['Identity']), { logSeverityLevel: 3 });
  const ours = (await session.run({ [session.inputNames[0]!]: new ort.Tensor('float32', greyFaces.dataSync() as Float32Array, greyFaces.shape) })).Identity!
    .data as Float32Array;
  assert.equal(ours.length, greyFaces.shape[0] * 7);
  const strongest = (scores: Float32Array, n: number) => scores.subarray(n * 7, n * 7 + 7).reduce((best, p, i, all) => (p > all[best]! ? i : best), 0);
  for (let n = 0; n < greyFaces.shape[0]; n++) {
    assert.equal(strongest(ours, n), strongest(expected, n), `face ${n}: the strongest emotion`);
    for (let i = n * 7; i < n * 7 + 7; i++) assert.ok(Math.abs(ours[i]! - expected[i]!) < 1e-4, `face ${n}: ${ours[i]} against ${expected[i]}`);
  }
  await session.release();
});
