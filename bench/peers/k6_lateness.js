// Open-loop schedule accuracy for k6 (run by bench/schedule.py): a constant-arrival-rate
// scenario whose iterations do nothing but record how late they started against their
// intended time, scenario start + iteration number / rate. k6's clock in JS is Date.now(),
// so lateness has 1 ms resolution.
import exec from 'k6/execution';
import { Trend } from 'k6/metrics';

const RATE = Number(__ENV.RATE);
const lateness = new Trend('lateness', true);

export const options = {
  scenarios: {
    open: { executor: 'constant-arrival-rate', rate: RATE, timeUnit: '1s', duration: __ENV.DURATION,
            preAllocatedVUs: Number(__ENV.VUS || 200), maxVUs: Number(__ENV.VUS || 200) },
  },
  summaryTrendStats: ['med', 'p(99)', 'max'],
};

export default function () {
  const intended = exec.scenario.startTime + exec.scenario.iterationInTest * 1000 / RATE;
  lateness.add(Date.now() - intended);
}
