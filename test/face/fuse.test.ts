/**
 * FaceRes with its batch norms and ReLU6 folded into fused convolutions at
 * load time (src/face/models/fuse.ts) answers as the model as shipped does,
 * on real faces, and is left with no separate element-wise op to run.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as tf from '@tensorflow/tfjs';
import { decodeImage } from '../../src/face/decode.ts';
import { fuseConvolutions } from '../../src/face/models/fuse.ts';
import { ageOf, humanModelFile } from '../../src/face/models/human.ts';
import { FaceModels } from '../../src/face/models/index.ts';
import { sampleSquares, squareAround } from '../../src/face/models/square.ts';
import { fileModelHandler } from '../../src/common/tfjs-files.ts';
import { defaultModelPaths } from './container.ts';
import { portrait, sheetFaces } from './images.ts';

let shipped: tf.io.ModelArtifacts;
let fused: tf.io.ModelArtifacts;
let faces: tf.Tensor4D;

before(async () => {
  // Selects the wasm backend, as the workers run it, and gives the detector for the crops.
  const models = await FaceModels.load(defaultModelPaths());
  shipped = await fileModelHandler(humanModelFile('faceres')).load!();
  fused = await fuseConvolutions(shipped);
  const crops: tf.Tensor4D[] = [];
  for (const bytes of [await portrait(), await sheetFaces(1, 8)]) {
    const image = await decodeImage(bytes);
    const boxes = await models.detect(image, 100);
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

test('the fused FaceRes answers as the shipped one on real faces (age, gender)', async () => {
  assert.ok(faces.shape[0] >= 8, `${faces.shape[0]} faces`);
  const run = async (artifacts: tf.io.ModelArtifacts) => {
    const model = await tf.loadGraphModel(tf.io.fromMemory(artifacts));
    const outputs = model.execute(faces) as tf.Tensor[];
    const male = await outputs.find((t) => t.shape[1] === 1)!.data();
    const ages = await outputs.find((t) => t.shape[1] === 100)!.data();
    tf.dispose(outputs);
    model.dispose();
    return { male, ages };
  };
  const a = await run(shipped);
  const b = await run(fused);
  for (let n = 0; n < faces.shape[0]; n++) {
    assert.ok(Math.abs(a.male[n]! - b.male[n]!) < 1e-3, `face ${n}: P(male) ${a.male[n]} against ${b.male[n]}`);
    const ageA = ageOf(a.ages.subarray(n * 100, (n + 1) * 100) as Float32Array);
    const ageB = ageOf(b.ages.subarray(n * 100, (n + 1) * 100) as Float32Array);
    assert.ok(Math.abs(ageA - ageB) < 0.05, `face ${n}: age ${ageA} against ${ageB}`);
  }
});
