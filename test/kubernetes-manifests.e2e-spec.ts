import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, posix, resolve } from 'node:path';
import { loadAll } from 'js-yaml';
import { Deployment, StatefulSet } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { Job } from 'kubernetes-models/batch/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { ConfigError } from '../src/config/environment';
import { validateEnvironment, VARIABLES } from '../src/config/variables';

const DIR = resolve(__dirname, '..', 'deploy', 'kubernetes');
/** kubectl's kustomize builds the directory as `kubectl apply -k` would; .ci/run installs kubectl. */
const KUBECTL = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'].find((path) => existsSync(path));

interface Probe {
  httpGet?: { path: string; port: number | string };
  periodSeconds?: number;
  failureThreshold?: number;
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  ports?: Array<{ name?: string; containerPort: number }>;
  env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }>;
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { drop?: string[] };
  };
  volumeMounts?: Array<{ name: string; mountPath: string }>;
}
interface PodTemplate {
  metadata: { labels: Record<string, string> };
  spec: {
    containers: Container[];
    initContainers?: Container[];
    restartPolicy?: string;
    terminationGracePeriodSeconds?: number;
    securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; fsGroup?: number };
    volumes?: Array<{ name: string; emptyDir?: object; persistentVolumeClaim?: object }>;
  };
}
/** The fields of the objects here that the checks read. */
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: {
    replicas?: number | string;
    serviceName?: string;
    selector?: { matchLabels?: Record<string, string> } & Record<string, string>;
    strategy?: { type?: string; rollingUpdate?: { maxUnavailable?: number | string; maxSurge?: number | string } };
    updateStrategy?: { type?: string; rollingUpdate?: { partition?: number } };
    template?: PodTemplate;
    volumeClaimTemplates?: Array<{ metadata: { name: string } }>;
    backoffLimit?: number;
    ttlSecondsAfterFinished?: number;
    clusterIP?: string;
    ports?: Array<{ name?: string; port: number; targetPort?: number | string }>;
    minAvailable?: number | string;
    maxUnavailable?: number | string;
    scaleTargetRef?: { apiVersion: string; kind: string; name: string };
    minReplicas?: number;
    maxReplicas?: number;
    metrics?: Array<{ type: string; resource?: { name: string; target: { type: string; averageUtilization?: number } } }>;
  };
}

type Validating = new (data: never) => { validate(): void };
/** Kubernetes' OpenAPI schema of each kind here (kubernetes-models: Kubernetes 1.27), by apiVersion and kind. */
const MODELS: Record<string, Validating> = {
  'v1/Namespace': Namespace,
  'v1/ConfigMap': ConfigMap,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'apps/v1/Deployment': Deployment,
  'apps/v1/StatefulSet': StatefulSet,
  'batch/v1/Job': Job,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
};

/** The schema's complaints about one object; none for a valid one. */
function problemsOf(object: K8sObject): string[] {
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (!Model) return [`no schema for ${object.apiVersion} ${object.kind}`];
  try {
    new Model(structuredClone(object) as never).validate();
    return [];
  } catch (error) {
    return [(error as Error).message];
  }
}

const yamlFiles = (): string[] =>
  readdirSync(DIR)
    .filter((file) => /\.ya?ml$/.test(file))
    .sort();
const manifestFiles = (): string[] => yamlFiles().filter((file) => file !== 'kustomization.yaml');
const objectsIn = (file: string): K8sObject[] => loadAll(readFileSync(join(DIR, file), 'utf8')).filter((doc) => doc != null) as K8sObject[];
const objects = (): K8sObject[] => manifestFiles().flatMap(objectsIn);

