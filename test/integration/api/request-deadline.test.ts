// A body trickled slowly never trips the body timeout (an idle gap between chunks): the request
// deadline bounds the whole attempt. Against a loopback peer that sends its headers and then one
// byte every 100 ms forever, each attempt ends at the deadline with an error naming the route and
// the deadline, is retried as a network failure, and leaves no socket open.
import { writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import path from 'node:path'
import { afterEach, describe, expect, test, vi } from 'vitest'
import { ApiClient, type ResponseEvent } from '../../../src/api/api-client.js'
import { NetworkError, RequestDeadlineError } from '../../../src/api/errors.js'
import { RequestGovernor } from '../../../src/api/governor/index.js'
import { loadConfig } from '../../../src/config/index.js'
import { createLogger } from '../../../src/log/logger.js'
import { tempDir } from '../../support/temp-mirror.js'

const DEADLINE_MS = 400

interface Trickler {
  url: string
  attempts: number
  open: Set<Socket>
  /** The sockets that carried a request. */
  carried: Set<Socket>
  close(): Promise<void>
}

async function startTrickler(): Promise<Trickler> {
  const open = new Set<Socket>()
  const carried = new Set<Socket>()
  const peer = { attempts: 0 }
  const server = http.createServer((req, res) => {
    peer.attempts++
    carried.add(req.socket)
    res.writeHead(200, { 'content-type': 'application/json' })
    res.write('{"success":true,"data":[')
    const timer = setInterval(() => res.write(' '), 100)
    res.on('close', () => clearInterval(timer))
  })
  server.on('connection', (socket: Socket) => {
    open.add(socket)
    socket.on('close', () => open.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    get attempts() {
      return peer.attempts
    },
    open,
    carried,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

let peer: Trickler | undefined
let client: ApiClient | undefined
afterEach(async () => {
  await client?.close()
  await peer?.close()
  client = undefined
  peer = undefined
})

describe('a response body trickled slowly', () => {
  test('times out at the request deadline, is retried as a network failure, and closes its sockets', async () => {
    peer = await startTrickler()
    const events: ResponseEvent[] = []
    client = new ApiClient({
      baseUrl: peer.url,
      apiKey: 'svc_live_test',
      governor: new RequestGovernor({ limitPerMinute: 600, burst: 50 }),
      logger: createLogger({ level: 'silent' }),
      // The idle gaps are far above the 100 ms trickle: only the deadline can end an attempt.
      timeouts: { connectMs: 5_000, headersMs: 5_000, bodyMs: 5_000, deadlineMs: DEADLINE_MS },
      retryPolicy: { maxRetries: 2, delaysMs: [10, 10], maxDelayMs: 100 },
      onResponse: (e) => events.push(e),
    })
    const err = await client.get('/api/v1/jobs', { limit: 100 }, { priority: 'sweep' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RequestDeadlineError)
    expect(err).toBeInstanceOf(NetworkError)
    expect(err).toMatchObject({
      code: 'REQUEST_DEADLINE',
      errorCode: 'REQUEST_DEADLINE',
      route: 'GET /api/v1/jobs',
      deadlineMs: DEADLINE_MS,
      retryable: true,
    })
    expect((err as Error).message).toContain('on GET /api/v1/jobs')
    expect((err as Error).message).toContain(`${DEADLINE_MS} ms`)
    expect((err as Error).message).toContain('http.requestDeadlineMs')
    // The first try and two retries reached the peer; each ended below HTTP (status 0).
    expect(peer.attempts).toBe(3)
    expect(events.map((e) => e.status)).toEqual([0, 0, 0])
    // Each attempt's connection is closed by the client at its deadline, not left trickling; and no
    // connection at all stays open (undici's idle reconnect after an abort is closed by undici).
    await vi.waitFor(() => expect([...peer!.carried].filter((s) => !s.destroyed)).toEqual([]), { timeout: 1_000 })
    expect(peer.carried.size).toBe(3)
    await vi.waitFor(() => expect(peer!.open.size).toBe(0), { timeout: 8_000 })
  })

  test('a create that met the deadline is not repeated, and its message does not claim it was retried', async () => {
    peer = await startTrickler()
    client = new ApiClient({
      baseUrl: peer.url,
      apiKey: 'svc_live_test',
      governor: new RequestGovernor({ limitPerMinute: 600, burst: 50 }),
      logger: createLogger({ level: 'silent' }),
      timeouts: { deadlineMs: DEADLINE_MS },
      retryPolicy: { maxRetries: 2, delaysMs: [10, 10], maxDelayMs: 100 },
    })
    const err = await client.post('/api/v1/clients', { email: 'a@b.c' }, { priority: 'trigger' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RequestDeadlineError)
    expect(peer.attempts).toBe(1)
    // The message is what sync_runs records: it names the route and the deadline, and no retry.
    expect((err as Error).message).toContain(`Request deadline of ${DEADLINE_MS} ms passed on POST /api/v1/clients`)
    expect((err as Error).message).not.toMatch(/retr/i)
    await vi.waitFor(() => expect(peer!.open.size).toBe(0), { timeout: 5_000 })
  })

  test('the deadline is configured as http.requestDeadlineMs, 30 s by default (half the rate window)', () => {
    expect(loadConfig({ env: {} }).http.requestDeadlineMs).toBe(30_000)
    const file = path.join(tempDir(), 'config.json')
    writeFileSync(file, JSON.stringify({ http: { requestDeadlineMs: 5_000 } }))
    expect(loadConfig({ env: {}, file }).http.requestDeadlineMs).toBe(5_000)
  })
})
