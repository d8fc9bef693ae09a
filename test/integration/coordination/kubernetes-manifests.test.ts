// deploy/kubernetes/ agrees with the code (docs/sharding.md, Kubernetes): every variable it sets is
// one the configuration reads, the mounted paths are those the config file and the variables name,
// the port and the probes are the daemon's, and the config file loads as every replica would load it.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, test } from 'vitest'
import { DEFAULT_TIMEOUT_SECONDS } from '../../../src/cli/healthcheck.js'
import { commands } from '../../../src/cli/commands.js'
import { ENV_VARIABLES, loadAccounts } from '../../../src/config/index.js'
import { ROOT } from '../../support/run-cli.js'
import { tempDir } from '../../support/temp-mirror.js'
import { parseYamlDocuments } from '../../support/yaml-subset.js'

const DIR = path.join(ROOT, 'deploy/kubernetes')

// The manifests' shapes, as far as the checks read them.
interface Env {
  name: string
  value?: string
  valueFrom?: { secretKeyRef: { name: string; key: string } }
}
interface Mount {
  name: string
  mountPath: string
}
interface Probe {
  exec: { command: string[] }
  timeoutSeconds: number
}
interface Container {
  name: string
  args: string[]
  ports: { name: string; containerPort: number }[]
  env: Env[]
  livenessProbe: Probe
  readinessProbe: Probe
  volumeMounts: Mount[]
}
interface Manifest {
  kind: string
  metadata: { name: string; labels?: Record<string, string> }
  data?: Record<string, string>
  stringData?: Record<string, string>
  spec: any
}

const files = readdirSync(DIR).filter((f) => f.endsWith('.yaml'))
const manifests = files
  .filter((f) => f !== 'kustomization.yaml')
  .flatMap((f) => parseYamlDocuments(readFileSync(path.join(DIR, f), 'utf8')) as Manifest[])
const one = (kind: string, name?: string): Manifest => {
  const found = manifests.filter((m) => m.kind === kind && (name === undefined || m.metadata.name === name))
  expect(found, `${kind} ${name ?? ''}`).toHaveLength(1)
  return found[0]!
}
const set = one('StatefulSet')
const pod = set.spec.template.spec as { containers: Container[]; volumes: any[]; terminationGracePeriodSeconds: number }
const container = pod.containers[0]!
const mountOf = (volume: string) => container.volumeMounts.find((m) => m.name === volume)!.mountPath
const envOf = (name: string) => container.env.find((e) => e.name === name)

