import { request as httpsRequest } from 'node:https';

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  raw: Buffer;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- test bodies are inspected freely
  json: any;
}

export interface HttpRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
  rawBody?: string | Buffer;
  /** PEM client certificate and key for mutual TLS. */
  cert?: string;
  key?: string;
  /**
   * A stream (`text/event-stream`) never ends: answer with the status and headers once a 200 stream
   * starts, and close it. Any other answer is read to its end as usual.
   */
  streamHead?: boolean;
}

/** A minimal HTTPS client for tests: trusts exactly the controller's CA bundle, loopback only. */
export function createHttpClient(baseUrl: string, ca: string | undefined) {
  const base = new URL(baseUrl);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(base.hostname)) throw new Error('tests talk to loopback only');
  return async function send(req: HttpRequest): Promise<HttpResponse> {
    const body =
      req.rawBody !== undefined
        ? Buffer.from(req.rawBody)
        : req.body !== undefined
          ? Buffer.from(JSON.stringify(req.body))
          : undefined;
    const headers: Record<string, string> = { ...(req.headers ?? {}) };
    if (req.body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
      headers['content-type'] = 'application/json';
    }
    if (body) headers['content-length'] = String(body.length);
    return new Promise<HttpResponse>((resolve, reject) => {
      const r = httpsRequest(
        {
          host: base.hostname,
          port: base.port,
          method: req.method ?? 'GET',
          path: req.path,
          headers,
          ...(ca ? { ca } : { rejectUnauthorized: false }),
          ...(req.cert ? { cert: req.cert, key: req.key } : {}),
          servername: 'localhost',
          agent: false,
        },
        (res) => {
          const type = String(res.headers['content-type'] ?? '');
          if (req.streamHead && res.statusCode === 200 && type.startsWith('text/event-stream')) {
            resolve({ status: 200, headers: res.headers, text: '', raw: Buffer.alloc(0), json: undefined });
            res.destroy();
            return;
          }
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const raw = Buffer.concat(chunks);
            const text = raw.toString('utf8');
            let json: unknown;
            if (/json/.test(String(res.headers['content-type'] ?? '')) && text.length > 0) {
              try {
                json = JSON.parse(text);
              } catch {
                json = undefined;
              }
            }
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text, raw, json });
          });
          res.on('error', reject);
        },
      );
      r.on('error', reject);
      if (body) r.write(body);
      r.end();
    });
  };
}
