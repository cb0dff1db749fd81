/** The part of http-parser-js (a pure-JS parser with the interface of Node's own) the gateway uses. */
declare module 'http-parser-js' {
  export interface ParsedInfo {
    versionMajor: number;
    versionMinor: number;
    /** Alternating names and values, as received. */
    headers: string[];
    /** Index into HTTPParser.methods (requests). */
    method: number;
    url: string;
    statusCode: number;
    statusMessage: string;
    upgrade: boolean;
    shouldKeepAlive: boolean;
  }

  export class HTTPParser {
    static readonly REQUEST: 'REQUEST';
    static readonly RESPONSE: 'RESPONSE';
    static readonly kOnHeadersComplete: 2;
    static readonly kOnBody: 3;
    static readonly kOnMessageComplete: 4;
    static readonly methods: string[];
    constructor(type: 'REQUEST' | 'RESPONSE');
    maxHeaderSize: number;
    /** The parser's state machine step ('REQUEST_LINE', 'HEADER', 'BODY_SIZED', …). */
    state: string;
    /** A line received in part. */
    line: string;
    /** What is left of the current chunk or sized body. */
    body_bytes: number | null;
    trailers: string[];
    consumeLine(): string | undefined;
    parseHeader(line: string, headers: string[]): void;
    execute(chunk: Buffer): number | Error;
    finish(): void | Error;
    [HTTPParser.kOnHeadersComplete]: (info: ParsedInfo) => boolean | void;
    [HTTPParser.kOnBody]: (chunk: Buffer, start: number, length: number) => void;
    [HTTPParser.kOnMessageComplete]: () => void;
  }
  const exported: { HTTPParser: typeof HTTPParser };
  export default exported;
}