function one(kind: string, name: string): K8sObject {
  const found = objects().filter((o) => o.kind === kind && o.metadata.name === name);
  expect(found.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([`${kind}/${name}`]);
  return found[0];
}
const api = (): K8sObject => one('StatefulSet', 'pozy-sync-api');
const worker = (): K8sObject => one('Deployment', 'pozy-sync-worker');
const migrate = (): K8sObject => one('Job', 'pozy-sync-migrate');
const configMap = (): K8sObject => one('ConfigMap', 'pozy-sync-config');
/** Every workload with the container that runs the service in it. */
const workloads = (): Array<{ role: 'api' | 'worker' | 'migrate'; object: K8sObject; container: Container }> =>
  (
    [
      ['api', api()],
      ['worker', worker()],
      ['migrate', migrate()],
    ] as const
  ).map(([role, object]) => {
    expect(object.spec?.template?.spec.containers).toHaveLength(1);
    return { role, object, container: object.spec!.template!.spec.containers[0] };
  });

/** The Secret's keys as README.md's `kubectl create secret generic pozy-sync-secrets` command sets them. */
function documentedSecretKeys(): string[] {
  const readme = readFileSync(join(DIR, 'README.md'), 'utf8');
  const command = /create secret generic pozy-sync-secrets((?:[^\n]*\\\n)*[^\n]*)/.exec(readme);
  expect(command).not.toBeNull();
  return [...command![1].matchAll(/--from-literal=([A-Z0-9_]+)=/g)].map((m) => m[1]);
}

/** Fresh values of the shapes the service accepts, none of them one of the repository's published examples. */
function placeholderSecrets(): Record<string, string> {
  const hex = () => randomBytes(24).toString('hex');
  return {
    DATABASE_URL: `postgresql://pozy:${hex()}@postgres.example:5432/pozy_sync`,
    POZY_API_KEY: `sk_${hex()}`,
    POZY_WEBHOOK_SECRET: `whsec_${hex()}`,
    ADMIN_TOKEN: hex(),
    API_TOKENS: hex(),
    SECRETS_ENCRYPTION_KEY: `k1:${randomBytes(32).toString('base64')}`,
  };
}

/** What the container's process sees of the ConfigMap and its own `env` (env wins, as in Kubernetes). */
function environmentOf(container: Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) {
      expect(source.configMapRef.name).toBe('pozy-sync-config');
      Object.assign(env, configMap().data);
    }
  }
  for (const entry of container.env ?? []) if (entry.value !== undefined) env[entry.name] = entry.value;
  return env;
}

const podSpecs = (): Array<{ name: string; spec: PodTemplate['spec'] }> =>
  workloads().map(({ object }) => ({ name: object.metadata.name, spec: object.spec!.template!.spec }));

/** The seconds a `sleep N` preStop hook holds the pod before SIGTERM. */
function preStopSeconds(container: Container): number {
  const command = container.lifecycle?.preStop?.exec?.command;
  if (!command) return 0;
  expect(command[0]).toBe('sleep');
  return Number(command[1]);
}

