// Idle virtual users for the memory benchmark: each VU sleeps for an hour in its first
// iteration; the run is stopped (gracefulStop 0) before any wakes.
import { sleep } from 'k6';

export const options = {
  scenarios: { idle: { executor: 'constant-vus', vus: Number(__ENV.VUS), duration: __ENV.DURATION, gracefulStop: '0s' } },
};

export default function () { sleep(3600); }
