// The null target for k6: an iteration that does nothing, so what it costs is k6's own
// per-iteration overhead (scheduling, the iteration metrics).
export const options = { summaryTrendStats: ['med', 'max'] };

export default function () {}
