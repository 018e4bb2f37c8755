import type { IncomingMessage, ServerResponse } from 'node:http';
import { securityHeaders } from './responses.transport.ts';

/** Answers a preflight itself ('answered') or lets the pipeline go on ('continue'). */
export type CorsStep = (req: IncomingMessage, res: ServerResponse) => 'answered' | 'continue';

const allowHeaders = 'content-type, accept, authorization, zt-session';
const allowMethods = 'GET, HEAD, POST, PUT, PATCH, DELETE';

function answerPreflight(res: ServerResponse, allow: boolean): 'answered' {
  for (const [name, value] of Object.entries(securityHeaders)) res.setHeader(name, value);
  if (allow) {
    res.setHeader('access-control-allow-headers', allowHeaders);
    res.setHeader('access-control-allow-methods', allowMethods);
  }
  res.statusCode = 200;
  res.end();
  return 'answered';
}

/** CORS as the reference answers it (ZITI-FACTS §1.1): any origin, credentials, preflight 200. */
const anyOrigin: CorsStep = (req, res) => {
  res.setHeader('access-control-allow-origin', req.headers.origin ?? '*');
  res.setHeader('access-control-allow-credentials', 'true');
  res.setHeader('vary', 'Origin');
  if (req.method === 'OPTIONS') return answerPreflight(res, true);
  return 'continue';
};

/**
 * CORS for the gateway. Without a list (`ZITI_CORS_ORIGINS` unset) it answers as the reference
 * does, which the Admin Console served from another origin relies on. With one, only a request
 * whose `Origin` is on it gets the CORS headers (with credentials); any other origin's preflight
 * is answered 200 without allow headers, so the browser refuses the call. Origins are compared as
 * browsers send them (`scheme://host[:port]`, lower case, no default port), which is how the list
 * was normalised when read.
 */
export function corsStep(allowedOrigins?: readonly string[]): CorsStep {
  if (allowedOrigins === undefined) return anyOrigin;
  const allowed = new Set(allowedOrigins);
  return (req, res) => {
    const origin = req.headers.origin;
    const allow = typeof origin === 'string' && allowed.has(origin);
    res.setHeader('vary', 'Origin');
    if (allow) {
      res.setHeader('access-control-allow-origin', origin);
      res.setHeader('access-control-allow-credentials', 'true');
    }
    if (req.method === 'OPTIONS') return answerPreflight(res, allow);
    return 'continue';
  };
}

/**
 * `ZITI_CORS_ORIGINS`: comma-separated origins (`https://console.example.com`,
 * `http://localhost:8080`), each normalised as a browser writes it; undefined when unset. Throws
 * one message naming every item that is not an http(s) origin (by position).
 */
export function parseCorsOrigins(value: string | undefined, name = 'ZITI_CORS_ORIGINS'): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const out: string[] = [];
  const bad: number[] = [];
  items.forEach((item, i) => {
    let url: URL | undefined;
    try {
      url = new URL(item);
    } catch {
      url = undefined;
    }
    const origin =
      url &&
      (url.protocol === 'https:' || url.protocol === 'http:') &&
      url.hostname !== '' &&
      !url.username &&
      !url.password &&
      (url.pathname === '/' || url.pathname === '') &&
      !url.search &&
      !url.hash &&
      // `https://a.example/` is the same origin; `https://a.example/app` is not an origin.
      /^[a-z][a-z0-9+.-]*:\/\/[^/?#]+\/?$/i.test(item)
        ? url.origin
        : undefined;
    if (origin) out.push(origin);
    else bad.push(i + 1);
  });
  if (items.length === 0) throw new Error(`${name} is set but names no origin (unset it to allow any origin)`);
  if (bad.length > 0)
    throw new Error(
      `${name}: item${bad.length > 1 ? 's' : ''} ${bad.join(', ')} of ${items.length} ${bad.length > 1 ? 'are' : 'is'} not an origin (scheme://host[:port], http or https, no path, e.g. https://console.example.com)`,
    );
  return out;
}
