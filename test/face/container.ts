/** A face container wired to a real billing endpoint, as the suite and the benchmark start it. */
import { startBilling } from '../../src/billing/server.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import { PACKAGE_ROOT, resolveModelFile } from '../../src/common/models.ts';
import type { ModelPaths } from '../../src/face/models/index.ts';
import { startFace, type FaceOptions, type RunningFace } from '../../src/face/server.ts';
import { EYEGLASSES, FACE_DETECTOR, MASK_MODEL, SUNGLASSES, type ModelFile } from '../../src/models/catalogue.ts';

export interface FaceWithBilling {
  billing: RunningComponent;
  face: RunningFace;
}

export async function startFaceWithBilling(dataDir: string, options: Partial<FaceOptions> = {}): Promise<FaceWithBilling> {
  const quiet = { logLevel: 'silent', host: '127.0.0.1', port: 0 } as const;
  const billing = await startBilling({ ...quiet, dataDir, demoResources: true });
  try {
    const face = await startFace({
      ...quiet,
      dataDir,
      workers: 2,
      eula: 'accept',
      billing: billing.facts!.billing!.billingUrl,
      apiKey: billing.facts!.billing!.demoApiKeys!.face!,
      ...options,
    });
    return { billing, face };
  } catch (err) {
    await billing.close();
    throw err;
  }
}

/** The default model files, for code that loads the models in its own thread (calibration, the bench's baseline). */
export function defaultModelPaths(): ModelPaths {
  const find = (file: ModelFile) => resolveModelFile({ ...file, dataDir: PACKAGE_ROOT });
  return { detector: find(FACE_DETECTOR), eyeglasses: find(EYEGLASSES), sunglasses: find(SUNGLASSES), mask: find(MASK_MODEL) };
}
