// The request body at the edge (docs/adr/0019, limits in docs/adr/0013): read within the operation's
// limit, decompressed, and refused with the envelope's codes where body-parser would have refused it.

import type { IncomingMessage } from 'node:http';
import type { Readable, Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { ApiError, type OperationDef, checkJsonDepth } from '@ziti/contracts';

/** The decompressor of a request's Content-Encoding (the encodings HTTP clients send). */
function decompressor(encoding: string): Transform | undefined {
  if (encoding === 'gzip') return createGunzip();
  if (encoding === 'deflate') return createInflate();
  if (encoding === 'br') return createBrotliDecompress();
  return undefined;
}

function tooLarge(limit: number): ApiError {
  return new ApiError('REQUEST_ENTITY_TOO_LARGE', {
    code: 'UNHANDLED',
    message: `the body of this operation may have at most ${limit} bytes`,
  });
}

/** Reads off what is left of a refused request, so its client gets the answer instead of a reset. */
function drainRequest(req: IncomingMessage): Promise<void> {
  if (req.complete || req.destroyed) return Promise.resolve();
  return new Promise<void>((resolve) => {
    req.once('end', resolve);
    req.once('close', resolve);
    req.resume();
  });
}

/**
 * Reads the request body, at most `limit` bytes after any Content-Encoding (gzip, deflate, br). A
 * declared length over the limit is refused before reading (413); an unknown encoding is
 * INVALID_CONTENT_TYPE; a body that ends early or does not decompress is a 400. A refused body is
 * read off before the answer, so the client is not reset mid-upload.
 */
export async function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  // No content-length and no transfer-encoding: HTTP/1.1 has no body to read (most GETs).
  const declared = req.headers['content-length'];
  if (declared === undefined && req.headers['transfer-encoding'] === undefined) return undefined;
  const encoding = (req.headers['content-encoding'] ?? 'identity').toLowerCase();
  let source: Readable = req;
  if (encoding !== 'identity') {
    const inflate = decompressor(encoding);
    if (!inflate) {
      throw new ApiError('INVALID_CONTENT_TYPE', {
        code: 'UNHANDLED',
        message: `unsupported content encoding "${encoding}"`,
      });
    }
    source = req.pipe(inflate);
  } else if (declared !== undefined && Number(declared) > limit) {
    await drainRequest(req);
    throw tooLarge(limit);
  }
  const chunks: Buffer[] = [];
  let received = 0;
  const outcome = await new Promise<Buffer | ApiError>((resolve) => {
    const settle = (result: Buffer | ApiError) => {
      source.removeListener('data', onData);
      source.removeListener('end', onEnd);
      source.removeListener('error', onError);
      req.removeListener('aborted', onAborted);
      req.removeListener('close', onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limit) settle(tooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = () => settle(Buffer.concat(chunks, received));
    const onError = (err: Error) =>
      settle(new ApiError('COULD_NOT_PARSE_BODY', { code: 'UNHANDLED', message: err.message }));
    const onAborted = () =>
      settle(new ApiError('COULD_NOT_PARSE_BODY', { code: 'UNHANDLED', message: 'request aborted' }));
    const onClose = () => {
      if (!req.complete) onAborted();
    };
    source.on('data', onData);
    source.once('end', onEnd);
    source.once('error', onError);
    req.once('aborted', onAborted);
    req.once('close', onClose);
  });
  if (outcome instanceof ApiError) {
    if (source !== req) {
      req.unpipe();
      source.on('error', () => undefined);
      source.destroy();
    }
    await drainRequest(req);
    throw outcome;
  }
  return outcome;
}

/** Whether a body in this content type is read as JSON (an untyped body is). */
export function isJsonType(contentType: string | undefined): boolean {
  return !contentType || /^application\/(.+\+)?json\b/i.test(contentType);
}

/** A JSON body, nesting checked before `JSON.parse` (docs/adr/0013); blank is no body. */
export function parseJson(raw: Buffer): unknown {
  const text = raw.toString('utf8');
  if (text.trim() === '') return undefined;
  checkJsonDepth(text);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ApiError('COULD_NOT_PARSE_BODY', { code: 'UNHANDLED', message: (err as Error).message });
  }
}

/** A body the operation needs in a form it cannot read is refused, never dropped. */
export function unreadableBody(op: OperationDef, contentType: string | undefined): ApiError {
  return new ApiError(
    'INVALID_CONTENT_TYPE',
    {
      code: 'UNHANDLED',
      message: `this operation reads ${op.consumes.join(', ')}, not ${contentType ?? 'an untyped body'}`,
    },
    `The content type supplied is not acceptable: ${contentType}`,
  );
}

export function isEmptyObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0;
}
