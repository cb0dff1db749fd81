/**
 * A face model worker thread: loads every model once, then decodes photos,
 * runs detector passes over them or measures their faces (of a photo any
 * worker decoded), off the server's event loop.
 */
import { serveTasks } from '../common/worker-pool.ts';
import { decodeImage } from './decode.ts';
import { FaceApiError } from './errors.ts';
import type { Detection } from './models/detector.ts';
import { FaceModels, type ModelSet } from './models/index.ts';
import type { RgbImage } from './models/image.ts';
import type { FaceAnswer, FaceTask, SharedImage } from './pool.ts';

/** The decoded image in shared memory, read in place. */
function rgbOf({ pixels, width, height }: SharedImage): RgbImage {
  return { data: new Uint8Array(pixels), width, height };
}

await serveTasks<FaceTask, FaceAnswer>(async (data) => {
  const { paths, hairHeads } = data as ModelSet;
  const models = await FaceModels.load(paths, hairHeads);
  return async (task) => {
    if (task.kind === 'measure') return { kind: 'measured', faces: await models.measure(rgbOf(task.image), task.boxes, task.wanted) };
    if (task.kind === 'find') {
      const image = rgbOf(task.image);
      const detections: Detection[][] = [];
      for (const pass of task.passes) detections.push(await models.find(image, pass));
      return { kind: 'found', detections };
    }
    try {
      const decoded = await decodeImage(new Uint8Array(task.bytes));
      const pixels = new SharedArrayBuffer(decoded.data.byteLength);
      new Uint8Array(pixels).set(decoded.data);
      return { kind: 'decoded', image: { pixels, width: decoded.width, height: decoded.height } };
    } catch (err) {
      if (err instanceof FaceApiError) return { kind: 'refused', status: err.status, code: err.code, message: err.message };
      throw err;
    }
  };
});
