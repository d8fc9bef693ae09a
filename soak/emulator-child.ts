// The soak's emulator, in its own process so that it outlives every SIGKILL of the daemon. Options
// arrive as one JSON argument; the first stdout line is `{"url", "apiKey"}`. Stops on SIGTERM.
import { startEmulator, type EmulatorOptions } from '../emulator/index.js'

const options = JSON.parse(process.argv[2] ?? '{}') as EmulatorOptions
const emu = await startEmulator(options)
process.stdout.write(JSON.stringify({ url: emu.url, apiKey: emu.apiKey }) + '\n')
process.once('SIGTERM', () => {
  void emu.close().then(() => process.exit(0))
})
