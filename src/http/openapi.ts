import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { applyDecorators } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { ApiBearerAuth, ApiSecurity, DocumentBuilder, type OpenAPIObject, type OperationObject, SwaggerModule } from '@nestjs/swagger';
import { ApiErrorResponse } from '../common/error-body.dto';
import { REPLICA_LAG_HEADER, REPLICA_LAG_SAMPLE_MS, REPLICA_READ_EXTENSION } from '../common/read-consistency';

/** The security scheme of the admin endpoints: `Authorization: Bearer <ADMIN_TOKEN>`. */
export const ADMIN_SECURITY = 'admin';

/**
 * The security scheme of the query and status endpoints: `Authorization: Bearer <one of API_TOKENS, ADMIN_TOKEN, or a
 * token made with POST /admin/tokens>`.
 */
export const READ_SECURITY = 'read';

/** Swagger UI; the document itself is at `/docs-json`. */
export const DOCS_PATH = '/docs';
export const DOCS_JSON_PATH = '/docs-json';

/** On a controller guarded by AdminTokenGuard: the bearer token scheme, and the 401 and 403 each of its endpoints can answer. */
export const ApiAdminAuth = (): MethodDecorator & ClassDecorator =>
  applyDecorators(
    ApiBearerAuth(ADMIN_SECURITY),
    ApiErrorResponse({ missing_token: 'no `Authorization: Bearer <ADMIN_TOKEN>` header' }),
    ApiErrorResponse({ invalid_token: 'the token is not ADMIN_TOKEN', admin_disabled: 'ADMIN_TOKEN is not set' }),
  );

/** On a route guarded by ReadTokenGuard (common/read-access.ts): the read scheme, and its 401 and 403. */
export const ApiReadAuth = (): MethodDecorator & ClassDecorator =>
  applyDecorators(
    ApiBearerAuth(READ_SECURITY),
    ApiErrorResponse({
      missing_token: 'API_TOKENS is set, or a token made with `POST /admin/tokens` is live, and no `Authorization: Bearer <token>` header came',
    }),
    ApiErrorResponse({ invalid_token: 'the token is not one of API_TOKENS, nor ADMIN_TOKEN, nor a live token made with `POST /admin/tokens`' }),
  );

/** On a status route (StatusAccessGuard): the read scheme or none, since STATUS_PUBLIC=true lets anonymous requests in. */
export const ApiStatusAuth = (): MethodDecorator & ClassDecorator =>
  applyDecorators(
    ApiBearerAuth(READ_SECURITY),
    // An empty requirement: OpenAPI's way to say that no token is also accepted.
    ApiSecurity({}),
    ApiErrorResponse({ missing_token: 'STATUS_PUBLIC=false and no `Authorization: Bearer <token>` header came' }),
    ApiErrorResponse({
      invalid_token: 'a token came that is not one of API_TOKENS, nor ADMIN_TOKEN, nor a live token made with `POST /admin/tokens`',
    }),
  );

/** The version in package.json (one directory above src/ and dist/ alike). */
function packageVersion(): string {
  const { version } = JSON.parse(readFileSync(join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
  return version;
}

/**
 * The OpenAPI document of every controller, built from their decorators, as JSON at `/docs-json` and as Swagger UI
 * at `/docs` (its files served by @fastify/static). All are GET routes: the JSON body parser never sees them.
 */
export function setupOpenApi(app: NestFastifyApplication): void {
  const config = new DocumentBuilder()
    .setTitle('pozy-sync')
    .setDescription("A PostgreSQL mirror of a Pozy workspace's posts and accounts, kept correct from Pozy's webhooks and API.")
    .setVersion(packageVersion())
    // An opaque token, not the JWT that DocumentBuilder's default bearerFormat says.
    .addBearerAuth({ type: 'http', scheme: 'bearer', bearerFormat: undefined, description: 'ADMIN_TOKEN' }, ADMIN_SECURITY)
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: undefined,
        description:
          'One of API_TOKENS, or ADMIN_TOKEN. Or a token made with `POST /admin/tokens`, which reads only its workspaces (and the status without resource ids or error texts, unless it reads every one). ' +
          'With API_TOKENS unset and no such token live the query endpoints need none; without one, the status endpoints answer only with STATUS_PUBLIC=true, and then without resource ids or error texts.',
      },
      READ_SECURITY,
    )
    .build();
  const document = documentReplicaReads(SwaggerModule.createDocument(app, config));
  SwaggerModule.setup(DOCS_PATH, app, document, { jsonDocumentUrl: DOCS_JSON_PATH, raw: ['json'] });
}

/**
 * The lag header on every answer of an operation marked by `@ReplicaRead()` (Nest's response decorators cannot add a
 * header to responses declared by others); the 400s read nothing and carry none.
 */
function documentReplicaReads(document: OpenAPIObject): OpenAPIObject {
  for (const path of Object.values(document.paths)) {
    for (const operation of Object.values(path) as Array<OperationObject & Record<string, unknown>>) {
      if (typeof operation !== 'object' || operation === null || operation[REPLICA_READ_EXTENSION] !== true) continue;
      delete operation[REPLICA_READ_EXTENSION];
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (status === '400' || response === undefined || '$ref' in response) continue;
        response.headers = {
          ...response.headers,
          [REPLICA_LAG_HEADER]: {
            description:
              'Present when the answer was read from the read replica (DATABASE_READ_URL, `consistency=eventual`): how far its ' +
              `replay was behind the primary, in ms (0: it had everything the primary had at its last sample, taken every ${REPLICA_LAG_SAMPLE_MS} ms). ` +
              'Absent when read from the primary.',
            schema: { type: 'integer', minimum: 0 },
          },
        };
      }
    }
  }
  return document;
}
