/**
 * The one place that knows where llhttp comes from: the WebAssembly build
 * that undici ships for its own client, read from undici's internal files.
 * Those paths are not undici's public interface, so they are pinned here
 * beside the undici version they were checked against, and
 * test/gateway/llhttp.test.ts fails on any other version until someone
 * has checked the files and the C interface below again
 * (docs/gateway.md, "Why the gateway carries its own HTTP stack").
 */
import { createRequire } from 'node:module';

export const LLHTTP_SOURCE = {
  /** The undici release whose files were checked. */
  undiciVersion: '7.30.2',
  /** The SIMD build, used where the CPU has it (as undici does), and the plain one. */
  simd: 'undici/lib/llhttp/llhttp_simd-wasm.js',
  plain: 'undici/lib/llhttp/llhttp-wasm.js',
} as const;

/** llhttp's C interface, as its WebAssembly build exports it. */
export interface Llhttp {
  memory: WebAssembly.Memory;
  _initialize(): void;
  malloc(size: number): number;
  free(pointer: number): void;
  llhttp_alloc(type: number): number;
  llhttp_free(parser: number): void;
  llhttp_execute(parser: number, data: number, length: number): number;
  llhttp_finish(parser: number): number;
  llhttp_resume_after_upgrade(parser: number): void;
  llhttp_get_error_pos(parser: number): number;
  llhttp_get_error_reason(parser: number): number;
  llhttp_get_http_major(parser: number): number;
  llhttp_get_http_minor(parser: number): number;
  llhttp_get_method(parser: number): number;
  llhttp_method_name(method: number): number;
  llhttp_errno_name(errno: number): number;
}

/** The callbacks llhttp's WebAssembly build imports; each gets the parser's pointer first. */
export interface LlhttpCallbacks {
  wasm_on_message_begin(parser: number): number;
  wasm_on_url(parser: number, at: number, length: number): number;
  wasm_on_status(parser: number, at: number, length: number): number;
  wasm_on_header_field(parser: number, at: number, length: number): number;
  wasm_on_header_value(parser: number, at: number, length: number): number;
  wasm_on_headers_complete(parser: number, statusCode: number, upgrade: number, keepAlive: number): number;
  wasm_on_body(parser: number, at: number, length: number): number;
  wasm_on_message_complete(parser: number): number;
}

const require = createRequire(import.meta.url);

function compile(path: string): WebAssembly.Module {
  let bytes: Buffer<ArrayBuffer>;
  try {
    bytes = require(path) as Buffer<ArrayBuffer>;
  } catch (err) {
    throw new Error(`llhttp is not where undici ${LLHTTP_SOURCE.undiciVersion} kept it (${path}); see src/gateway/http/llhttp.ts: ${(err as Error).message}`);
  }
  return new WebAssembly.Module(bytes);
}

/** A fresh llhttp instance calling `callbacks` (each instance has its own memory). */
export function instantiateLlhttp(callbacks: LlhttpCallbacks): Llhttp {
  let module: WebAssembly.Module;
  try {
    module = compile(LLHTTP_SOURCE.simd);
  } catch {
    module = compile(LLHTTP_SOURCE.plain);
  }
  const exports = new WebAssembly.Instance(module, { env: { ...callbacks } }).exports as unknown as Llhttp;
  exports._initialize();
  return exports;
}