describe('deploy/kubernetes', () => {
  it('holds manifests each valid against the Kubernetes OpenAPI schema of its kind', () => {
    const all = manifestFiles().flatMap((file) => objectsIn(file).map((object) => ({ file, object })));
    expect(all.length).toBeGreaterThanOrEqual(10);
    const problems = all.flatMap(({ file, object }) =>
      problemsOf(object).map((problem) => `${file} ${object.kind}/${object.metadata?.name}: ${problem}`),
    );
    expect(problems).toEqual([]);
  });

  it('is checked by a schema that refuses a wrong type, a missing field and a kind it does not know', () => {
    // Unknown fields pass: Kubernetes' published schemas allow them, and only the API server's field validation refuses them.
    const wrongReplicas = structuredClone(worker());
    wrongReplicas.spec!.replicas = 'two';
    expect(problemsOf(wrongReplicas).join()).toMatch(/replicas must be integer/);

    const wrongProbe = structuredClone(api()) as unknown as { spec: { template: { spec: { containers: Array<{ readinessProbe: object }> } } } };
    wrongProbe.spec.template.spec.containers[0].readinessProbe = { httpGet: { path: '/health/ready', port: 3000 }, periodSeconds: '5' };
    expect(problemsOf(wrongProbe as unknown as K8sObject).join()).toMatch(/periodSeconds must be integer/);

    const noSelector = structuredClone(api());
    delete noSelector.spec!.selector;
    expect(problemsOf(noSelector).join()).toMatch(/selector/);

    const wrongPolicy = structuredClone(migrate());
    wrongPolicy.spec!.template!.spec.restartPolicy = 7 as never;
    expect(problemsOf(wrongPolicy).join()).toMatch(/restartPolicy must be string/);

    expect(problemsOf({ apiVersion: 'apps/v1beta1', kind: 'Deployment', metadata: { name: 'old' } })).toEqual([
      'no schema for apps/v1beta1 Deployment',
    ]);
  });

  it('lists in kustomization.yaml every manifest in the directory and nothing else, in the namespace pozy-sync', () => {
    const kustomization = loadAll(readFileSync(join(DIR, 'kustomization.yaml'), 'utf8'))[0] as {
      namespace: string;
      resources: string[];
      labels: Array<{ pairs: Record<string, string>; includeSelectors?: boolean }>;
      images: Array<{ name: string; newName: string; newTag: string }>;
    };
    expect([...kustomization.resources].sort()).toEqual(manifestFiles());
    expect(new Set(kustomization.resources).size).toBe(kustomization.resources.length);
    expect(kustomization.namespace).toBe('pozy-sync');
    expect(one('Namespace', 'pozy-sync').metadata.name).toBe(kustomization.namespace);
    expect(kustomization.labels).toContainEqual(expect.objectContaining({ pairs: { 'app.kubernetes.io/name': 'pozy-sync' } }));
    // The image every manifest names is the one the kustomization replaces with yours.
    expect(kustomization.images.map((i) => i.name)).toEqual(['pozy-sync']);
    for (const { container } of workloads()) expect(container.image).toBe('pozy-sync');
    // Namespaced objects name none of their own: the kustomization's applies.
    expect(objects().filter((o) => o.metadata.namespace !== undefined)).toEqual([]);
  });

  it('holds no Secret, and every pod reads the secrets from pozy-sync-secrets by reference', () => {
    expect(objects().filter((o) => o.kind === 'Secret')).toEqual([]);
    // Nor values under another kind: the ConfigMap alone has data, and none of it secret (below).
    expect(objects().flatMap((o) => (o.data !== undefined || o.stringData !== undefined ? [o.metadata.name] : []))).toEqual(['pozy-sync-config']);
    for (const { role, container } of workloads()) {
      expect({ role, secretRefs: (container.envFrom ?? []).flatMap((s) => (s.secretRef ? [s.secretRef.name] : [])) }).toEqual({
        role,
        secretRefs: ['pozy-sync-secrets'],
      });
      const keyRefs = (container.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : []));
      for (const ref of keyRefs)
        expect({ role, ref: ref.name, documented: documentedSecretKeys().includes(ref.key) }).toEqual({
          role,
          ref: 'pozy-sync-secrets',
          documented: true,
        });
    }
  });

  it('sets only variables the service declares, the secret ones only in the Secret', () => {
    const declared = new Set(Object.keys(VARIABLES));
    const secret = new Set(Object.entries(VARIABLES).flatMap(([name, v]) => (v.secret ? [name] : [])));
    const env = workloads().flatMap(({ container }) => container.env ?? []);
    const written = [...Object.keys(configMap().data ?? {}), ...env.filter((e) => e.valueFrom === undefined).map((e) => e.name)];
    expect([...written, ...env.map((e) => e.name)].filter((name) => !declared.has(name))).toEqual([]);
    expect(written.filter((name) => secret.has(name))).toEqual([]);
    const documented = documentedSecretKeys();
    expect(documented.length).toBeGreaterThanOrEqual(6);
    expect(documented.filter((name) => !secret.has(name))).toEqual([]);
    // The check sees a name the service does not declare.
    expect(declared.has('SPOOL_DIR')).toBe(true);
    expect(declared.has('SPOOL_DIRECTORY')).toBe(false);
  });

  it("sets, for each role, an environment the service's own validation accepts in production", () => {
    const secrets = placeholderSecrets();
    expect(Object.keys(secrets).sort()).toEqual([...documentedSecretKeys()].sort());
    const roles = { api: 'api', worker: 'worker', migrate: 'all' };
    for (const { role, container } of workloads()) {
      const env = { ...environmentOf(container), ...secrets };
      const parsed = validateEnvironment(env);
      expect({ role, NODE_ENV: parsed.NODE_ENV, ROLE: parsed.ROLE, LOG_FORMAT: parsed.LOG_FORMAT }).toEqual({
        role,
        NODE_ENV: 'production',
        ROLE: roles[role],
        LOG_FORMAT: 'json',
      });
      // The migration Job migrates; the replicas wait for it.
      if (role !== 'migrate') expect({ role, MIGRATE_ON_START: env.MIGRATE_ON_START }).toEqual({ role, MIGRATE_ON_START: 'false' });
      // And the validation is not vacuous: production refuses the same environment without its encryption key.
      const { SECRETS_ENCRYPTION_KEY: _, ...withoutKey } = env;
      expect(() => validateEnvironment(withoutKey)).toThrow(ConfigError);
    }
  });

  it('probes /health/live and /health/ready on the port the service listens on', () => {
    for (const { role, container } of workloads().filter((w) => w.role !== 'migrate')) {
      const port = validateEnvironment({ ...environmentOf(container), ...placeholderSecrets() }).PORT;
      const http = container.ports?.find((p) => p.name === 'http');
      expect({ role, containerPort: http?.containerPort }).toEqual({ role, containerPort: port });
      const probes = { startup: container.startupProbe, liveness: container.livenessProbe, readiness: container.readinessProbe };
      const paths = Object.fromEntries(Object.entries(probes).map(([kind, probe]) => [kind, probe?.httpGet?.path]));
      expect({ role, paths }).toEqual({ role, paths: { startup: '/health/live', liveness: '/health/live', readiness: '/health/ready' } });
      for (const probe of Object.values(probes)) expect([port, 'http']).toContain(probe?.httpGet?.port);
      expect(container.livenessProbe).toMatchObject({ periodSeconds: 10, failureThreshold: 3 });
      expect(container.readinessProbe).toMatchObject({ periodSeconds: 5 });
      // Liveness counts only once a slow start (a database still coming up) is over.
      const startup = container.startupProbe!;
      expect((startup.periodSeconds ?? 10) * (startup.failureThreshold ?? 3)).toBeGreaterThanOrEqual(120);
    }
  });

  it("gives a stopping pod longer than its preStop sleep, the drain, the grace and the service's own 5 s margin", () => {
    for (const { role, object, container } of workloads().filter((w) => w.role !== 'migrate')) {
      const env = validateEnvironment({ ...environmentOf(container), ...placeholderSecrets() });
      const needed = preStopSeconds(container) + (env.SHUTDOWN_DRAIN_MS + env.SHUTDOWN_GRACE_MS) / 1000 + 5;
      const given = object.spec!.template!.spec.terminationGracePeriodSeconds ?? 30;
      expect({ role, needed, enough: given > needed }).toEqual({ role, needed, enough: true });
      // Endpoint removal is asynchronous: the pod keeps answering for a moment before SIGTERM.
      expect(preStopSeconds(container)).toBeGreaterThan(0);
    }
  });

  it('rolls the worker with no replica unavailable and the api one replica at a time, each with its own spool volume', () => {
    expect(worker().spec!.strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    const statefulSet = api().spec!;
    expect(statefulSet.updateStrategy?.type).toBe('RollingUpdate');
    expect(statefulSet.updateStrategy?.rollingUpdate?.partition ?? 0).toBe(0);
    // The autoscaler owns the api's count: a count in the manifest would reset it on each apply.
    expect(statefulSet.replicas).toBeUndefined();

    const headless = one('Service', statefulSet.serviceName!);
    expect(headless.spec!.clusterIP).toBe('None');

    const spoolDir = configMap().data!.SPOOL_DIR;
    const mountOf = (spec: PodTemplate['spec']) =>
      spec.containers[0].volumeMounts?.find((m) => spoolDir === m.mountPath || spoolDir.startsWith(`${m.mountPath}/`));
    const apiMount = mountOf(statefulSet.template!.spec);
    expect(posix.isAbsolute(spoolDir)).toBe(true);
    expect(apiMount).toBeDefined();
    // The api's spool is on a claim of its own, never an emptyDir that dies with the pod.
    expect(statefulSet.volumeClaimTemplates?.map((t) => t.metadata.name)).toEqual([apiMount!.name]);
    expect(statefulSet.template!.spec.volumes?.some((v) => v.name === apiMount!.name)).toBe(false);
    const workerMount = mountOf(worker().spec!.template!.spec);
    expect(worker().spec!.template!.spec.volumes?.find((v) => v.name === workerMount?.name)?.emptyDir).toBeDefined();
  });

  it('keeps replicas through disruptions and scales the api on CPU, each selecting the pods it means', () => {
    const labelsOf = (o: K8sObject) => o.spec!.template!.metadata.labels;
    const selects = (selector: Record<string, string> | undefined, labels: Record<string, string>) =>
      selector !== undefined && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);
    const apiPdb = one('PodDisruptionBudget', 'pozy-sync-api');
    const workerPdb = one('PodDisruptionBudget', 'pozy-sync-worker');
    expect(apiPdb.spec!.minAvailable).toBe(1);
    expect(workerPdb.spec!.minAvailable ?? workerPdb.spec!.maxUnavailable).toBe(1);
    expect(selects(apiPdb.spec!.selector?.matchLabels, labelsOf(api()))).toBe(true);
    expect(selects(workerPdb.spec!.selector?.matchLabels, labelsOf(worker()))).toBe(true);
    expect(selects(apiPdb.spec!.selector?.matchLabels, labelsOf(worker()))).toBe(false);
    for (const workload of [api(), worker()]) expect(selects(workload.spec!.selector?.matchLabels, labelsOf(workload))).toBe(true);

    const service = one('Service', 'pozy-sync');
    expect(service.spec!.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http' }]);
    expect(selects(service.spec!.selector, labelsOf(api()))).toBe(true);
    expect(selects(service.spec!.selector, labelsOf(worker()))).toBe(false);

    const hpa = one('HorizontalPodAutoscaler', 'pozy-sync-api');
    expect(hpa.spec!.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'StatefulSet', name: api().metadata.name });
    expect({ min: hpa.spec!.minReplicas, max: hpa.spec!.maxReplicas }).toEqual({ min: 2, max: 10 });
    expect(hpa.spec!.metrics).toEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }]);
    // Utilization is measured against the request, and memory is bounded.
    for (const { role, container } of workloads()) {
      expect({ role, ...container.resources }).toEqual({ role, requests: { cpu: '250m', memory: '256Mi' }, limits: { memory: '512Mi' } });
    }
  });

  it('runs every container as a non-root user, unprivileged, on a read-only root with /tmp writable', () => {
    for (const { name, spec } of podSpecs()) {
      expect({ name, runAsNonRoot: spec.securityContext?.runAsNonRoot, runAsUser: spec.securityContext?.runAsUser }).toEqual({
        name,
        runAsNonRoot: true,
        runAsUser: 1000,
      });
      for (const container of [...spec.containers, ...(spec.initContainers ?? [])]) {
        expect({ name, container: container.name, ...container.securityContext }).toEqual({
          name,
          container: container.name,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ['ALL'] },
        });
        const tmp = container.volumeMounts?.find((m) => m.mountPath === '/tmp');
        expect({ name, tmp: spec.volumes?.find((v) => v.name === tmp?.name)?.emptyDir !== undefined }).toEqual({ name, tmp: true });
      }
    }
    // The api's spool volume is writable by the image's user.
    expect(api().spec!.template!.spec.securityContext?.fsGroup).toBe(1000);
  });

  it('migrates in a Job of its own that runs dist/migrate.js once, with the environment of the replicas', () => {
    const job = migrate();
    const [container] = job.spec!.template!.spec.containers;
    expect(container.command).toEqual(['node', 'dist/migrate.js']);
    expect(job.spec!.template!.spec.restartPolicy).toBe('Never');
    expect(job.spec!.backoffLimit).toBeGreaterThanOrEqual(0);
    expect(job.spec!.ttlSecondsAfterFinished).toBeGreaterThan(0);
    expect(container.envFrom).toEqual(api().spec!.template!.spec.containers[0].envFrom);
  });

  it('builds with kustomize into namespaced, labelled objects that run your image', () => {
    if (!KUBECTL) throw new Error('kubectl is not installed (apt-get install kubectl): kustomize builds the manifests with it');
    const built = loadAll(execFileSync(KUBECTL, ['kustomize', DIR], { encoding: 'utf8' })) as K8sObject[];
    expect(built.length).toBe(objects().length);
    for (const object of built) {
      expect({ object: object.metadata.name, label: object.metadata.labels?.['app.kubernetes.io/name'] }).toEqual({
        object: object.metadata.name,
        label: 'pozy-sync',
      });
      if (object.kind !== 'Namespace')
        expect({ object: object.metadata.name, namespace: object.metadata.namespace }).toEqual({
          object: object.metadata.name,
          namespace: 'pozy-sync',
        });
      expect(problemsOf(object)).toEqual([]);
    }
    const images = built.flatMap((o) => o.spec?.template?.spec.containers.map((c) => c.image) ?? []);
    expect(images.length).toBe(3);
    for (const image of images) expect(image).toMatch(/^ghcr\.io\/your-org\/pozy-sync:\d+\.\d+\.\d+$/);
  });
});
