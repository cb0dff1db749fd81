/**
 * TF.js model files read from disk (the face models, the sentiment encoder). Node's fetch does not read file:// URLs
 * and @tensorflow/tfjs-node (which would) downloads a native library at
 * install, so the wasm backend gets its models through this IOHandler.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tf from '@tensorflow/tfjs';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';

const require = createRequire(import.meta.url);

/** Selects the WebAssembly backend, its .wasm files read from the installed package (once per thread). */
export async function useWasmBackend(): Promise<void> {
  setWasmPaths(join(dirname(require.resolve('@tensorflow/tfjs-backend-wasm')), '/'));
  await tf.setBackend('wasm');
  await tf.ready();
}

interface ModelJson {
  modelTopology: tf.io.ModelJSON['modelTopology'];
  format?: string;
  generatedBy?: string;
  convertedBy?: string | null;
  signature?: object;
  userDefinedMetadata?: Record<string, object>;
  weightsManifest: tf.io.WeightsManifestConfig;
}

/** Loads a `model.json` and its weight shards (paths relative to it). */
export function fileModelHandler(modelJsonPath: string): tf.io.IOHandler {
  return {
    async load(): Promise<tf.io.ModelArtifacts> {
      const json = JSON.parse(await readFile(modelJsonPath, 'utf8')) as ModelJson;
      const weightSpecs: tf.io.WeightsManifestEntry[] = [];
      const shards: Buffer[] = [];
      for (const group of json.weightsManifest) {
        weightSpecs.push(...group.weights);
        for (const shard of group.paths) shards.push(await readFile(join(dirname(modelJsonPath), shard)));
      }
      const weights = Buffer.concat(shards);
      return {
        modelTopology: json.modelTopology,
        format: json.format,
        generatedBy: json.generatedBy,
        convertedBy: json.convertedBy,
        signature: json.signature,
        userDefinedMetadata: json.userDefinedMetadata,
        weightSpecs,
        weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
      };
    },
  };
}

/**
 * Lets tf.loadGraphModel('file:///…') (which @vladmandic/human calls) read
 * from disk. Called once per worker thread: the router table is the thread's.
 */
export function routeFileUrlsToDisk(): void {
  const router = (url: string | string[]): tf.io.IOHandler | null => {
    const first = Array.isArray(url) ? url[0] : url;
    return typeof first === 'string' && first.startsWith('file://') ? fileModelHandler(fileURLToPath(first)) : null;
  };
  // The registry skips a router that answers null (the type says IOHandler only).
  tf.io.registerLoadRouter(router as Parameters<typeof tf.io.registerLoadRouter>[0]);
}
