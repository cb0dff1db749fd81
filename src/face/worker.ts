/**
 * A model worker thread: loads every model once, then decodes and measures
 * the images the server sends it, off the server's event loop.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { decodeImage } from './decode.ts';
import { FaceApiError } from './errors.ts';
import { FaceModels, type ModelPaths } from './models/index.ts';
import type { WorkerReply, WorkerRequest } from './pool.ts';

const port = parentPort;
if (!port) throw new Error('src/face/worker.ts runs as a worker thread');

const send = (reply: WorkerReply) => port.postMessage(reply);

async function answer(models: FaceModels, request: WorkerRequest): Promise<WorkerReply> {
  try {
    const image = await decodeImage(new Uint8Array(request.bytes));
    const faces = await models.measure(image, request.wanted, request.maxFaces, request.rectangles);
    return { type: 'measured', id: request.id, width: image.width, height: image.height, faces };
  } catch (err) {
    if (err instanceof FaceApiError) return { type: 'refused', id: request.id, status: err.status, code: err.code, message: err.message };
    return { type: 'failed', id: request.id, message: (err as Error).stack ?? String(err) };
  }
}

try {
  const models = await FaceModels.load(workerData as ModelPaths);
  port.on('message', (request: WorkerRequest) => void answer(models, request).then(send));
  send({ type: 'ready' });
} catch (err) {
  send({ type: 'load-failed', message: (err as Error).stack ?? String(err) });
}
