/**
 * Folds what follows each convolution of a TF.js graph model — a per-channel
 * scale (batch norm's multiply), a per-channel shift (its add) and ReLU or
 * ReLU6 — into TF.js's fused convolution ops, when the model is loaded (the
 * graph onnx-graph.ts then writes as ONNX).
 *
 * HSE FaceRes as @vladmandic/human ships it is a MobileNet whose batch norms
 * and ReLU6 were left as separate element-wise ops: five passes over every
 * activation after each convolution, about half of its time on the wasm
 * backend, and ONNX's Conv takes the bias and (fused by onnxruntime) the clamp
 * as well. A fused kernel applies the shift and the clamp as it writes each
 * output, and a scale folded into the kernel costs nothing. The arithmetic is
 * the same up to float rounding (test/face/fuse.test.ts compares the outputs).
 */
import * as tf from '@tensorflow/tfjs';

interface GraphNode {
  name: string;
  op: string;
  input?: string[];
  attr?: Record<string, unknown>;
  device?: string;
}

/** Each convolution op and its fused form (both take a BiasAdd and an activation). */
const FUSED: Record<string, string> = { Conv2D: '_FusedConv2D', DepthwiseConv2dNative: 'FusedDepthwiseConv2dNative' };
const SHIFTS = new Set(['Add', 'AddV2', 'BiasAdd']);

/** What follows one convolution and folds into it. */
interface Chain {
  /** The nodes folded away, the last of which the fused node replaces (its consumers keep its name). */
  nodes: GraphNode[];
  scale?: tf.Tensor;
  bias: string;
  activation: 'Relu' | 'Relu6' | undefined;
}

/** The graph of `artifacts` with each convolution and what follows it folded into one fused op. */
export async function fuseConvolutions(artifacts: tf.io.ModelArtifacts): Promise<tf.io.ModelArtifacts> {
  const topology = artifacts.modelTopology as { node: GraphNode[] };
  if (!artifacts.weightData || !artifacts.weightSpecs) throw new Error('a graph model without weights');
  const weights = tf.io.decodeWeights(artifacts.weightData, artifacts.weightSpecs);
  const byName = new Map(topology.node.map((node) => [node.name, node]));
  const consumers = new Map<string, GraphNode[]>();
  for (const node of topology.node) for (const input of node.input ?? []) consumers.set(input, [...(consumers.get(input) ?? []), node]);

  /** The sole consumer of a node, if it has exactly one. */
  const next = (node: GraphNode) => {
    const of = consumers.get(node.name) ?? [];
    return of.length === 1 ? of[0] : undefined;
  };
  /** The constant operand of a binary op whose other operand is `from`, if it is a vector of `size` (or, for 1, a scalar). */
  const constantOperand = (node: GraphNode, from: GraphNode, size: number): string | undefined => {
    const inputs = node.input ?? [];
    const other = inputs.length === 2 && inputs.includes(from.name) ? inputs.find((i) => i !== from.name) : undefined;
    const value = other && byName.get(other)?.op === 'Const' ? weights[other] : undefined;
    return value && value.rank <= 1 && value.size === size ? other : undefined;
  };
  const scalarIs = (name: string | undefined, value: number) => name !== undefined && weights[name]!.dataSync()[0] === value;

  function chainAfter(conv: GraphNode, channels: number): Chain | undefined {
    const nodes: GraphNode[] = [];
    let last = conv;
    let scale: tf.Tensor | undefined;
    const mul = next(last);
    const scaleName = mul?.op === 'Mul' ? constantOperand(mul, last, channels) : undefined;
    if (mul && scaleName) {
      scale = weights[scaleName];
      nodes.push(mul);
      last = mul;
    }
    const shift = next(last);
    const bias = shift && SHIFTS.has(shift.op) ? constantOperand(shift, last, channels) : undefined;
    if (!shift || !bias) return undefined;
    nodes.push(shift);
    const relu = next(shift);
    if (relu?.op !== 'Relu') return { nodes, scale, bias, activation: undefined };
    nodes.push(relu);
    // ReLU6 as Keras exported it: Relu, then Minimum with 6, then Maximum with 0.
    const min = next(relu);
    const max = min && next(min);
    if (min?.op === 'Minimum' && max?.op === 'Maximum' && scalarIs(constantOperand(min, relu, 1), 6) && scalarIs(constantOperand(max, min, 1), 0)) {
      nodes.push(min, max);
      return { nodes, scale, bias, activation: 'Relu6' };
    }
    return { nodes, scale, bias, activation: 'Relu' };
  }

  const removed = new Set<GraphNode>();
  const replaced = new Map<GraphNode, GraphNode>();
  const added: GraphNode[] = [];
  const encode = (s: string) => Buffer.from(s).toString('base64');
  // Channels last only: a per-channel vector then broadcasts over the last axis, as a bias does.
  const channelsLast = (node: GraphNode) => {
    const format = (node.attr?.data_format as { s?: string } | undefined)?.s;
    return format === undefined || Buffer.from(format, 'base64').toString() === 'NHWC';
  };
  for (const conv of topology.node.filter((node) => node.op in FUSED && node.input?.length === 2 && channelsLast(node))) {
    const kernelName = conv.input![1]!;
    const kernel = weights[kernelName];
    if (byName.get(kernelName)?.op !== 'Const' || !kernel || kernel.rank !== 4) continue;
    // Output channels: the kernel's last axis (Conv2D), or its in × multiplier (depthwise).
    const depthwise = conv.op === 'DepthwiseConv2dNative';
    const channels = depthwise ? kernel.shape[2]! * kernel.shape[3]! : kernel.shape[3]!;
    const chain = chainAfter(conv, channels);
    if (!chain) continue;
    let filter = kernelName;
    if (chain.scale) {
      const scale = chain.scale;
      filter = `${kernelName}/folded_scale`;
      weights[filter] = tf.tidy(() => kernel.mul(depthwise ? scale.reshape([kernel.shape[2]!, kernel.shape[3]!]) : scale));
      added.push({ ...byName.get(kernelName)!, name: filter });
    }
    const last = chain.nodes[chain.nodes.length - 1]!;
    const fusedOps = ['BiasAdd', ...(chain.activation ? [chain.activation] : [])];
    replaced.set(conv, {
      ...conv,
      name: last.name,
      op: FUSED[conv.op]!,
      input: [conv.input![0]!, filter, chain.bias],
      attr: { ...conv.attr, fused_ops: { list: { s: fusedOps.map(encode) } }, num_args: { i: '1' } },
    });
    chain.nodes.forEach((node) => removed.add(node));
  }

  const kept = [...topology.node.filter((node) => !removed.has(node)).map((node) => replaced.get(node) ?? node), ...added];
  const used = new Set(kept.flatMap((node) => node.input ?? []));
  const nodes = kept.filter((node) => node.op !== 'Const' || used.has(node.name));
  const named = Object.fromEntries(nodes.filter((node) => node.op === 'Const').map((node) => [node.name, weights[node.name]!]));
  const { data, specs } = await tf.io.encodeWeights(named);
  tf.dispose(Object.values(weights));
  return { ...artifacts, modelTopology: { ...topology, node: nodes }, weightSpecs: specs, weightData: data };
}
