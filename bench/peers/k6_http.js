// k6 script for perflab's driver-cost benchmark (run by bench/driver_cost.py): keep-alive GETs
// of the target's small body, no sleep, --vus virtual users for --duration.
import http from 'k6/http';

export const options = { discardResponseBodies: true, summaryTrendStats: ['med', 'p(99)', 'max'] };

export default function () {
  http.get(__ENV.TARGET);
}
