import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';

/**
 * The chart rendered and linted by the real `helm` (v3.22.0, built from the Go module proxy by
 * tools/test-peers/install-helm into a cache outside the repository, once per machine), beside
 * deploy/check.ts's static checks: what only shows when Helm renders (template errors, the schema
 * as Helm applies it, the objects a release would create and how they refer to each other).
 */
const root = fileURLToPath(new URL('../..', import.meta.url));
const chart = 'deploy/helm/ziti-edge';
const run = promisify(execFile);
const services = ['gateway', 'auth', 'pki-enrollment', 'policy', 'inventory', 'audit', 'fabric'];

/** The values a release needs (deploy/README.md's install command). */
const required = [
  'advertisedAddress=ziti.example.com:1280',
  `secretKey=${'k'.repeat(40)}`,
  'admin.password=change-me-now',
  'nats.url=nats://nats:4222',
  'redis.url=redis://redis:6379',
  ...['auth', 'pki', 'policy', 'inventory', 'audit'].map((s) => `postgres.${s}Url=postgres://pg:5432/${s}`),
];
/**
 * A cluster's version, as `helm install` reads it from the cluster: a helm built by `go install`
 * carries no Kubernetes version of its own (it assumes 1.20, below the chart's kubeVersion).
 */
const kube = ['--kube-version', '1.30.0'];
const sets = (values: string[]) => [...kube, ...values.flatMap((v) => ['--set', v])];

interface Container {
  image?: string;
  command?: string[];
  args?: string[];
  readinessProbe?: { httpGet?: { path?: string } };
  env?: { name: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
}

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; annotations?: Record<string, string> };
  spec?: {
    template: { spec: { containers: Container[]; initContainers?: Container[] } };
    ports: { protocol?: string }[];
  };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

let helm = '';

async function helmRun(args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await run(helm, args, { cwd: root, maxBuffer: 32 * 1024 * 1024 });
    return { code: 0, out: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

async function render(values: string[]): Promise<K8sObject[]> {
  const { code, out } = await helmRun(['template', 'ziti', chart, '--namespace', 'ziti', ...sets(values)]);
  expect(code, out).toBe(0);
  return parseAllDocuments(out)
    .map((d) => d.toJSON() as K8sObject | null)
    .filter((o): o is K8sObject => !!o);
}

const containerOf = (o: K8sObject) => o.spec!.template.spec.containers[0]!;

describe('the Helm chart, rendered and linted by helm v3.22.0', () => {
  beforeAll(async () => {
    // First run on a machine builds helm (a few minutes); later runs reuse the cached binary.
    const { stdout } = await run('bash', ['tools/test-peers/install-helm'], { cwd: root, timeout: 900_000 });
    helm = stdout.trim().split('\n').pop()!;
  }, 900_000);

  it('helm lint passes, with the install values and with the ServiceMonitor on', async () => {
    for (const extra of [[], ['metrics.serviceMonitor.enabled=true']]) {
      const { code, out } = await helmRun(['lint', chart, '--strict', ...sets([...required, ...extra])]);
      expect(code, out).toBe(0);
      expect(out).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    }
  });

  it('renders a Deployment per service, each on the one image with its bundle, and the Services they need', async () => {
    const objects = await render(required);
    const deployments = objects.filter((o) => o.kind === 'Deployment');
    expect(deployments.map((d) => d.metadata.name).sort()).toEqual(services.map((s) => `ziti-ziti-edge-${s}`).sort());
    for (const d of deployments) {
      const service = d.metadata.name.replace('ziti-ziti-edge-', '');
      const c = containerOf(d);
      expect(c.image).toMatch(/^ziti-edge-controller:/);
      const argv: string[] = [...(c.command ?? []), ...(c.args ?? [])];
      expect(
        argv.some((a) => a.endsWith(`dist/${service}.mjs`)),
        `${d.metadata.name}: ${argv.join(' ')}`,
      ).toBe(true);
      expect(c.readinessProbe?.httpGet?.path, d.metadata.name).toBe('/readyz');
    }
    const kinds = new Set(objects.map((o) => `${o.kind}/${o.metadata.name}`));
    expect(kinds.has('Service/ziti-ziti-edge-fabric-ctrl')).toBe(true);
    const ctrl = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'ziti-ziti-edge-fabric-ctrl')!;
    expect(ctrl.spec!.ports.map((p) => p.protocol ?? 'TCP')).toEqual(['TCP']);
    // Migration Jobs for the services with a database, none for the gateway or fabric.
    const jobs = objects.filter((o) => o.kind === 'Job').map((o) => o.metadata.name);
    for (const s of ['auth', 'pki-enrollment', 'policy', 'inventory', 'audit'])
      expect(jobs.some((j) => j.includes(s))).toBe(true);
    expect(jobs.some((j) => j.includes('gateway') || j.includes('fabric'))).toBe(false);
  });

  it('every Secret key a pod reads is in the rendered Secret', async () => {
    const objects = await render(required);
    const secrets = new Map(
      objects
        .filter((o) => o.kind === 'Secret')
        .map((o) => [o.metadata.name, new Set(Object.keys({ ...o.data, ...o.stringData }))]),
    );
    const reads: string[] = [];
    for (const o of objects.filter((x) => x.kind === 'Deployment' || x.kind === 'Job')) {
      for (const c of [...o.spec!.template.spec.containers, ...(o.spec!.template.spec.initContainers ?? [])]) {
        for (const env of c.env ?? []) {
          const ref = env.valueFrom?.secretKeyRef;
          if (!ref) continue;
          reads.push(env.name);
          expect(secrets.get(ref.name)?.has(ref.key), `${o.metadata.name} ${env.name} → ${ref.name}/${ref.key}`).toBe(
            true,
          );
        }
      }
    }
    expect(reads).toContain('ZITI_SECRET_KEY');
  });

  it('the ServiceMonitor renders only when enabled', async () => {
    expect((await render(required)).some((o) => o.kind === 'ServiceMonitor')).toBe(false);
    expect(
      (await render([...required, 'metrics.serviceMonitor.enabled=true'])).some((o) => o.kind === 'ServiceMonitor'),
    ).toBe(true);
  });

  it('refuses a release without its required values, and values the schema refuses, with the reason', async () => {
    const missing = await helmRun([
      'template',
      'ziti',
      chart,
      ...sets(required.filter((v) => !v.startsWith('secretKey'))),
    ]);
    expect(missing.code).not.toBe(0);
    expect(missing.out).toMatch(/secretKey is required/);
    const short = await helmRun(['template', 'ziti', chart, ...sets([...required, 'secretKey=short'])]);
    expect(short.code).not.toBe(0);
    expect(short.out).toMatch(/secretKey must be at least 32 characters|secretKey/);
    const bad = await helmRun(['template', 'ziti', chart, ...sets([...required, 'services.nosuch.replicas=2'])]);
    expect(bad.code).not.toBe(0);
    expect(bad.out).toMatch(/nosuch/);
  });
});
