/**
 * A face model worker thread: loads every model once, then decodes photos
 * and finds their faces, or measures faces of a photo another worker decoded,
 * off the server's event loop.
 */
import { serveTasks } from '../common/worker-pool.ts';
import { decodeImage } from './decode.ts';
import { FaceApiError } from './errors.ts';
import { FaceModels, type ModelSet } from './models/index.ts';
import type { FaceAnswer, FaceTask } from './pool.ts';

await serveTasks<FaceTask, FaceAnswer>(async (data) => {
  const { paths, hairHeads } = data as ModelSet;
  const models = await FaceModels.load(paths, hairHeads);
  return async (task) => {
    if (task.kind === 'measure') {
      const { pixels, width, height } = task.image;
      return { kind: 'measured', faces: await models.measure({ data: new Uint8Array(pixels), width, height }, task.boxes, task.wanted) };
    }
    try {
      const decoded = await decodeImage(new Uint8Array(task.bytes));
      const pixels = new SharedArrayBuffer(decoded.data.byteLength);
      new Uint8Array(pixels).set(decoded.data);
      const boxes = await models.detect({ data: new Uint8Array(pixels), width: decoded.width, height: decoded.height }, task.maxFaces);
      return { kind: 'detected', image: { pixels, width: decoded.width, height: decoded.height }, boxes };
    } catch (err) {
      if (err instanceof FaceApiError) return { kind: 'refused', status: err.status, code: err.code, message: err.message };
      throw err;
    }
  };
});
