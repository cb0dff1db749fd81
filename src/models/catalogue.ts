/**
 * Every model file a component can use: where it lives inside a models folder,
 * its public upstream copy (a pinned commit), its sha256 and size, and the
 * option that replaces it. `offcloud models pull` downloads from this list;
 * the model cards in models/<name>/MODEL_CARD.md give the rest of the facts.
 */
import type { ModelOption } from '../common/models.ts';

export interface ModelFile {
  /** Path inside a models folder; also the path under a --mirror base URL. Its first segment names the model. */
  relativePath: string;
  /** The public upstream copy. */
  url: string;
  sha256: string;
  size: number;
  what: string;
  /** The component option that gives another file instead (`--<component>-<option>` under `offcloud up`). */
  option: ModelOption;
  /** Whether the package's models/ ships it (the file a component uses by default). */
  shipped: boolean;
}

const github = (repo: string, commit: string, path: string) => `https://raw.githubusercontent.com/${repo}/${commit}/${path}`;
const RFB = { repo: 'Linzaer/Ultra-Light-Fast-Generic-Face-Detector-1MB', commit: 'dffdddda9794a50607cba8f318507a28c1c27cab' };
const GLASSES = { repo: 'brainRottedCoder/drowsy-detection', commit: 'f4250d7f8318ceb06a27e677de7ee5ece2021634' };
const MASK = { repo: 'AIZOOTech/mask-detection-web-demo', commit: 'b4425bc5fa5a75bd52e17a53a1a0b0243f8e5e7a' };

/** MobileNetV2 (int8), ONNX model zoo, Apache-2.0: input [N,3,224,224] normalised RGB, output 1000 logits. */
export const DEFAULT_MODEL: ModelFile = {
  relativePath: 'imagenet-mobilenetv2-int8/mobilenetv2-12-int8.onnx',
  url: github('Lawrence-lugs/MARP', 'ac0452b4bd7f24639dfd0b2445f42a14d2be2ba7', 'onnx_models/mobilenetv2-12-int8.onnx'),
  sha256: '83530ad811bc31d2b60a5599a21265a5057608c9b044b4ee758cc22f2309f54f',
  size: 3655640,
  what: 'ImageNet classifier (MobileNetV2 int8, ONNX)',
  option: { component: 'scoring', flag: 'model' },
  shipped: true,
};

/**
 * The Keras-style class index: {"0": ["n01440764", "tench"], …} — 1000 [class code, name]
 * entries (§2.1). The project's copy (and so this checksum) comes from a pinned commit of a
 * repository that carries the Keras file with small edits (entry 619 reads "lampu shade"), not
 * from Keras' own download location, whose bytes differ.
 */
export const IMAGENET_LABELS: ModelFile = {
  relativePath: 'imagenet-labels/imagenet_class_index.json',
  url: github('sarwojowo/KerasProject', '96e113a555be71e396c253fe5612a67fb4398b6e', 'imagenet_class_index.json'),
  sha256: 'b5f776e83563ad894d66a723bac957f53dfa9baf377458b27ae9def80c14ebc5',
  size: 35368,
  what: 'ImageNet class list ([class code, name] per index)',
  option: { component: 'score', flag: 'labels' },
  shipped: true,
};

/** The face container's default detector (RFB-640, MIT). */
export const FACE_DETECTOR: ModelFile = {
  relativePath: 'face-ultralight-rfb/version-RFB-640.onnx',
  url: github(RFB.repo, RFB.commit, 'models/onnx/version-RFB-640.onnx'),
  sha256: '8f4c659275977e7a3bfbfa339a9c769ad793df50f9c0baa8c14b11baa1646430',
  size: 1588012,
  what: 'face detector, 640×480 input (Ultra-Light RFB-640, ONNX)',
  option: { component: 'face', flag: 'detector-model' },
  shipped: true,
};

/** The smaller detector (320×240 input, about 4× faster, misses more small faces); not shipped. */
export const FACE_DETECTOR_320: ModelFile = {
  relativePath: 'face-ultralight-rfb/version-RFB-320.onnx',
  url: github(RFB.repo, RFB.commit, 'models/onnx/version-RFB-320.onnx'),
  sha256: '34cd7e60aeff28744c657de7a3dc64e872d506741de66987f3426f2b79f88017',
  size: 1270727,
  what: 'face detector, 320×240 input (Ultra-Light RFB-320, ONNX; optional)',
  option: { component: 'face', flag: 'detector-model' },
  shipped: false,
};

export const EYEGLASSES: ModelFile = {
  relativePath: 'face-attributes-glasses-mantasu/glasses_eyeglasses.onnx',
  url: github(GLASSES.repo, GLASSES.commit, 'public/models/glasses_eyeglasses.onnx'),
  sha256: '1924d2e8f60b8993911b0a4cf96196b07e9b834dfb253ddd3b44c4a47bccbd19',
  size: 119029,
  what: 'eyeglasses classifier (glasses-detector small, ONNX)',
  option: { component: 'face', flag: 'eyeglasses-model' },
  shipped: true,
};

export const SUNGLASSES: ModelFile = {
  relativePath: 'face-attributes-glasses-mantasu/glasses_sunglasses.onnx',
  url: github(GLASSES.repo, GLASSES.commit, 'public/models/glasses_sunglasses.onnx'),
  sha256: 'e10ea8634c7979de9bd0a5724ba5d65e9fe0976d3d13940a8c9685ab5b4faf27',
  size: 119029,
  what: 'sunglasses classifier (glasses-detector small, ONNX)',
  option: { component: 'face', flag: 'sunglasses-model' },
  shipped: true,
};

/** The TF.js mask model: model.json names its weights file, which is read from beside it. */
export const MASK_MODEL: ModelFile = {
  relativePath: 'face-attributes-mask-aizoo/model.json',
  url: github(MASK.repo, MASK.commit, 'tfjs-models/model.json'),
  sha256: 'fb843021b0d8e18551509efe4433cec53b1b1453ee1853bf41e3201f8e4eee6a',
  size: 49186,
  what: 'face-mask detector topology (AIZOO, TF.js)',
  option: { component: 'face', flag: 'mask-model' },
  shipped: true,
};

export const MASK_WEIGHTS: ModelFile = {
  relativePath: 'face-attributes-mask-aizoo/group1-shard1of1.bin',
  url: github(MASK.repo, MASK.commit, 'tfjs-models/group1-shard1of1.bin'),
  sha256: 'ff4b9925dc969dbdac71644e58244611bb379899b75c59752a386ca36e00c5f1',
  size: 4060512,
  what: 'face-mask detector weights (AIZOO, TF.js)',
  option: { component: 'face', flag: 'mask-model' },
  shipped: true,
};

export const MODEL_FILES: readonly ModelFile[] = [DEFAULT_MODEL, IMAGENET_LABELS, FACE_DETECTOR, FACE_DETECTOR_320, EYEGLASSES, SUNGLASSES, MASK_MODEL, MASK_WEIGHTS];

