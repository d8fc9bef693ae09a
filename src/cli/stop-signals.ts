// The signals that stop a command cleanly. SIGHUP too: a closed terminal or a container runtime may
// send it, and by default it ends the process with no clean stop. A SIGHUP ignored by the parent
// (`nohup`) cannot be honoured here: Node restores every signal's default action when it starts, so
// the ignore is gone before this code runs (`/proc/self/status` shows SIGHUP not ignored); keeping a
// daemon past a logout takes `setsid` or a service manager.
export const STOP_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const
