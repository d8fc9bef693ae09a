// The request governor's public surface: the shell every caller shares, its options and state,
// and the port a cross-process window implements. The pure core and its two parts (the sliding
// window, the adaptive limit) stay inside the folder; their tests import them by file.
export { PRIORITIES, type GovernorOptions, type GovernorState, type Priority, type RateObservation } from './core.js'
export type { BudgetChange } from './adaptive-limit.js'
export { RequestGovernor, type BudgetWait, type RequestGovernorOptions, type SharedWindow, type Slot } from './request-governor.js'
export { BudgetShare, type BudgetShareOptions } from './budget-share.js'
export { FencedError, isFenced } from './fenced.js'
