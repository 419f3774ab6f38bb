import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RequestMethod } from '@nestjs/common';
import { GUARDS_METADATA, HTTP_CODE_METADATA, METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, ModulesContainer } from '@nestjs/core';
import type { OpenAPIObject, OperationObject, ReferenceObject, ResponseObject } from '@nestjs/swagger';
import { AdminTokenGuard } from '../src/common/admin-token.guard';
import { ERROR_CODES, ErrorCode } from '../src/common/error-codes';
import { ReadTokenGuard, StatusAccessGuard } from '../src/common/read-access';
import { RunningService } from './support/service';
import { ServiceSpec, startSpec } from './support/spec';

const ADMIN_TOKEN = 'admin_test_token_openapi';
const { version } = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string };

/** One route, as `METHOD /path/{param}` (OpenAPI's template syntax). */
interface Route {
  method: string;
  path: string;
}

/** A controller route, with what Nest's decorators say about it. */
interface ControllerRoute extends Route {
  /** Nest's own form, `/path/:param`, as Fastify registers it. */
  nestPath: string;
  controller: string;
  /** Which token guards it: the admin token, a read token, a read token unless STATUS_PUBLIC, or none. */
  access: 'admin' | 'read' | 'status' | 'open';
  /** The status Nest answers on success: @HttpCode, else 201 for POST and 200 for the rest. */
  successStatus: number;
}

const key = (route: Route) => `${route.method} ${route.path}`;
const toTemplate = (path: string) => path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const joinPath = (...parts: string[]) => `/${parts.join('/')}`.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
/** The documentation's own routes: Swagger UI and its files, and the document. */
const isDocsRoute = (path: string) => /^\/docs(?:$|[/-])/.test(path);
const IGNORED_METHODS = new Set(['HEAD', 'OPTIONS']);

/**
 * Every route of every controller Nest knows, from the metadata its decorators record (what Nest's router reads
 * to register them with Fastify), found with Nest's DiscoveryService.
 */
function controllerRoutes(service: RunningService): ControllerRoute[] {
  const discovery = new DiscoveryService(service.app.get(ModulesContainer));
  const scanner = new MetadataScanner();
  const routes: ControllerRoute[] = [];
  for (const wrapper of discovery.getControllers()) {
    const controller = wrapper.metatype as (new (...args: never[]) => object) | null;
    if (!controller) continue;
    const prototype = controller.prototype as Record<string, unknown>;
    const classGuards = (Reflect.getMetadata(GUARDS_METADATA, controller) as unknown[] | undefined) ?? [];
    const prefixes = [(Reflect.getMetadata(PATH_METADATA, controller) as string | string[] | undefined) ?? ''].flat();
    for (const name of scanner.getAllMethodNames(prototype)) {
      const handler = prototype[name] as object;
      const paths = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
      if (paths === undefined) continue;
      const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod];
      const guards = [...classGuards, ...((Reflect.getMetadata(GUARDS_METADATA, handler) as unknown[] | undefined) ?? [])];
      const successStatus = (Reflect.getMetadata(HTTP_CODE_METADATA, handler) as number | undefined) ?? (method === 'POST' ? 201 : 200);
      for (const prefix of prefixes) {
        for (const path of [paths].flat()) {
          const nestPath = joinPath(prefix, path);
          routes.push({
            method,
            path: toTemplate(nestPath),
            nestPath,
            controller: `${controller.name}.${name}`,
            access: guards.includes(AdminTokenGuard)
              ? 'admin'
              : guards.includes(ReadTokenGuard)
                ? 'read'
                : guards.includes(StatusAccessGuard)
                  ? 'status'
                  : 'open',
            successStatus,
          });
        }
      }
    }
  }
  return routes;
}

/**
 * Every route the Fastify server serves, controllers' or not, read from its router's tree
 * (`printRoutes({ commonPrefix: false })`): each line is a node whose path continues its parent's, with the
 * methods it answers, e.g. `│   └── /:id (GET, HEAD)`.
 */
function servedRoutes(service: RunningService): Route[] {
  const tree = service.app.getHttpAdapter().getInstance().printRoutes({ commonPrefix: false });
  const routes: Route[] = [];
  const ancestors: string[] = [];
  for (const line of tree.split('\n')) {
    if (line.trim() === '') continue;
    const node = /^((?:│ {3}| {4})*)(?:├── |└── )(.*?)(?: \(([A-Z, -]+)\)(?: \{.*\})?)?$/.exec(line);
    if (!node) throw new Error(`Unexpected line in Fastify's route tree: ${JSON.stringify(line)}`);
    const depth = node[1].length / 4;
    const path = (ancestors[depth - 1] ?? '') + node[2];
    ancestors.length = depth;
    ancestors.push(path);
    for (const method of (node[3] ?? '').split(', ')) if (/^[A-Z]+$/.test(method)) routes.push({ method, path: toTemplate(path) });
  }
  return routes;
}

