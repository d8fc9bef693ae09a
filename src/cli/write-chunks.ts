// Writes generated text to a stream with back-pressure: pieces are gathered into batches, and
// after a write the stream reports full, the next batch waits for 'drain'. A result of any size
// then holds one batch in memory, however slow the reader of the output is.
const BATCH_CHARS = 64 * 1024

/** How much of the text has been handed to the stream so far. */
export interface ChunkProgress {
  /** Batches written (0 while the first batch is still gathering). */
  batches: number
}

export async function writeChunks(
  out: NodeJS.WritableStream,
  chunks: Iterable<string>,
  progress: ChunkProgress = { batches: 0 },
): Promise<void> {
  // A closed reader (`| head`) surfaces as an 'error' event: without a listener it would crash the process.
  let failed: Error | undefined
  const onError = (err: Error) => (failed ??= err)
  out.on('error', onError)
  try {
    let batch: string[] = []
    let size = 0
    for (const chunk of chunks) {
      batch.push(chunk)
      size += chunk.length
      if (size < BATCH_CHARS) continue
      const full = !out.write(batch.join(''))
      progress.batches++
      batch = []
      size = 0
      if (full) await drained(out)
      if (failed !== undefined) throw failed
    }
    // The last batch is awaited until written, so an error it meets reaches the caller.
    await new Promise<void>((resolve, reject) => out.write(batch.join(''), (err) => (err ? reject(err) : resolve())))
    if (failed !== undefined) throw failed
  } finally {
    out.off('error', onError)
  }
}

function drained(out: NodeJS.WritableStream): Promise<void> {
  return new Promise((resolve, reject) => {
    const settle = (err?: Error) => {
      out.off('drain', onDrain)
      out.off('error', onError)
      out.off('close', onClose)
      if (err === undefined) resolve()
      else reject(err)
    }
    const onDrain = () => settle()
    const onError = (err: Error) => settle(err)
    const onClose = () => settle(Object.assign(new Error('the output was closed before the result was written'), { code: 'EPIPE' }))
    out.once('drain', onDrain)
    out.once('error', onError)
    out.once('close', onClose)
  })
}
