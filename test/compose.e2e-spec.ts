import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { AppConfig } from '../src/config/app-config';
import { ConfigError } from '../src/config/environment';

const ROOT = join(__dirname, '..');

interface Service {
  profiles?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  command?: string[];
  restart?: string;
  depends_on?: Record<string, { condition: string }>;
}

/** docker-compose.yml as compose reads it before interpolation: anchors and `<<` merges resolved. */
const compose = load(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8')) as { services: Record<string, Service> };
const services = Object.entries(compose.services);
/** What runs without a profile: a plain `docker compose up`, against Pozy. */
const production = services.filter(([, service]) => !service.profiles?.length);

/** compose.simulator.env, read as compose reads an env file: NAME=value lines, # comments. */
const simulatorEnv = Object.fromEntries(
  readFileSync(join(ROOT, 'compose.simulator.env'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'))
    .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
);

/** What an operator writes into .env against Pozy: values of their own. */
const OWN = {
  POSTGRES_PASSWORD: 'c0ffee0123456789abcdef0123456789',
  POZY_API_KEY: 'sk_live_their_own_key',
  POZY_WEBHOOK_SECRET: 'whsec_their_own_secret',
  ADMIN_TOKEN: 'their_own_admin_token_0123',
  API_TOKENS: 'their_own_read_token_0123',
  SECRETS_ENCRYPTION_KEY: `k1:${Buffer.alloc(32, 3).toString('base64')}`,
};

class MissingVariable extends Error {}

/**
 * Compose's interpolation of one value: $$, $NAME, ${NAME}, ${NAME:-default}, ${NAME-default}, ${NAME:?message},
 * ${NAME?message}, ${NAME:+other}, ${NAME+other}. A required variable unset (or empty, with `:`) throws, as compose does.
 */
function interpolate(text: string, env: Record<string, string | undefined>): string {
  const reference = /\$(?:\$|(\w+)|\{(\w+)(?:(:?)([-?+])([^}]*))?\})/g;
  return text.replace(reference, (whole: string, bare?: string, braced?: string, colon?: string, op?: string, word?: string): string => {
    if (whole === '$$') return '$';
    const name = bare ?? braced ?? '';
    const value = env[name];
    if (value === undefined || (colon === ':' && value === '')) {
      if (op === '?') throw new MissingVariable(`required variable ${name} is missing a value: ${word}`);
      return op === '-' ? (word ?? '') : '';
    }
    return op === '+' ? (word ?? '') : value;
  });
}

/** The service as compose would create it: its environment and ports interpolated. */
function resolve(service: Service, env: Record<string, string | undefined>): { environment: Record<string, string>; ports: string[] } {
  return {
    environment: Object.fromEntries(Object.entries(service.environment ?? {}).map(([key, value]) => [key, interpolate(String(value), env)])),
    ports: (service.ports ?? []).map((port) => interpolate(port, env)),
  };
}

/** The variables compose reports missing when it interpolates the production services with `env`. */
function missing(env: Record<string, string | undefined>): string[] {
  const names = new Set<string>();
  for (const [, service] of production) {
    for (const value of [...Object.values(service.environment ?? {}), ...(service.ports ?? [])]) {
      try {
        interpolate(String(value), env);
      } catch (error) {
        if (!(error instanceof MissingVariable)) throw error;
        names.add(/required variable (\w+)/.exec(error.message)![1]);
      }
    }
  }
  return [...names].sort();
}

const SECRET_NAME = /KEY|SECRET|TOKEN|PASSWORD/;
const api = compose.services['pozy-sync-api'];

describe('docker-compose.yml: the production services have no secret of their own, the simulator profile has them all', () => {
  it('runs postgres, an api and a worker without a profile, the simulator only in its own', () => {
    expect(production.map(([name]) => name).sort()).toEqual(['postgres', 'pozy-sync-api', 'pozy-sync-migrate', 'pozy-sync-worker']);
    expect(compose.services.simulator.profiles).toEqual(['simulator']);
  });

  it('migrates as a step of its own, then starts the api and the workers, which never migrate themselves', () => {
    expect(compose.services['pozy-sync-migrate']).toMatchObject({ command: ['node', 'dist/migrate.js'], restart: 'no' });
    for (const name of ['pozy-sync-api', 'pozy-sync-worker']) {
      expect(compose.services[name].depends_on).toEqual({
        postgres: { condition: 'service_healthy' },
        'pozy-sync-migrate': { condition: 'service_completed_successfully' },
      });
      expect(compose.services[name].environment?.MIGRATE_ON_START).toBe('false');
    }
    // The step runs on the very values the replicas get (it validates the same environment).
    const { MIGRATE_ON_START: _, ROLE: __, PORT: ___, SPOOL_DIR: ____, ...shared } = resolve(api, OWN).environment;
    expect(resolve(compose.services['pozy-sync-migrate'], OWN).environment).toEqual(shared);
  });

  it('gives no production service a secret default: each secret is ${NAME:?message}, required', () => {
    const secrets = production.flatMap(([name, service]) =>
      Object.entries(service.environment ?? {})
        .filter(([key]) => SECRET_NAME.test(key))
        .map(([key, value]) => ({ service: name, key, value: String(value) })),
    );
    // The api, the worker and the migration step each; the database its own password.
    const each = (key: string) => [key, key, key];
    expect(secrets.map(({ key }) => key).sort()).toEqual([
      ...each('ADMIN_TOKEN'),
      ...each('API_TOKENS'),
      'POSTGRES_PASSWORD',
      ...each('POZY_API_KEY'),
      ...each('POZY_WEBHOOK_SECRET'),
      ...each('SECRETS_ENCRYPTION_KEY'),
    ]);
    expect(secrets.filter(({ key, value }) => !new RegExp(`^\\$\\{${key}:\\?[^}]+\\}$`).test(value))).toEqual([]);
    // The database's password stands in the URL the same way.
    for (const name of ['pozy-sync-api', 'pozy-sync-worker', 'pozy-sync-migrate']) {
      expect(compose.services[name].environment?.DATABASE_URL).toMatch(
        /^postgresql:\/\/pozy:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432\/pozy_sync$/,
      );
    }
  });

  it('refuses to start without any one of the secrets, naming it', () => {
    expect(missing({})).toEqual(['ADMIN_TOKEN', 'API_TOKENS', 'POSTGRES_PASSWORD', 'POZY_API_KEY', 'POZY_WEBHOOK_SECRET', 'SECRETS_ENCRYPTION_KEY']);
    for (const name of Object.keys(OWN)) {
      expect(missing({ ...OWN, [name]: undefined })).toEqual([name]);
      // An empty value is unset too (`FOO= docker compose up`).
      expect(missing({ ...OWN, [name]: '' })).toEqual([name]);
    }
    expect(missing(OWN)).toEqual([]);
  });

  it('publishes every port on 127.0.0.1 unless POZY_SYNC_PUBLISH_ADDRESS says otherwise', () => {
    const published = (env: Record<string, string>) =>
      Object.fromEntries(production.map(([name, service]) => [name, resolve(service, { ...OWN, ...env }).ports]));

    expect(published({})).toEqual({
      postgres: [],
      'pozy-sync-migrate': [],
      'pozy-sync-api': ['127.0.0.1:3000:3000'],
      'pozy-sync-worker': ['127.0.0.1::3001'],
    });
    expect(published({ POZY_SYNC_PUBLISH_ADDRESS: '0.0.0.0' })).toEqual({
      postgres: [],
      'pozy-sync-migrate': [],
      'pozy-sync-api': ['0.0.0.0:3000:3000'],
      'pozy-sync-worker': ['0.0.0.0::3001'],
    });
  });

  it("runs the service with NODE_ENV=production against Pozy, on the operator's own values", () => {
    const { environment } = resolve(api, OWN);

    const { POSTGRES_PASSWORD: _, ...given } = OWN;
    expect(environment).toMatchObject({ NODE_ENV: 'production', POZY_API_URL: 'https://api.pozy.ai', ...given });
    expect(environment.DATABASE_URL).toBe(`postgresql://pozy:${OWN.POSTGRES_PASSWORD}@postgres:5432/pozy_sync`);
    expect(AppConfig.fromEnvironment(environment)).toMatchObject({ nodeEnv: 'production', readTokens: [OWN.API_TOKENS] });
    // API_TOKENS=none is the one way to leave reads open.
    expect(AppConfig.fromEnvironment(resolve(api, { ...OWN, API_TOKENS: 'none' }).environment).readTokens).toEqual([]);
  });

  it('takes every value of the simulator profile from compose.simulator.env, runs it in development, and production would refuse them', () => {
    expect(missing(simulatorEnv)).toEqual([]);
    const { environment } = resolve(api, simulatorEnv);
    expect(environment).toMatchObject({ NODE_ENV: 'development', POZY_API_URL: 'http://simulator:4010', API_TOKENS: 'none' });
    expect(AppConfig.fromEnvironment(environment).nodeEnv).toBe('development');
    // The simulator signs and authenticates with the very values the service is given.
    expect(resolve(compose.services.simulator, simulatorEnv).environment).toMatchObject({
      SIMULATOR_API_KEY: environment.POZY_API_KEY,
      SIMULATOR_WEBHOOK_SECRET: environment.POZY_WEBHOOK_SECRET,
      SIMULATOR_WEBHOOK_URL: 'http://pozy-sync-api:3000/webhooks/pozy',
    });

    let refused: string[] = [];
    try {
      AppConfig.fromEnvironment({ ...environment, NODE_ENV: 'production' });
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      refused = error.problems.map((problem) => problem.split(' ')[0]);
    }
    expect(refused).toEqual(['POZY_API_KEY', 'POZY_WEBHOOK_SECRET', 'ADMIN_TOKEN', "DATABASE_URL's", 'SECRETS_ENCRYPTION_KEY']);
  });
});
