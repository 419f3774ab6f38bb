/** A JSON object as an answer carries it. */
export type Json = Record<string, unknown>;

/** What the service answered, read whole: `{ status, body }` to toEqual, with its text and headers beside. */
export interface Answer<T = Json> {
  status: number;
  headers: Headers;
  text: string;
  /** The body as JSON (`{}` when empty); reading it fails the test when the body is not JSON. */
  readonly body: T;
}

export interface RequestOptions extends RequestInit {
  /** Sent as `authorization: Bearer <token>`. */
  token?: string;
  /** A body sent as JSON (with its content type). */
  json?: unknown;
}

/** Where a request goes: a base URL, a running service, or a harness (its service). */
export type Target = string | { baseUrl: string } | { service: { baseUrl: string } };

function baseUrlOf(target: Target): string {
  if (typeof target === 'string') return target;
  return 'baseUrl' in target ? target.baseUrl : target.service.baseUrl;
}

/** One request to the service on loopback, its answer read whole (status, headers, text, and the JSON body). */
export async function request<T = Json>(target: Target, path: string, options: RequestOptions = {}): Promise<Answer<T>> {
  const { token, json, headers: given, ...init } = options;
  const headers = new Headers(given);
  if (token !== undefined && !headers.has('authorization')) headers.set('authorization', `Bearer ${token}`);
  if (json !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
  const response = await fetch(`${baseUrlOf(target)}${path}`, { ...init, headers, body: json !== undefined ? JSON.stringify(json) : init.body });
  const text = await response.text();
  let parsed: { body: T } | undefined;
  const answer = {
    status: response.status,
    get body(): T {
      if (!parsed) {
        try {
          parsed = { body: (text === '' ? {} : JSON.parse(text)) as T };
        } catch {
          throw new Error(`${init.method ?? 'GET'} ${path} answered ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`);
        }
      }
      return parsed.body;
    },
  };
  // Not enumerable: an answer compares (toEqual) and prints as its status and body.
  Object.defineProperties(answer, { text: { value: text }, headers: { value: response.headers } });
  return answer as Answer<T>;
}

export const getJson = <T = Json>(target: Target, path: string, options: RequestOptions = {}) =>
  request<T>(target, path, { ...options, method: 'GET' });

export const postJson = <T = Json>(target: Target, path: string, json?: unknown, options: RequestOptions = {}) =>
  request<T>(target, path, { ...options, method: 'POST', json });

/** Requests to one service, its base URL read at each call (so it can be made before the service starts). */
export interface Http {
  request<T = Json>(path: string, options?: RequestOptions): Promise<Answer<T>>;
  get<T = Json>(path: string, options?: RequestOptions): Promise<Answer<T>>;
  post<T = Json>(path: string, json?: unknown, options?: RequestOptions): Promise<Answer<T>>;
}

export function httpTo(target: Target | (() => Target)): Http {
  const at = () => (typeof target === 'function' ? target() : target);
  return {
    request: (path, options) => request(at(), path, options),
    get: (path, options) => getJson(at(), path, options),
    post: (path, json, options) => postJson(at(), path, json, options),
  };
}
