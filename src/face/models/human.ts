/**
 * Face mesh (landmarks, head pose), age, gender and emotion from
 * @vladmandic/human on the TF.js WebAssembly backend, run on one face crop
 * at a time (the crop comes from our detector; human's own BlazeFace then
 * only has to find the one large face in the middle of it).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type * as HumanModule from '@vladmandic/human';
import type { Config, FaceResult, Human as HumanType } from '@vladmandic/human';
import { cropResized, type Region, type RgbImage } from './image.ts';
import { landmarksFromMesh, type FaceLandmarks } from './landmarks.ts';

const require = createRequire(import.meta.url);

/** Side of the square crop handed to human. */
const CROP_SIZE = 256;
/** The crop is this many times the detected box, so the face has context around it. */
const CROP_SCALE = 1.8;

export type HumanEmotion = 'angry' | 'disgust' | 'fear' | 'happy' | 'sad' | 'surprise' | 'neutral';

/** The parts of the analysis a request needs; the mesh and head pose come with every one. */
export interface AnalysisParts {
  /** The iris model too, for the pupils. */
  landmarks: boolean;
  emotion: boolean;
  /** human's face-description model gives both. */
  ageAndGender: boolean;
}

export interface FaceAnalysis {
  landmarks?: FaceLandmarks;
  age?: number;
  gender?: 'male' | 'female';
  /** Softmax of human's 7-class emotion model. */
  emotion?: Record<HumanEmotion, number>;
  /** Degrees. */
  headPose: { roll: number; yaw: number; pitch: number };
}

function humanConfig(packageDir: string, wasmDir: string): Partial<Config> {
  const still = { skipFrames: 0, skipTime: 0 };
  return {
    backend: 'wasm',
    wasmPath: wasmDir,
    debug: false,
    modelBasePath: pathToFileURL(join(packageDir, 'models')).href + '/',
    // Still images: nothing may be reused from one call to the next.
    cacheSensitivity: 0,
    filter: { enabled: false },
    gesture: { enabled: false },
    body: { enabled: false },
    hand: { enabled: false },
    object: { enabled: false },
    segmentation: { enabled: false },
    face: {
      enabled: true,
      detector: { ...still, rotation: true, maxDetected: 3, minConfidence: 0.2, return: false },
      mesh: { enabled: true },
      iris: { enabled: true, ...still },
      emotion: { enabled: true, minConfidence: 0, ...still },
      description: { enabled: true, minConfidence: 0, ...still },
      antispoof: { enabled: false },
      liveness: { enabled: false },
      attention: { enabled: false },
    },
  };
}

export class HumanAnalyzer {
  private constructor(private readonly human: HumanType) {}

  static async load(): Promise<HumanAnalyzer> {
    const packageDir = dirname(dirname(require.resolve('@vladmandic/human')));
    const wasmDir = join(dirname(require.resolve('@tensorflow/tfjs-backend-wasm')), '/');
    // The wasm build by file path: the package's exports map does not list it for Node.
    const { Human } = require(join(packageDir, 'dist', 'human.node-wasm.js')) as typeof HumanModule;
    const human = new Human(humanConfig(packageDir, wasmDir));
    await human.load();
    return new HumanAnalyzer(human);
  }

  /** Analyses the face in `box`; null when the mesh model cannot find it there. */
  async analyze(image: RgbImage, box: Region, parts: AnalysisParts): Promise<FaceAnalysis | null> {
    const side = Math.max(box.width, box.height) * CROP_SCALE;
    const crop: Region = {
      left: box.left + box.width / 2 - side / 2,
      top: box.top + box.height / 2 - side / 2,
      width: side,
      height: side,
    };
    const pixels = await cropResized(image, crop, CROP_SIZE, CROP_SIZE);
    const tensor = this.human.tf.tensor4d(Int32Array.from(pixels.data), [1, CROP_SIZE, CROP_SIZE, 3], 'int32');
    let faces: FaceResult[];
    try {
      // Models a request does not need are switched off for this call (detect() keeps the
      // setting, so every call sets all three).
      const face = {
        iris: { enabled: parts.landmarks },
        emotion: { enabled: parts.emotion },
        description: { enabled: parts.ageAndGender },
      };
      faces = (await this.human.detect(tensor, { face })).face;
    } finally {
      tensor.dispose();
    }
    const centre = CROP_SIZE / 2;
    const nearest = [...faces].sort((a, b) => distanceToCentre(a, centre) - distanceToCentre(b, centre))[0];
    // Every value must come from the models: a face they could not read gets no analysis.
    const angle = nearest?.rotation?.angle;
    if (!nearest || !angle) return null;
    const degrees = (radians: number) => (radians * 180) / Math.PI;
    const analysis: FaceAnalysis = {
      headPose: { roll: degrees(angle.roll), yaw: degrees(angle.yaw), pitch: degrees(angle.pitch) },
    };
    if (parts.landmarks) {
      if (nearest.mesh.length < 478) return null;
      const scale = side / CROP_SIZE;
      analysis.landmarks = landmarksFromMesh(nearest.mesh.map(([x, y]) => ({ x: crop.left + x * scale, y: crop.top + y * scale })));
    }
    if (parts.emotion) {
      if (!nearest.emotion?.length) return null;
      analysis.emotion = { angry: 0, disgust: 0, fear: 0, happy: 0, sad: 0, surprise: 0, neutral: 0 };
      for (const e of nearest.emotion) analysis.emotion[e.emotion as HumanEmotion] = e.score;
    }
    if (parts.ageAndGender) {
      if (nearest.age === undefined || (nearest.gender !== 'male' && nearest.gender !== 'female')) return null;
      analysis.age = nearest.age;
      analysis.gender = nearest.gender;
    }
    return analysis;
  }
}

function distanceToCentre(face: FaceResult, centre: number): number {
  const [x, y, w, h] = face.box;
  return Math.hypot(x + w / 2 - centre, y + h / 2 - centre);
}
