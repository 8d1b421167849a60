// k6 at a fixed rate for perflab's paired benchmark (bench/driver_cost_pairs.py): keep-alive GETs
// of the target's small body started by the constant-arrival-rate executor at RATE a second, at
// most VUS of them at once, for DURATION.
import http from 'k6/http';

export const options = {
  discardResponseBodies: true,
  summaryTrendStats: ['med', 'p(99)', 'max'],
  scenarios: {
    paced: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE), timeUnit: '1s', duration: __ENV.DURATION,
      preAllocatedVUs: Number(__ENV.VUS), maxVUs: Number(__ENV.VUS),
    },
  },
};

export default function () {
  http.get(__ENV.TARGET);
}