/**
 * The routes of `routes` not in `among`, compared by shape: parameter names do not change what a route serves
 * (and Fastify's tree shows a position's different names as `:a|:b`).
 */
function missing(routes: Route[], among: Route[]): Route[] {
  const shape = (route: Route) => `${route.method} ${route.path.replace(/\{[^}/]*\}|:[^/]+/g, '{}')}`;
  const present = new Set(among.map(shape));
  return routes.filter((route) => !present.has(shape(route)));
}

const missingFromDocument = (routes: Route[], document: OpenAPIObject) => missing(routes, documentedRoutes(document));

function documentedRoutes(document: OpenAPIObject): Route[] {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((method) => ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'].includes(method))
      .map((method) => ({ method: method.toUpperCase(), path })),
  );
}

function operation(document: OpenAPIObject, route: Route): OperationObject {
  const item = document.paths[route.path] as Record<string, OperationObject> | undefined;
  const found = item?.[route.method.toLowerCase()];
  if (!found) throw new Error(`${key(route)} is not in the document`);
  return found;
}

const responseSchemaRef = (response: ResponseObject | ReferenceObject | undefined) =>
  ((response as ResponseObject | undefined)?.content?.['application/json']?.schema as ReferenceObject | undefined)?.$ref;

describe('OpenAPI document and Swagger UI', () => {
  let spec: ServiceSpec;
  let service: RunningService;
  let document: OpenAPIObject;
  let controllers: ControllerRoute[];
  let served: Route[];

  beforeAll(async () => {
    spec = await startSpec('openapi', { env: { ROLE: 'api', ADMIN_TOKEN } });
    service = spec.service;
    const response = await fetch(`${service.baseUrl}/docs-json`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    document = (await response.json()) as OpenAPIObject;
    controllers = controllerRoutes(service).filter((route) => !IGNORED_METHODS.has(route.method));
    served = servedRoutes(service).filter((route) => !IGNORED_METHODS.has(route.method) && !isDocsRoute(route.path));
  });

  afterAll(async () => {
    await spec?.close();
  });

  it('answers GET /docs-json with an OpenAPI 3 document of pozy-sync and its admin bearer scheme', () => {
    expect(document.openapi).toMatch(/^3\.\d+\.\d+$/);
    expect(document.info).toMatchObject({ title: 'pozy-sync', version });
    expect(document.info.description).toEqual(expect.any(String));
    expect(document.components?.securitySchemes?.admin).toMatchObject({ type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' });
  });

  describe('coverage: every route the server serves is documented', () => {
    it('finds the controller routes, and the server serves each of them', () => {
      // Sanity of the enumeration: a few routes that must be there.
      expect(controllers.map(key)).toEqual(
        expect.arrayContaining(['POST /webhooks/pozy', 'GET /posts/{id}', 'POST /admin/resync/posts/{id}', 'GET /health/live']),
      );
      const fastify = service.app.getHttpAdapter().getInstance();
      const notServed = controllers.filter((route) => !fastify.hasRoute({ method: route.method, url: route.nestPath }));
      expect(notServed).toEqual([]);
      // ...and the route tree, read independently, holds them all.
      expect(missing(controllers, served).map(key)).toEqual([]);
    });

    it('documents every controller route, under its own path and method', () => {
      const documented = new Set(documentedRoutes(document).map(key));
      const missing = controllers.filter((route) => !documented.has(key(route))).map((route) => `${key(route)} (${route.controller})`);
      expect(missing).toEqual([]);
    });

    it("documents every route in Fastify's route tree, controllers' or not", () => {
      expect(served.length).toBeGreaterThanOrEqual(controllers.length);
      expect(missingFromDocument(served, document).map(key)).toEqual([]);
    });

    it('documents nothing the server does not serve', () => {
      expect(missing(documentedRoutes(document), served).map(key)).toEqual([]);
    });

    it('would notice an undocumented route', () => {
      expect(
        missingFromDocument(
          [
            { method: 'GET', path: '/posts/{id}/versions' },
            { method: 'DELETE', path: '/posts' },
          ],
          document,
        ),
      ).toHaveLength(2);
    });

    it("documents each route's path parameters and its success status as Nest answers it", () => {
      for (const route of controllers) {
        const op = operation(document, route);
        const pathParams = [...route.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
        const documentedParams = (op.parameters ?? [])
          .filter((p) => 'in' in p && p.in === 'path')
          .map((p) => (p as { name: string }).name)
          .sort();
        expect({ route: key(route), params: documentedParams }).toEqual({ route: key(route), params: pathParams });
        const success = Object.keys(op.responses).filter((status) => /^2\d\d$/.test(status));
        expect({ route: key(route), success }).toEqual({ route: key(route), success: [String(route.successStatus)] });
        // A 204 has no body to type.
        if (route.successStatus === 204) continue;
        const content = (op.responses[String(route.successStatus)] as ResponseObject).content;
        expect({ route: key(route), typed: Object.values(content ?? {}).some((media) => media.schema !== undefined) }).toEqual({
          route: key(route),
          typed: true,
        });
      }
    });
  });

  it('requires the admin bearer token, and documents 401 and 403, on every admin endpoint (and only there)', () => {
    const admin = controllers.filter((route) => route.access === 'admin');
    expect(admin.length).toBeGreaterThan(10);
    // Everything under /admin is guarded.
    expect(controllers.filter((route) => route.path.startsWith('/admin/') && route.access !== 'admin').map(key)).toEqual([]);
    for (const route of admin) {
      const op = operation(document, route);
      expect({ route: key(route), security: op.security }).toEqual({ route: key(route), security: [{ admin: [] }] });
      for (const status of ['401', '403']) {
        expect({ route: key(route), status, schema: responseSchemaRef(op.responses[status]) }).toEqual({
          route: key(route),
          status,
          schema: '#/components/schemas/ErrorBody',
        });
      }
    }
  });

  it('documents the read scheme on the query endpoints, optional on the status ones, and none elsewhere', () => {
    expect(document.components?.securitySchemes?.read).toMatchObject({
      type: 'http',
      scheme: 'bearer',
      description: expect.stringMatching(/^One of API_TOKENS, or ADMIN_TOKEN\./),
    });
    const guarded = (access: ControllerRoute['access']) =>
      controllers
        .filter((route) => route.access === access)
        .map(key)
        .sort();
    expect(guarded('read')).toEqual([
      'GET /accounts',
      'GET /accounts/{id}',
      'GET /accounts/{id}/history',
      'GET /changes',
      'GET /changes/head',
      'GET /posts',
      'GET /posts/{id}',
      'GET /posts/{id}/history',
      'POST /changes/commit',
    ]);
    expect(guarded('status')).toEqual(['GET /', 'GET /sync/status']);
    const expected = { read: [{ read: [] }], status: [{ read: [] }, {}], open: undefined };
    for (const route of controllers.filter((r) => r.access !== 'admin')) {
      const op = operation(document, route);
      expect({ route: key(route), security: op.security }).toEqual({ route: key(route), security: expected[route.access as keyof typeof expected] });
      if (route.access === 'open') continue;
      for (const status of ['401', '403']) {
        expect({ route: key(route), status, schema: responseSchemaRef(op.responses[status]) }).toEqual({
          route: key(route),
          status,
          schema: '#/components/schemas/ErrorBody',
        });
      }
    }
  });

  it('gives every operation a summary and its error answers, with the one error schema', () => {
    const problems: string[] = [];
    for (const route of documentedRoutes(document)) {
      const op = operation(document, route);
      if (!op.summary?.trim()) problems.push(`${key(route)}: no summary`);
      if (!op.tags?.length) problems.push(`${key(route)}: no tag`);
      const errors = Object.keys(op.responses).filter((status) => /^[45]\d\d$/.test(status));
      for (const status of errors) {
        if (responseSchemaRef(op.responses[status]) !== '#/components/schemas/ErrorBody')
          problems.push(`${key(route)}: ${status} is not an ErrorBody`);
        if (!(op.responses[status] as ResponseObject).description) problems.push(`${key(route)}: ${status} has no description`);
      }
      // The liveness probe cannot fail but by not answering.
      if (key(route) === 'GET /health/live') continue;
      if (errors.length === 0) problems.push(`${key(route)}: no error answer documented`);
      // Whatever takes input (parameters, a body) or a token can be refused: a 4xx says how.
      const takesInput = (op.parameters?.length ?? 0) > 0 || op.requestBody !== undefined || op.security !== undefined;
      if (takesInput && !errors.some((status) => status.startsWith('4'))) problems.push(`${key(route)}: no 4xx documented`);
    }
    expect(problems).toEqual([]);
    expect(document.components?.schemas?.ErrorBody).toMatchObject({
      required: ['statusCode', 'error', 'message'],
      properties: { statusCode: { type: 'integer' }, error: { type: 'string' }, message: { type: 'string' }, details: expect.any(Object) },
    });
  });

  it('names in each error answer the codes of the registry (src/common/error-codes.ts) that answer with its status', () => {
    const problems: string[] = [];
    for (const route of documentedRoutes(document)) {
      const op = operation(document, route);
      for (const status of Object.keys(op.responses).filter((s) => /^[45]\d\d$/.test(s))) {
        const description = (op.responses[status] as ResponseObject).description;
        // Each code opens a sentence of its own: "`code`: what it means here."
        const codes = [...description.matchAll(/(?:^|\. )`([a-z_]+)`: /g)].map((m) => m[1]);
        if (codes.length === 0) problems.push(`${key(route)} ${status}: names no code`);
        for (const code of codes) {
          const registered = ERROR_CODES[code as ErrorCode] as { status: number } | undefined;
          if (registered?.status !== Number(status))
            problems.push(`${key(route)} ${status}: \`${code}\` is ${registered ? registered.status : 'not in ERROR_CODES'}`);
        }
      }
    }
    expect(problems).toEqual([]);
  });

  it('documents the webhook: its raw JSON envelope, its delivery headers, and its refusals', () => {
    const op = operation(document, { method: 'POST', path: '/webhooks/pozy' });
    const headers = (op.parameters ?? []).filter((p) => 'in' in p && p.in === 'header').map((p) => (p as { name: string }).name);
    expect(headers).toEqual(expect.arrayContaining(['X-Pozy-Signature', 'X-Pozy-Event-Id', 'X-Pozy-Attempt']));
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '413', '415']));
    const body = op.requestBody as { content: Record<string, { schema: ReferenceObject }> };
    const envelope = document.components?.schemas?.[body.content['application/json'].schema.$ref.split('/').pop() ?? ''];
    expect(envelope).toMatchObject({
      required: ['id', 'event', 'timestamp'],
      properties: {
        id: { type: 'string' },
        event: { type: 'string' },
        timestamp: { type: 'string', format: 'date-time' },
        post: { type: 'object', additionalProperties: true, required: ['id'] },
        account: { type: 'object', additionalProperties: true, required: ['accountId', 'profileId'] },
      },
    });
  });

  it('serves Swagger UI at GET /docs, with the files its page loads', async () => {
    const page = await fetch(`${service.baseUrl}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await page.text();
    expect(html).toContain('swagger-ui');
    const files = [...html.matchAll(/(?:src|href)="\.\/(docs\/[^"]+)"/g)].map((m) => m[1]);
    expect(files).toEqual(expect.arrayContaining(['docs/swagger-ui.css', 'docs/swagger-ui-bundle.js', 'docs/swagger-ui-init.js']));
    for (const file of files) {
      const response = await fetch(`${service.baseUrl}/${file}`);
      expect({ file, status: response.status }).toEqual({ file, status: 200 });
      expect((await response.arrayBuffer()).byteLength).toBeGreaterThan(0);
    }
    // The page is initialised with this very document.
    expect(await (await fetch(`${service.baseUrl}/docs/swagger-ui-init.js`)).text()).toContain('"title": "pozy-sync"');
  });
  it("is the document @pozy-sync/client's types were generated from: a route or schema changed without `npm run client:generate` fails here", () => {
    const client = join(__dirname, '..', 'packages', 'client');
    const scratch = mkdtempSync(join(tmpdir(), 'pozy-openapi-drift-'));
    try {
      writeFileSync(join(scratch, 'served.json'), JSON.stringify(document));
      execFileSync(process.execPath, [join(client, 'scripts', 'generate.js'), '--document', join(scratch, 'served.json'), '--out', scratch], {
        stdio: 'pipe',
      });
      const drift = ['openapi.json', join('src', 'schema.ts')].filter(
        (file) => readFileSync(join(scratch, file), 'utf8') !== readFileSync(join(client, file), 'utf8'),
      );
      expect({ drift, fix: 'npm run client:generate' }).toEqual({ drift: [], fix: 'npm run client:generate' });
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });
});
