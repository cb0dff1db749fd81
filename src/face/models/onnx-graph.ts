/**
 * A TF.js graph model whose convolutions fuse.ts has fused, written as an
 * ONNX model, so that onnxruntime runs it. On this machine's x86 cores
 * onnxruntime's kernels use the full vector width, where TF.js's WebAssembly
 * backend has 128-bit SIMD only: HSE FaceRes (a MobileNet) runs several times
 * faster (bench/face/profile.ts).
 *
 * Only the ops such networks have are translated: convolutions (plain and
 * depthwise, fused with a bias and ReLU or ReLU6 or not), max pooling, the
 * sum of two activations, ReLU, the global mean, fused matrix products,
 * sigmoid and softmax; any other op is refused by name. TF.js
 * computes channels last (NHWC), ONNX's convolutions channels first (NCHW):
 * the input is transposed once and the kernels are laid out anew.
 */
import * as tf from '@tensorflow/tfjs';
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;

interface GraphNode {
  name: string;
  op: string;
  input?: string[];
  attr?: Record<string, { s?: string; i?: string; b?: boolean; list?: { i?: string[]; s?: string[] } }>;
}

/** The opset whose Clip takes its bounds as inputs and whose Softmax reads the last axis. */
const OPSET = 13;

const text = (base64: string | undefined) => Buffer.from(base64 ?? '', 'base64').toString();

function attribute(name: string, value: number | number[] | string): onnxProto.onnx.IAttributeProto {
  const { AttributeType } = onnx.AttributeProto;
  if (typeof value === 'string') return { name, type: AttributeType.STRING, s: Buffer.from(value) };
  if (Array.isArray(value)) return { name, type: AttributeType.INTS, ints: value };
  return { name, type: AttributeType.INT, i: value };
}

function floatTensor(name: string, dims: number[], values: Float32Array): onnxProto.onnx.ITensorProto {
  return { name, dims, dataType: onnx.TensorProto.DataType.FLOAT, rawData: new Uint8Array(values.buffer, values.byteOffset, values.byteLength) };
}

/** A TF kernel [height, width, in, out] as ONNX's [out, in, height, width]. */
function channelsFirstKernel(kernel: tf.Tensor): { dims: number[]; values: Float32Array } {
  const [h, w, input, output] = kernel.shape as [number, number, number, number];
  const from = kernel.dataSync() as Float32Array;
  const values = new Float32Array(from.length);
  for (let o = 0; o < output; o++)
    for (let i = 0; i < input; i++)
      for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) values[((o * input + i) * h + y) * w + x] = from[((y * w + x) * input + i) * output + o]!;
  return { dims: [output, input, h, w], values };
}

/**
 * The ONNX model of `artifacts` (a fused TF.js graph with one channels-last
 * image input), answering the TF.js nodes named in `outputs` under the same
 * names, for a batch of any size.
 */
