// Process entry of the CLI (bin/fsm-sync.js runs the compiled copy of this file).
import { main } from './main.js'

process.exitCode = await main(process.argv.slice(2))
