/**
 * A small keep-alive HTTPS client for the Edge Client and Management APIs of any controller (ours or
 * the reference): trusts exactly the CA bundle given, loopback only, retries what a busy controller
 * answers with 429 or 503 (bounded), and throws an `EdgeCallError` naming the call otherwise.
 */
import { Agent, request } from 'node:https';

export class EdgeCallError extends Error {
  constructor(
    readonly method: string,
    readonly path: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`${method} ${path}: ${status} ${body.slice(0, 600)}`);
    this.name = 'EdgeCallError';
  }
}

export interface EdgeAnswer {
  status: number;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- API bodies are inspected freely
  json: any;
}

export interface EdgeCall {
  method?: string;
  token?: string;
  body?: unknown;
  /** A body sent as is (e.g. a PEM), with its content type. */
  rawBody?: string;
  contentType?: string;
  /** Sent once: a 429 or 503 is answered as it came (a timed loop counts it instead of waiting it out). */
  noRetry?: boolean;
}

export class EdgeApi {
  private readonly agent: Agent;
  private readonly base: URL;

  constructor(
    readonly apiUrl: string,
    readonly ca: string,
    options: { maxSockets?: number } = {},
  ) {
    this.base = new URL(apiUrl);
    if (!['127.0.0.1', 'localhost'].includes(this.base.hostname)) throw new Error('benchmarks talk to loopback only');
    this.agent = new Agent({ keepAlive: true, maxSockets: options.maxSockets ?? 32, ca, servername: 'localhost' });
  }

  /** One call to `/edge/<api>/v1<path>`; 429 and 503 are retried up to 8 times with a growing pause. */
  async request(api: 'client' | 'management', path: string, call: EdgeCall = {}): Promise<EdgeAnswer> {
    for (let attempt = 0; ; attempt++) {
      const answer = await this.once(api, path, call);
      if (call.noRetry || (answer.status !== 429 && answer.status !== 503) || attempt >= 8) return answer;
      await new Promise((r) => setTimeout(r, 50 * 2 ** Math.min(attempt, 5)));
    }
  }

  /** Like `request`, but anything other than `expect` throws; returns `data`. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- API bodies are inspected freely
  async data(api: 'client' | 'management', path: string, call: EdgeCall = {}, expect = [200, 201]): Promise<any> {
    const answer = await this.request(api, path, call);
    if (!expect.includes(answer.status)) {
      throw new EdgeCallError(call.method ?? 'GET', `/edge/${api}/v1${path}`, answer.status, answer.text);
    }
    return answer.json?.data;
  }

  /** POST that must answer 201; the new id. */
  async create(path: string, token: string, body: unknown): Promise<string> {
    const data = await this.data('management', path, { method: 'POST', token, body }, [201]);
    return data.id as string;
  }

  /** Password login on the client API; the API session token. */
  async login(username: string, password: string): Promise<string> {
    const data = await this.data('client', '/authenticate?method=password', {
      method: 'POST',
      body: { username, password },
    });
    return data.token as string;
  }

  /** `meta.pagination.totalCount` of a management list. */
  async count(path: string, token: string): Promise<number> {
    const answer = await this.request('management', path, { token });
    if (answer.status !== 200) throw new EdgeCallError('GET', path, answer.status, answer.text);
    return Number(answer.json.meta.pagination.totalCount);
  }

  close(): void {
    this.agent.destroy();
  }

  private once(api: 'client' | 'management', path: string, call: EdgeCall): Promise<EdgeAnswer> {
    const body =
      call.rawBody !== undefined
        ? Buffer.from(call.rawBody)
        : call.body !== undefined
          ? Buffer.from(JSON.stringify(call.body))
          : undefined;
    const headers: Record<string, string> = {};
    if (call.token) headers['zt-session'] = call.token;
    if (body) {
      headers['content-type'] = call.contentType ?? 'application/json';
      headers['content-length'] = String(body.length);
    }
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: this.base.hostname,
          port: this.base.port,
          method: call.method ?? 'GET',
          path: `/edge/${api}/v1${path}`,
          headers,
          agent: this.agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let json: unknown;
            try {
              json = text ? JSON.parse(text) : undefined;
            } catch {
              json = undefined;
            }
            resolve({ status: res.statusCode ?? 0, text, json });
          });
          res.on('error', reject);
        },
      );
      req.setTimeout(30_000, () => req.destroy(new Error(`${call.method ?? 'GET'} ${path}: no answer in 30 s`)));
      req.on('error', reject);
      if (body) req.write(body);
      req.end();
    });
  }
}