export function onnxModel(artifacts: tf.io.ModelArtifacts, outputs: readonly string[]): Uint8Array {
  const nodes = (artifacts.modelTopology as { node: GraphNode[] }).node;
  if (!artifacts.weightData || !artifacts.weightSpecs) throw new Error('a graph model without weights');
  const weights = tf.io.decodeWeights(artifacts.weightData, artifacts.weightSpecs);
  const onnxNodes: onnxProto.onnx.INodeProto[] = [];
  const initializers: onnxProto.onnx.ITensorProto[] = [];
  const constant = (name: string, dims: number[], values: Float32Array) => (initializers.push(floatTensor(name, dims, values)), name);
  const add = (opType: string, input: string[], output: string, attributes: onnxProto.onnx.IAttributeProto[] = []) =>
    onnxNodes.push({ opType, input, output: [output], name: output, attribute: attributes });
  let input: onnxProto.onnx.IValueInfoProto | undefined;

  /** The activation a fused node ends with, applied to `value` so that the result is `output`. */
  const activate = (node: GraphNode, value: string) => {
    const activation = (node.attr?.fused_ops?.list?.s ?? []).map(text).find((op) => op !== 'BiasAdd');
    if (activation === undefined) return add('Identity', [value], node.name);
    if (activation === 'Relu') return add('Relu', [value], node.name);
    if (activation === 'Relu6') return add('Clip', [value, constant(`${node.name}/zero`, [], Float32Array.of(0)), constant(`${node.name}/six`, [], Float32Array.of(6))], node.name);
    throw new Error(`the fused activation ${activation} of ${node.name} has no translation to ONNX`);
  };

  for (const node of nodes) {
    const inputs = node.input ?? [];
    switch (node.op) {
      case 'Const':
        break;
      case 'Placeholder': {
        const shape = (node.attr as { shape?: { shape?: { dim?: { size: string }[] } } } | undefined)?.shape?.shape?.dim ?? [];
        if (input || shape.length !== 4) throw new Error('only one channels-last image input is translated to ONNX');
        input = {
          name: node.name,
          type: {
            tensorType: {
              elemType: onnx.TensorProto.DataType.FLOAT,
              shape: { dim: shape.map(({ size }) => (Number(size) < 0 ? { dimParam: 'batch' } : { dimValue: Number(size) })) },
            },
          },
        };
        add('Transpose', [node.name], `${node.name}/channels_first`, [attribute('perm', [0, 3, 1, 2])]);
        break;
      }
      case 'Conv2D':
      case 'DepthwiseConv2dNative':
      case '_FusedConv2D':
      case 'FusedDepthwiseConv2dNative': {
        const [x, kernelName, biasName] = inputs as [string, string, string | undefined];
        const kernel = weights[kernelName]!;
        const depthwise = node.op.includes('Depthwise');
        const fused = node.op !== 'Conv2D' && node.op !== 'DepthwiseConv2dNative';
        // A depthwise kernel [h, w, in, multiplier] is a grouped convolution with one group per input channel.
        const laidOut = depthwise ? kernel.reshape([kernel.shape[0]!, kernel.shape[1]!, 1, -1]) : kernel;
        const { dims, values } = channelsFirstKernel(laidOut);
        if (laidOut !== kernel) laidOut.dispose();
        const bias = fused && biasName ? [constant(biasName, [dims[0]!], weights[biasName]!.dataSync() as Float32Array)] : [];
        const conv = fused ? `${node.name}/conv` : node.name;
        add('Conv', [channelsFirst(x), constant(`${kernelName}/oihw`, dims, values), ...bias], conv, [
          attribute('kernel_shape', dims.slice(2)),
          attribute('dilations', (node.attr?.dilations?.list?.i?.map(Number) ?? [1, 1, 1, 1]).slice(1, 3)),
          ...windowAttributes(node),
          attribute('group', depthwise ? kernel.shape[2]! : 1),
        ]);
        if (fused) activate(node, conv);
        break;
      }
      case 'MaxPool':
        add('MaxPool', [channelsFirst(inputs[0]!)], node.name, [attribute('kernel_shape', node.attr!.ksize!.list!.i!.map(Number).slice(1, 3)), ...windowAttributes(node)]);
        break;
      case 'Add':
      case 'AddV2':
        // Two activations, both channels first; a constant operand would broadcast over the wrong axis.
        if (inputs.some((name) => weights[name])) throw new Error(`an addition of a constant has no translation here (${node.name})`);
        add('Add', inputs.map(channelsFirst), node.name);
        break;
      case 'Relu':
      case 'Identity':
        add(node.op, [channelsFirst(inputs[0]!)], node.name);
        break;
      case 'Mean': {
        const axes = [...weights[inputs[1]!]!.dataSync()];
        const keepDims = node.attr?.keep_dims?.b === true;
        if (axes.sort().join() !== '1,2' || keepDims) throw new Error(`only the global mean over height and width is translated to ONNX (${node.name})`);
        add('GlobalAveragePool', [channelsFirst(inputs[0]!)], `${node.name}/pooled`);
        add('Flatten', [`${node.name}/pooled`], node.name, [attribute('axis', 1)]);
        break;
      }
      case '_FusedMatMul': {
        const [a, b, bias] = inputs as [string, string, string];
        if (node.attr?.transpose_a?.b || node.attr?.transpose_b?.b) throw new Error(`a transposed matrix product has no translation here (${node.name})`);
        const kernel = weights[b]!;
        const product = `${node.name}/gemm`;
        add('Gemm', [a, constant(b, kernel.shape, kernel.dataSync() as Float32Array), constant(bias, weights[bias]!.shape, weights[bias]!.dataSync() as Float32Array)], product);
        activate(node, product);
        break;
      }
      case 'Sigmoid':
      case 'Softmax':
        add(node.op, [inputs[0]!], node.name);
        break;
      default:
        throw new Error(`the op ${node.op} (${node.name}) has no translation to ONNX`);
    }
  }
  if (!input) throw new Error('a graph model without an input');
  tf.dispose(Object.values(weights));

  /** A convolution's or pooling's strides and padding over height and width. */
  function windowAttributes(node: GraphNode): onnxProto.onnx.IAttributeProto[] {
    const padding = text(node.attr?.padding?.s);
    if (padding !== 'SAME' && padding !== 'VALID') throw new Error(`the padding ${padding} of ${node.name} has no translation to ONNX`);
    return [
      attribute('strides', (node.attr?.strides?.list?.i?.map(Number) ?? [1, 1, 1, 1]).slice(1, 3)),
      // TF's SAME pads the extra row or column at the end, as SAME_UPPER does.
      attribute('auto_pad', padding === 'SAME' ? 'SAME_UPPER' : 'VALID'),
    ];
  }

  /** A channels-last activation's channels-first name: the input's transpose, or the convolution output itself (kept channels first). */
  function channelsFirst(name: string): string {
    return name === input?.name ? `${name}/channels_first` : name;
  }

  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: 'offcloud',
    opsetImport: [{ domain: '', version: OPSET }],
    graph: {
      name: 'graph',
      node: onnxNodes,
      initializer: initializers,
      input: [input],
      output: outputs.map((name) => ({ name, type: { tensorType: { elemType: onnx.TensorProto.DataType.FLOAT } } })),
    },
  });
  return onnx.ModelProto.encode(model).finish();
}
