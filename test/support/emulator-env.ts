// An emulator on a free loopback port plus helpers to drive it: the v1 API with its key (writes
// that emit webhooks), and the control API (/__emulator/...) for state, clock and faults.
import { request } from 'undici'
import { onTestFinished } from 'vitest'
import { startEmulator, type EmulatorHandle, type EmulatorOptions } from '../../emulator/index.js'

export interface EmulatorEnv extends EmulatorHandle {
  api(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, body?: unknown): Promise<{ status: number; body: any }>
  control(method: 'GET' | 'POST', path: string, body?: unknown): Promise<any>
  /** Every record of a resource as the emulator holds it, soft-deleted ones included. */
  state(resource: string): Promise<any[]>
}

/**
 * Inside a test, `close` runs when the test finishes, pass or fail; in beforeAll/afterAll (where
 * vitest has no current test) the caller closes it.
 */
export function closeWhenTestFinishes(close: () => Promise<void>): void {
  try {
    onTestFinished(close)
  } catch {
    // Not inside a test.
  }
}

/** An emulator for one test (closed with it) or for a whole file (closed by the caller). */
export async function emulatorEnv(options: EmulatorOptions = {}): Promise<EmulatorEnv> {
  const started = await startEmulator({ rateLimit: false, ...options })
  let closed: Promise<void> | undefined
  const handle = { ...started, close: () => (closed ??= started.close()) }
  closeWhenTestFinishes(handle.close)
  const call = async (method: string, path: string, body: unknown, headers: Record<string, string>) => {
    const res = await request(`${handle.url}${path}`, {
      method: method as 'GET',
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await res.body.text()
    return { status: res.statusCode, body: text === '' ? undefined : JSON.parse(text) }
  }
  const env: EmulatorEnv = {
    ...handle,
    api: (method, path, body) => call(method, path, body, { 'x-api-key': handle.apiKey }),
    control: async (method, path, body) => {
      const r = await call(method, `/__emulator${path}`, body, {})
      if (r.status >= 300) throw new Error(`control ${method} ${path} answered ${r.status}: ${JSON.stringify(r.body)}`)
      return r.body?.success === true && 'data' in r.body ? r.body.data : r.body
    },
    state: async (resource) => {
      return env.control('GET', `/state/${resource}`)
    },
  }
  return env
}
