// Every connector, in the order a full sync runs them (parents before children).
import { clients } from './clients.js'
import { jobs } from './jobs.js'
import { visits } from './visits.js'
import { invoices } from './invoices.js'
import type { RecordStream } from './define-stream.js'

export { clients, jobs, visits, invoices }
export type { RecordStream } from './define-stream.js'
export const RECORD_STREAMS: readonly RecordStream[] = [clients, jobs, visits, invoices]
