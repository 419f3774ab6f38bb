import createClient, { type Client } from 'openapi-fetch';
import type { components, paths } from './schema';

export type { components, paths } from './schema';

/** The service's schemas by name, as its OpenAPI document declares them. */
export type Schemas = components['schemas'];
export type Change = Schemas['ChangeResponse'];
export type ChangeType = Change['type'];
export type ChangePage = Schemas['ChangePageResponse'];
export type Post = Schemas['MirroredPostResponse'];
export type Account = Schemas['MirroredAccountResponse'];
/** Every error answer: `error` is the stable code (`invalid_request`, `cursor_expired`, …), `message` is for people. */
export type ErrorBody = Schemas['ErrorBody'];

/** A client whose every call is typed from the service's OpenAPI document (openapi-fetch). */
export type PozySyncClient = Client<paths>;

export interface PozySyncClientOptions {
  /** The service's base URL, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** A read token (API_TOKENS, or one made with POST /admin/tokens), or ADMIN_TOKEN for /admin; sent as a bearer token. */
  token?: string;
  /** Headers sent with every request. */
  headers?: Record<string, string>;
  /** Another fetch (tests, proxies); defaults to the global one. */
  fetch?: (input: Request) => Promise<Response>;
}

/**
 * A typed client: `client.GET('/posts/{id}', { params: { path: { id } } })` answers `{ data }` or `{ error }`, each
 * typed from the document; `unwrap` turns the error into a thrown PozySyncError.
 */
export function createPozySyncClient(options: PozySyncClientOptions): PozySyncClient {
  return createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...options.headers, ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }) },
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
}

/** An error answer of the service, with its status and its stable `error` code. */
export class PozySyncError extends Error {
  readonly status: number;
  /** The service's `error` code; `http_<status>` when the body was not the service's error shape (a proxy's page). */
  readonly code: string;
  readonly details: unknown;

  constructor(status: number, body: unknown) {
    const error = isErrorBody(body) ? body : undefined;
    super(error ? `${status} ${error.error}: ${error.message}` : `HTTP ${status}`);
    this.name = 'PozySyncError';
    this.status = status;
    this.code = error?.error ?? `http_${status}`;
    this.details = error?.details;
  }

  /** Worth trying again later: the service is busy, starting, or stopping. */
  get retryable(): boolean {
    return this.status === 429 || this.status >= 500;
  }
}

function isErrorBody(body: unknown): body is ErrorBody {
  return (
    typeof body === 'object' && body !== null && typeof (body as ErrorBody).error === 'string' && typeof (body as ErrorBody).message === 'string'
  );
}

/** openapi-fetch's answer to one call: its data, or its error, and the response. */
interface CallResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The data of a successful call; a PozySyncError carrying the service's error code otherwise. */
export async function unwrap<T>(call: Promise<CallResult<T>> | CallResult<T>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok || error !== undefined) throw new PozySyncError(response.status, error);
  return data as T;
}
