// A conformance-test harness: an emulator on a free loopback port and small HTTP helpers (undici).
import { request } from 'undici'
import { startEmulator, type EmulatorHandle, type EmulatorOptions } from '../../emulator/index.js'

export interface Reply {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: any
}

export interface CallOptions {
  /** X-Api-Key value; default the handle's key; null sends none. */
  key?: string | null
  bearer?: string
  headers?: Record<string, string>
}

export interface Emu extends EmulatorHandle {
  call(method: string, path: string, body?: unknown, options?: CallOptions): Promise<Reply>
  get(path: string, options?: CallOptions): Promise<Reply>
  control(method: 'GET' | 'POST', path: string, body?: unknown): Promise<any>
  /** A fresh key from the control API. */
  key(spec?: { scopes?: string[]; expiresAt?: string; active?: boolean; rateLimit?: number }): Promise<{ id: string; key: string }>
}

export async function boot(options: EmulatorOptions = {}): Promise<Emu> {
  const handle = await startEmulator({ rateLimit: false, counts: { clients: 40, jobs: 40, invoices: 30, customRecords: 30 }, ...options })
  const call = async (method: string, path: string, body?: unknown, o: CallOptions = {}): Promise<Reply> => {
    const headers: Record<string, string> = { ...o.headers }
    const key = o.key === undefined ? (o.bearer === undefined ? handle.apiKey : null) : o.key
    if (key !== null) headers['x-api-key'] = key
    if (o.bearer !== undefined) headers.authorization = `Bearer ${o.bearer}`
    if (body !== undefined) headers['content-type'] ??= 'application/json'
    const res = await request(`${handle.url}${path}`, {
      method: method as 'GET',
      headers,
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    })
    const text = await res.body.text()
    let parsed: unknown = text
    try {
      parsed = text === '' ? undefined : JSON.parse(text)
    } catch {
      // not JSON (a gateway page): keep the text
    }
    return { status: res.statusCode, headers: res.headers, body: parsed }
  }
  const emu: Emu = {
    ...handle,
    call,
    get: (path, o) => call('GET', path, undefined, o),
    control: async (method, path, body) => {
      const r = await call(method, `/__emulator${path}`, body, { key: null })
      if (r.status !== 200) throw new Error(`control ${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`)
      return r.body.data
    },
    key: async (spec = {}) => emu.control('POST', '/keys', { scopes: ['*'], ...spec }),
  }
  return emu
}

/** First live record of a resource from the control API's state. */
export async function firstLive(emu: Emu, resource: string, where: (r: any) => boolean = () => true): Promise<any> {
  const all = (await emu.control('GET', `/state/${resource}`)) as any[]
  const found = all.find((r) => r.deleted !== true && where(r))
  if (found === undefined) throw new Error(`no live ${resource} record matches`)
  return found
}
