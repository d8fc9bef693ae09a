// Starts a module of ours on a worker thread, whether the code runs compiled (dist/) or from source.
// Compiled, the entry is the `.js` file beside the caller. From source (tsx, vitest) only its `.ts`
// twin exists, and Node 20 gives a worker thread none of the parent's module hooks: tsx registers
// its loader on the main thread only, and a Worker's own `--import tsx` is skipped likewise. So
// from source a two-line bootstrap registers tsx inside the thread, then imports the entry.
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Worker, type WorkerOptions } from 'node:worker_threads'

/** `entry` names the compiled file (`new URL('./x.js', import.meta.url)`). */
export function startModuleWorker(entry: URL, options: WorkerOptions): Worker {
  const source = new URL(entry.href.replace(/\.js$/, '.ts'))
  if (existsSync(fileURLToPath(entry)) || !existsSync(fileURLToPath(source))) return new Worker(entry, options)
  // Resolved here, where tsx is a development dependency; never reached from dist/.
  const tsx = import.meta.resolve('tsx/esm/api')
  const bootstrap = `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source.href)}) })`
  return new Worker(bootstrap, { ...options, eval: true })
}
