/**
 * Where a face detect's CPU goes, stage by stage, for the bench's 1-face,
 * 20-face and 100-face photos with the seven attributes: each stage run alone in this
 * thread, repeated, and timed by this process's CPU time (every thread:
 * sharp's and onnxruntime's too), so the figures hold on a shared machine.
 *
 *   npx tsx bench/face/profile.ts
 */
import { decodeImage } from '../../src/face/decode.ts';
import { FaceModels } from '../../src/face/models/index.ts';
import { defaultModelPaths } from '../../test/face/container.ts';
import { benchPhotos } from './photos.ts';
import { loadavg } from 'node:os';

const REPEAT = 5;

/** CPU milliseconds per call of `stage`, over REPEAT calls after one warm-up call. */
async function cpuPerCall(stage: () => Promise<unknown>): Promise<number> {
  await stage();
  const before = process.cpuUsage();
  for (let i = 0; i < REPEAT; i++) await stage();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000 / REPEAT;
}

const models = await FaceModels.load(defaultModelPaths());
const none = { mesh: false, ageAndGender: false, emotion: false, glasses: false, mask: false, quality: false, hair: false };
const stages = {
  'age, gender (FaceRes)': { ...none, ageAndGender: true },
  emotion: { ...none, emotion: true },
  glasses: { ...none, glasses: true },
  'blur, exposure, noise': { ...none, quality: true },
  'the seven together': { ...none, ageAndGender: true, emotion: true, glasses: true, quality: true },
};
console.log(`load average ${loadavg()[0]!.toFixed(1)}; CPU ms per image (per face in brackets), mean of ${REPEAT} after a warm-up`);
console.log('| photo | decode | detect | ' + Object.keys(stages).join(' | ') + ' |');
console.log(
  '|---|---|---|' +
    Object.keys(stages)
      .map(() => '---|')
      .join(''),
);
for (const photo of (await benchPhotos()).filter((p) => /^(1 face|20 faces|100 faces)/.test(p.name))) {
  const image = await decodeImage(photo.bytes);
  const boxes = await models.detect(image, 100);
  const cells = [await cpuPerCall(() => decodeImage(photo.bytes)), await cpuPerCall(() => models.detect(image, 100))].map((ms) => ms.toFixed(1));
  for (const wanted of Object.values(stages)) {
    const ms = await cpuPerCall(() => models.measure(image, boxes, wanted));
    cells.push(`${ms.toFixed(1)} (${(ms / boxes.length).toFixed(1)})`);
  }
  const widths = boxes.map((b) => Math.round(b.width));
  console.log(`| ${photo.name}, ${boxes.length} found, ${Math.min(...widths)}–${Math.max(...widths)} px wide | ${cells.join(' | ')} |`);
}
console.log(`load average ${loadavg()[0]!.toFixed(1)}`);
