/**
 * The files the scoring service and its client use by default, where they
 * live inside a models folder, where `offcloud models pull` downloads them
 * from, and the sha256 each must have (their cards are in models/<name>/MODEL_CARD.md).
 */
export interface ModelFile {
  /** Path inside a models folder; also the path under a --mirror base URL. */
  relativePath: string;
  /** The public upstream copy. */
  url: string;
  sha256: string;
  size: number;
  what: string;
}

/** MobileNetV2 (int8), ONNX model zoo, Apache-2.0: input [N,3,224,224] normalised RGB, output 1000 logits. */
export const DEFAULT_MODEL: ModelFile = {
  relativePath: 'imagenet-mobilenetv2-int8/mobilenetv2-12-int8.onnx',
  url: 'https://github.com/onnx/models/raw/main/validated/vision/classification/mobilenet/model/mobilenetv2-12-int8.onnx',
  sha256: '83530ad811bc31d2b60a5599a21265a5057608c9b044b4ee758cc22f2309f54f',
  size: 3655640,
  what: 'ImageNet classifier (MobileNetV2 int8, ONNX)',
};

/**
 * The Keras-style class index: {"0": ["n01440764", "tench"], …} — 1000 [class code, name]
 * entries (§2.1). The project's copy (and so this checksum) comes from a pinned commit of a
 * repository that carries the Keras file with small edits (entry 619 reads "lampu shade"), not
 * from Keras' own download location, whose bytes differ.
 */
export const IMAGENET_LABELS: ModelFile = {
  relativePath: 'imagenet-labels/imagenet_class_index.json',
  url: 'https://raw.githubusercontent.com/sarwojowo/KerasProject/96e113a555be71e396c253fe5612a67fb4398b6e/imagenet_class_index.json',
  sha256: 'b5f776e83563ad894d66a723bac957f53dfa9baf377458b27ae9def80c14ebc5',
  size: 35368,
  what: 'ImageNet class list ([class code, name] per index)',
};

export const MODEL_FILES: readonly ModelFile[] = [DEFAULT_MODEL, IMAGENET_LABELS];
