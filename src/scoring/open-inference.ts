/**
 * The open inference protocol (KServe v2, Triton's HTTP/REST API) on the
 * scoring container, so clients written for those servers can call the same
 * model. Tensors go to the model as they are (no pixel scaling, no softmax):
 * that protocol carries model inputs and outputs, not images and probabilities.
 */
import type { FastifyInstance } from 'fastify';
import { invalidBody, ScoringError } from './errors.ts';
import type { ImageClassifier } from './classifier.ts';
import { CLASS_COUNT } from './classifier.ts';
import { formatShape, INPUT_LAYOUT, INPUT_SHAPE } from './tensor-body.ts';

export const OPEN_INFERENCE_MODEL_NAME = 'imagenet';
const MODEL_VERSION = '1';

interface InferInput {
  name?: unknown;
  shape?: unknown;
  datatype?: unknown;
  data?: unknown;
}

/** The one input tensor of an infer request, flattened in row-major order. */
export function readInferInput(body: unknown, inputName: string): { id?: string; values: Float32Array } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalidBody('the body must be a JSON object with "inputs"');
  const request = body as { id?: unknown; inputs?: unknown };
  if (!Array.isArray(request.inputs) || request.inputs.length !== 1) throw invalidBody(`"inputs" must hold exactly one tensor, "${inputName}"`, 'inputs');
  const input = request.inputs[0] as InferInput;
  if (typeof input !== 'object' || input === null) throw invalidBody('inputs[0] must be an object', 'inputs[0]');
  if (input.name !== inputName) throw invalidBody(`inputs[0].name must be "${inputName}"`, 'inputs[0].name');
  if (input.datatype !== 'FP32') throw invalidBody('inputs[0].datatype must be "FP32"', 'inputs[0].datatype');
  if (!Array.isArray(input.shape) || input.shape.length !== INPUT_SHAPE.length || input.shape.some((d, i) => d !== INPUT_SHAPE[i])) {
    throw invalidBody(`inputs[0].shape must be ${formatShape(INPUT_SHAPE)}`, 'inputs[0].shape');
  }
  const flat = Array.isArray(input.data) ? (input.data.flat(INPUT_SHAPE.length) as unknown[]) : [];
  const size = INPUT_LAYOUT.size;
  if (flat.length !== size) throw invalidBody(`inputs[0].data must hold ${size} numbers (shape ${formatShape(INPUT_SHAPE)})`, 'inputs[0].data');
  const values = new Float32Array(size);
  for (let i = 0; i < size; i++) {
    const value = flat[i];
    if (typeof value !== 'number') throw invalidBody(`inputs[0].data[${i}] is not a number`, 'inputs[0].data');
    values[i] = value;
    if (!Number.isFinite(values[i])) throw invalidBody(`inputs[0].data[${i}] is outside the range of a 32-bit float`, 'inputs[0].data');
  }
  return { ...(typeof request.id === 'string' ? { id: request.id } : {}), values };
}

export function registerOpenInferenceRoutes(app: FastifyInstance, loaded: () => ImageClassifier): void {
  const model = (name: string): ImageClassifier => {
    if (name !== OPEN_INFERENCE_MODEL_NAME) throw new ScoringError(404, 'NotFound', `unknown model "${name}"; this server has "${OPEN_INFERENCE_MODEL_NAME}"`);
    return loaded();
  };
  app.get('/v2', async () => ({ name: 'offcloud-scoring', version: '1', extensions: [] }));
  app.get('/v2/health/live', async () => ({ live: true }));
  app.get('/v2/health/ready', async () => {
    loaded();
    return { ready: true };
  });
  app.get<{ Params: { name: string } }>('/v2/models/:name/ready', async (request) => {
    model(request.params.name);
    return { name: request.params.name, ready: true };
  });
  app.get<{ Params: { name: string } }>('/v2/models/:name', async (request) => {
    const classifier = model(request.params.name);
    return {
      name: OPEN_INFERENCE_MODEL_NAME,
      versions: [MODEL_VERSION],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: classifier.inputName, datatype: 'FP32', shape: INPUT_SHAPE }],
      outputs: [{ name: classifier.outputName, datatype: 'FP32', shape: [1, CLASS_COUNT] }],
    };
  });
  app.post<{ Params: { name: string } }>('/v2/models/:name/infer', async (request) => {
    const classifier = model(request.params.name);
    let body: unknown;
    try {
      body = JSON.parse((request.body as Buffer | undefined)?.toString('utf8') ?? '');
    } catch (err) {
      throw invalidBody(`the body is not JSON: ${(err as Error).message}`);
    }
    const { id, values } = readInferInput(body, classifier.inputName);
    const { output } = await classifier.run(values);
    return {
      model_name: OPEN_INFERENCE_MODEL_NAME,
      model_version: MODEL_VERSION,
      ...(id === undefined ? {} : { id }),
      outputs: [{ name: classifier.outputName, datatype: 'FP32', shape: [1, CLASS_COUNT], data: Array.from(output) }],
    };
  });
}
