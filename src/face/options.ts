/** The face container's options, apart from its server so the CLI can list them without loading the models' runtimes. */
import { availableParallelism } from 'node:os';
import { commonOptions, portOption } from '../common/config.ts';
import { containerOptions } from '../cognitive/startup.ts';

export const faceOptions = {
  ...commonOptions,
  port: portOption(5000),
  ...containerOptions,
  workers: {
    type: 'integer',
    default: Math.min(availableParallelism(), 2),
    min: 1,
    max: 64,
    description: "model worker threads, each with its own copy of the models (default: one per core, at most 2, the container's 2 CPU cores)",
  },
  unsupportedAttributes: {
    type: 'string',
    default: 'refuse',
    choices: ['refuse', 'omit'],
    description:
      'an attribute no model here can estimate (makeup, occlusion, qualityForRecognition on v1.0; facialHair and hair without --hair-model): refuse the request with BadArgument, or omit the attribute',
  },
  urlTimeoutMs: {
    type: 'integer',
    default: 10000,
    min: 100,
    max: 120000,
    description: 'time limit for fetching the image of a {"url"} request, in ms',
  },
  urlAllowPrivate: {
    type: 'boolean',
    default: false,
    description:
      'let {"url"} requests fetch from loopback, private and link-local addresses (refused by default: the container must not be a way into its network)',
  },
  detectorModel: { type: 'string', default: '', description: 'face detector ONNX file (default: face-ultralight-rfb/version-RFB-640.onnx)' },
  eyeglassesModel: {
    type: 'string',
    default: '',
    description: 'eyeglasses classifier ONNX file (default: face-attributes-glasses-mantasu/glasses_eyeglasses.onnx)',
  },
  sunglassesModel: {
    type: 'string',
    default: '',
    description: 'sunglasses classifier ONNX file (default: face-attributes-glasses-mantasu/glasses_sunglasses.onnx)',
  },
  hairModel: {
    type: 'string',
    default: '',
    description:
      'facialHair and hair heads you trained (`offcloud models train face-hair`); default: face-hair/face-hair.json in a models folder if there, else those attributes are refused',
  },
  maskModel: { type: 'string', default: '', description: 'face-mask detector TF.js model.json (default: face-attributes-mask-aizoo/model.json)' },
} as const;
