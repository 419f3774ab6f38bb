/**
 * Every `error` an answer of the service can carry, each with its one HTTP status and its meaning: ApiError takes its
 * status from here, and the OpenAPI document's error descriptions (error-body.dto.ts ApiErrorResponse) are written
 * from here. `error-codes.spec.ts` fails when src/ throws a code missing here.
 */
export const ERROR_CODES = {
  invalid_request: { status: 400, meaning: 'a query, path or body parameter is bad, unknown or missing; `details` names each field' },
  invalid_query: {
    status: 400,
    meaning: '`cursor` is not one this service returned, or was made for another `sort`',
  },
  invalid_headers: { status: 400, meaning: "a webhook delivery's headers are missing or bad; `details` names each" },
  invalid_event: { status: 400, meaning: 'a webhook delivery is not a valid Pozy event; nothing is stored' },
  event_id_mismatch: { status: 400, meaning: "the delivery's `X-Pozy-Event-Id` header differs from its body's `id`" },
  malformed_json: { status: 400, meaning: 'the body is not JSON' },
  invalid_encoding: { status: 400, meaning: 'the body is not UTF-8' },
  invalid_url: { status: 400, meaning: 'a %-escape in the path does not decode to UTF-8' },
  cursor_beyond_head: { status: 400, meaning: "a commit names a position past the consumer's partition's newest change" },
  missing_signature: { status: 401, meaning: 'a webhook came without `X-Pozy-Signature` while a secret is set' },
  invalid_signature: { status: 401, meaning: "a webhook's signature matches no secret of its workspace" },
  missing_token: { status: 401, meaning: 'no `Authorization: Bearer <token>` header' },
  invalid_token: { status: 403, meaning: 'the token is not one this endpoint takes' },
  admin_disabled: { status: 403, meaning: 'ADMIN_TOKEN is not set: the admin endpoints are off' },
  consumer_token: { status: 403, meaning: 'a token limited to consumers reads only with `consumer`' },
  consumer_not_allowed: { status: 403, meaning: 'the token may not read this consumer' },
  not_found: { status: 404, meaning: 'no such resource' },
  unknown_workspace: { status: 404, meaning: 'no such workspace is mirrored here' },
  unknown_to_pozy: { status: 404, meaning: 'Pozy does not know the resource, and the mirror never held it' },
  already_pending: { status: 409, meaning: 'a notification of this resource is already waiting to be sent' },
  ambiguous_id: { status: 409, meaning: 'more than one of the workspaces read holds this id; pick one with `workspace`' },
  backfill_running: { status: 409, meaning: 'a backfill is already running; `details.runId` names it' },
  consumer_exists: { status: 409, meaning: 'a consumer of this name exists' },
  cursor_behind_committed: { status: 409, meaning: 'a cursor before the committed position; `details.committed` gives it' },
  encryption_key_required: { status: 409, meaning: 'SECRETS_ENCRYPTION_KEY is not set, and a secret would be stored' },
  environment_workspace: { status: 409, meaning: 'the `default` workspace is defined by the environment (POZY_API_KEY)' },
  not_replayable: { status: 409, meaning: 'the notification changed meanwhile; look at it again' },
  replay_running: { status: 409, meaning: 'a replay of this queue is running; `details.runId` names it' },
  retention_running: { status: 409, meaning: 'a prune is already running on some replica' },
  subscription_deleted: { status: 409, meaning: "the letter's subscription was deleted" },
  superseded: { status: 409, meaning: 'a newer version of the resource has reached the subscriber since' },
  sweep_running: { status: 409, meaning: 'a sweep or the import is running; `details.runId` names it' },
  workspace_exists: { status: 409, meaning: 'the workspace id is taken' },
  workspace_not_active: { status: 409, meaning: 'the workspace is paused or being removed' },
  workspace_removed: { status: 409, meaning: 'the workspace is being removed or detached' },
  cursor_expired: { status: 410, meaning: 'the cursor is older than the changes kept' },
  payload_too_large: { status: 413, meaning: 'a body over 1 MiB' },
  unsupported_media_type: { status: 415, meaning: 'a body that is not `application/json`' },
  unstorable_event: { status: 422, meaning: 'PostgreSQL refuses the spooled event: replaying it cannot store it' },
  internal_error: { status: 500, meaning: 'an unexpected failure; the answer says nothing of internals' },
  pozy_error: { status: 502, meaning: 'Pozy answered unexpectedly; nothing was stored' },
  pozy_unreachable: { status: 502, meaning: 'Pozy could not be reached; nothing was stored' },
  budget_contended: { status: 503, meaning: 'the shared Pozy budget was written by other replicas too many times in a row; retry' },
  database_unavailable: { status: 503, meaning: 'the database does not answer' },
  not_ready: { status: 503, meaning: 'a readiness check fails; `details` has each check with its status' },
  overloaded: { status: 503, meaning: 'no database connection (or no room to wait for one) came free in time; retry later' },
  pozy_rate_limited: { status: 503, meaning: 'Pozy rate limited the key; nothing was stored' },
  query_timeout: { status: 503, meaning: 'a statement ran past QUERY_STATEMENT_TIMEOUT_MS and was stopped' },
  shutting_down: { status: 503, meaning: 'this replica is closing; another replica will answer' },
  status_timeout: { status: 503, meaning: 'a statement reading the status figures ran past its timeout' },
  tokens_unavailable: { status: 503, meaning: 'the copy of the tokens made with `POST /admin/tokens` is too old to tell a revoked one' },
  too_many_waiters: { status: 503, meaning: 'this replica already holds CHANGES_MAX_WAITERS long polls' },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** The status of a code (every code has exactly one). */
export const statusOf = (code: ErrorCode): number => ERROR_CODES[code].status;