describe('deploy/kubernetes', () => {
  test('kustomization.yaml lists every manifest, each in the YAML the checks read', () => {
    const k = parseYamlDocuments(readFileSync(path.join(DIR, 'kustomization.yaml'), 'utf8'))[0] as { resources: string[] }
    expect([...k.resources].sort()).toEqual(files.filter((f) => f !== 'kustomization.yaml').sort())
    expect(manifests.map((m) => m.kind).sort()).toEqual([
      'ConfigMap',
      'PodDisruptionBudget',
      'Secret',
      'Secret',
      'Service',
      'Service',
      'StatefulSet',
    ])
  })

  test('every variable is one the configuration reads; FSM_REPLICA_NAME stays unset (the pod name is the replica name)', () => {
    for (const e of container.env) expect(ENV_VARIABLES, e.name).toContain(e.name)
    expect(envOf('FSM_REPLICA_NAME')).toBeUndefined()
    expect(envOf('FSM_SHARDING')?.value).toBe('on')
    // Secrets only from a Secret, never written in the manifest.
    for (const name of ['FSM_SECRETS_KEY', 'FSM_POSTGRES_PASSWORD']) {
      const ref = envOf(name)?.valueFrom?.secretKeyRef
      expect(ref, name).toBeDefined()
      expect(Object.keys(one('Secret', ref!.name).stringData!), name).toContain(ref!.key)
    }
  })

  test('the config file, the API key files and the data folder are where the variables and the config file say', () => {
    const configPath = envOf('FSM_CONFIG')!.value!
    const configVolume = pod.volumes.find((v) => v.configMap !== undefined)
    expect(path.dirname(configPath)).toBe(mountOf(configVolume.name))
    const configMap = one('ConfigMap', configVolume.configMap.name)
    const text = configMap.data![path.basename(configPath)]!
    const keysVolume = pod.volumes.find((v) => v.secret !== undefined)
    const keys = one('Secret', keysVolume.secret.secretName).stringData!
    const accounts = (JSON.parse(text) as { accounts: { id: string; apiKeyFile: string }[] }).accounts
    for (const a of accounts) {
      expect(path.dirname(a.apiKeyFile), a.id).toBe(mountOf(keysVolume.name))
      expect(Object.keys(keys), a.id).toContain(path.basename(a.apiKeyFile))
    }
    // One claim per pod, mounted where the mirrors go.
    const claims = set.spec.volumeClaimTemplates as { metadata: { name: string } }[]
    expect(claims).toHaveLength(1)
    expect(envOf('FSM_DATA_DIR')!.value).toBe(mountOf(claims[0]!.metadata.name))
  })

  test('the config file loads as a replica loads it: sharded, the secrets key and password from the Secret, one key file per account', () => {
    const configPath = envOf('FSM_CONFIG')!.value!
    const text = one('ConfigMap').data![path.basename(configPath)]!
    // The mounts, under a temporary root.
    const root = tempDir()
    const keysMount = mountOf(pod.volumes.find((v) => v.secret !== undefined).name)
    mkdirSync(path.join(root, keysMount), { recursive: true })
    for (const [k, v] of Object.entries(one('Secret', 'fsm-sync-api-keys').stringData!)) writeFileSync(path.join(root, keysMount, k), v)
    const file = path.join(root, 'config.json')
    writeFileSync(file, text.replaceAll(keysMount, path.join(root, keysMount)))
    const env: Record<string, string> = {}
    for (const e of container.env)
      env[e.name] = e.value ?? one('Secret', e.valueFrom!.secretKeyRef.name).stringData![e.valueFrom!.secretKeyRef.key]!
    const loaded = loadAccounts({ env: { ...env, FSM_CONFIG: file } })
    expect(loaded.config.sharding.enabled).toBe(true)
    expect(loaded.config.sharding.replicaName).toBeUndefined()
    expect(loaded.config.sharding.secretsKey).toBeDefined()
    expect(loaded.config.destination.postgres.url).toContain(env.FSM_POSTGRES_PASSWORD)
    expect(loaded.config.dataDir).toBe('/data')
    expect(loaded.accounts.map((a) => a.config.apiKey)).toEqual(Object.values(one('Secret', 'fsm-sync-api-keys').stringData!))
    // The listener's port, as the container and the Services name it.
    const port = container.ports.find((p) => p.name === 'http')!.containerPort
    expect(port).toBe(loaded.config.httpPort)
    expect(loaded.config.httpHost).toBe('0.0.0.0')
  })

  test('the probes run `fsm-sync healthcheck` as the image does, within their timeout; the grace period outlasts the daemon’s stop', () => {
    const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8')
    const imageCheck = JSON.parse(/HEALTHCHECK .* CMD (\[.*\])/.exec(dockerfile)![1]!) as string[]
    expect(container.livenessProbe.exec.command).toEqual(imageCheck)
    expect(container.readinessProbe.exec.command).toEqual([...imageCheck, '--ready'])
    expect(commands.map((c) => c.command)).toContain(imageCheck[1])
    expect(dockerfile).toContain(`/usr/local/bin/${imageCheck[0]}`)
    for (const probe of [container.livenessProbe, container.readinessProbe])
      expect(probe.timeoutSeconds).toBeGreaterThan(DEFAULT_TIMEOUT_SECONDS)
    expect(container.args).toEqual(['run'])
    // docs/commands.md: the daemon exits within 10 s of SIGTERM, its leases released.
    expect(readFileSync(path.join(ROOT, 'docs/commands.md'), 'utf8')).toMatch(/Stops cleanly on SIGTERM\/SIGINT within 10 s/)
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(10)
  })

  test('the Services and the disruption budget select the StatefulSet’s pods; webhooks and probes reach the named port', () => {
    const labels = set.spec.template.metadata.labels as Record<string, string>
    expect(set.spec.selector.matchLabels).toEqual(labels)
    const headless = one('Service', set.spec.serviceName)
    expect(headless.spec.clusterIP).toBe('None')
    for (const s of manifests.filter((m) => m.kind === 'Service')) {
      expect(s.spec.selector, s.metadata.name).toEqual(labels)
      for (const p of s.spec.ports)
        expect(
          container.ports.map((c) => c.name),
          s.metadata.name,
        ).toContain(p.targetPort)
    }
    const pdb = one('PodDisruptionBudget')
    expect(pdb.spec.selector.matchLabels).toEqual(labels)
    expect(pdb.spec.maxUnavailable).toBe(1)
    expect(set.spec.replicas).toBe(3)
    expect(set.spec.template.metadata.annotations['prometheus.io/port']).toBe(String(container.ports[0]!.containerPort))
  })
})

describe('the YAML reader the checks use', () => {
  test('refuses what it does not read rather than misreading it', () => {
    expect(() => parseYamlDocuments('a: &x 1\nb: *x\n')).toThrow(/anchors/)
    expect(() => parseYamlDocuments('a: >\n  folded\n')).toThrow(/folded/)
    expect(() => parseYamlDocuments('a: { b: 1 }\n')).toThrow(/flow mapping/)
    expect(() => parseYamlDocuments('mode: 0440\n')).toThrow(/leading zero/)
    expect(parseYamlDocuments("a:\n  - b: 'x # y' # c\n    c: [d, 'e']\n  - 2\nt: |\n  {\n    \"k\": 1\n  }\n---\nz: {}\n")).toEqual([
      { a: [{ b: 'x # y', c: ['d', 'e'] }, 2], t: '{\n  "k": 1\n}\n' },
      { z: {} },
    ])
  })
})
