"""The k6 script perflab generates: the workload's HTTP transactions as a plan, and a small
fixed JavaScript runtime that runs the plan in k6 and labels every sample for the importer.

The plan is data (JSON) built from the workload; the runtime below is the same for every
workload. It mirrors the native HTTP adapter: requests in order, `{name}` filled from the
transaction's parameters and the user's variables, values extracted (a JSON path, a regex
group, a header) into the user's variables, a status check (default 2xx and 3xx) and a body
check, no redirects followed. Script choice by weight, a constant think time before each step,
the init script once per virtual user in a closed loop (in each k6 run: the warm-up's VUs and
the measured run's log on separately), none in an open loop, as the native driver.

Random draws (script choice, parameters) come from a seeded generator in the runtime (see
`Random` there), one stream per simulated user, seeded from the k6 run's seed (tool_seed of the
run's seed) and the user's number: the same seed gives every user the same script choices and
parameters however k6 schedules its VUs.

Labels: k6 writes one JSON point per metric per request, timed at the request's end (its
Trail.EndTime). Every request point carries the metadata `id` = "user:seq:script:tx" of its
transaction (metadata, not tags: tags would make one k6 time series per transaction);
at the end of each transaction a `perflab_tx` point carries its id and its error, if any;
at the start of each iteration a `perflab_iteration` point marks when k6 started it (for an
open loop: when the arrival was due, since k6 starts an arrival on time or drops it).
"""

from __future__ import annotations

import json
import math
from typing import Any

from perflab.drive.external import constant_think, script_mix
from perflab.workload.model import Choice, Constant, HttpTarget, OpenLoad, RandomInt, Workload

# The only tag on each JSON line: the status (0: no response). Fewer tags, shorter lines.
SYSTEM_TAGS = ["status"]

RUNTIME = r"""
import http from 'k6/http';
import exec from 'k6/execution';
import { sleep } from 'k6';
import { Counter } from 'k6/metrics';

const txDone = new Counter('perflab_tx');
const iterationStart = new Counter('perflab_iteration');
const JSON_STEP = /\.([^.\[\]]+)|\[(\d+)\]|\['([^']*)'\]/g;  // the native adapter's JSON path subset

export const options = PLAN.options;
export function handleSummary(data) {
  return { [__ENV.PERFLAB_K6_SUMMARY]: JSON.stringify(data) };
}

let vars = {};          // the user's variables: values extracted from responses
let rng = null;         // the user's random stream
let loggedOn = false;
let seq = 0;

class CheckFailed extends Error {}

// Not Math.random: k6 seeds it from the system's entropy in every VU, and the run's seed must
// decide the draws. xoshiro128** (Blackman and Vigna, "Scrambled linear pseudorandom number
// generators", ACM TOMS 47(4), 2021): 128 bits of state, period 2^128 - 1, built from 32-bit
// integer operations that JavaScript does exactly (Math.imul, shifts, xor).
class Random {
  constructor(seed, user) {
    // MurmurHash3's finalizer (mix32) is a bijection of 32-bit words that scatters nearby
    // inputs: nearby seeds and users get unrelated states, and the four words, from four
    // distinct inputs, are distinct -- never all zero, the one state xoshiro must not have.
    const h = mix32(seed ^ mix32(user));
    this.s = [0, 1, 2, 3].map((k) => mix32(h + Math.imul(k, 0x9e3779b9)));
  }

  next32() {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  random() {  // in [0, 1) with 53 random bits, like Math.random
    return ((this.next32() >>> 5) * 67108864 + (this.next32() >>> 6)) / 9007199254740992;
  }
}

function mix32(h) {
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

function rotl(x, k) {
  return (x << k) | (x >>> (32 - k));
}

function pick(cumulative) {
  const x = rng.random() * cumulative[cumulative.length - 1];
  let i = 0;
  while (i < cumulative.length - 1 && cumulative[i] <= x) i++;
  return i;
}

function param(spec) {
  if (spec.random_int) {
    const [lo, hi] = spec.random_int;
    return lo + Math.floor(rng.random() * (hi - lo + 1));
  }
  if (spec.choice) {
    return spec.choice[spec.weights ? pick(spec.weights) : Math.floor(rng.random() * spec.choice.length)];
  }
  return spec.value;
}

function fill(template, values) {
  if (typeof template === 'string') {
    const whole = /^\{(\w+)\}$/.exec(template);
    if (whole && whole[1] in values) return values[whole[1]];  // keeps the value's JSON type
    return template.replace(/\{(\w+)\}/g, (m, name) => (name in values ? String(values[name]) : m));
  }
  if (Array.isArray(template)) return template.map((v) => fill(v, values));
  if (template !== null && typeof template === 'object') {
    const out = {};
    for (const k of Object.keys(template)) out[k] = fill(template[k], values);
    return out;
  }
  return template;
}

function jsonPath(doc, path) {
  let node = doc;
  for (const m of path.slice(1).matchAll(JSON_STEP)) {
    const key = m[2] !== undefined ? Number(m[2]) : (m[1] !== undefined ? m[1] : m[3]);
    if (node === null || typeof node !== 'object' || !(key in node)) {
      throw new CheckFailed(`${path}: nothing at ${m[0]}`);
    }
    node = node[key];
  }
  return node;
}

function extract(rule, res) {
  if (rule.header) {
    const name = Object.keys(res.headers).find((h) => h.toLowerCase() === rule.header.toLowerCase());
    if (name === undefined) throw new CheckFailed(`no ${rule.header} header`);
    return res.headers[name];
  }
  const text = res.body === null ? '' : String(res.body);
  if (rule.regex) {
    const m = new RegExp(rule.regex).exec(text);
    if (m === null) throw new CheckFailed(`regex '${rule.regex}' found nothing`);
    return m.length > 1 ? m[1] : m[0];
  }
  let doc;
  try { doc = JSON.parse(text); } catch (e) { throw new CheckFailed('response is not JSON'); }
  return jsonPath(doc, rule.json);
}

function send(req, values) {
  const path = fill(req.path, values);
  const url = /^https?:\/\//.test(path) ? path : PLAN.base_url + path;
  const headers = {};
  for (const k of Object.keys(req.headers)) headers[k] = String(fill(req.headers[k], values));
  let body = null;
  if (req.json !== null) {
    body = JSON.stringify(fill(req.json, values));
    if (!Object.keys(headers).some((h) => h.toLowerCase() === 'content-type')) {
      headers['Content-Type'] = 'application/json';
    }
  } else if (req.body !== null) {
    body = String(fill(req.body, values));
  }
  const res = http.request(req.method, url, body,
                           { headers, timeout: req.timeout, responseType: req.keep_body ? 'text' : 'none' });
  if (res.status === 0) throw new CheckFailed(`k6: ${res.error} (code ${res.error_code})`);
  const ok = req.statuses ? req.statuses.includes(res.status) : res.status >= 200 && res.status < 400;
  if (!ok) throw new CheckFailed(`HTTP ${res.status} from ${req.method} ${req.path}`);
  if (req.expect_body !== null && !String(res.body).includes(req.expect_body)) {
    throw new CheckFailed(`${req.method} ${req.path}: body lacks '${req.expect_body}'`);
  }
  for (const name of Object.keys(req.extract)) {
    const value = extract(req.extract[name], res);
    vars[name] = value;
    values[name] = value;
  }
}

function runTransaction(user, script, txIndex, iteration) {
  const md = exec.vu.metrics.metadata;
  const tx = PLAN.transactions[txIndex];
  const values = Object.assign({}, vars);
  for (const name of Object.keys(tx.params)) values[name] = param(tx.params[name]);
  md.id = `${user}:${seq++}:${script}:${txIndex}`;
  let error = '';
  try {
    for (const req of tx.requests) send(req, values);
  } catch (e) {
    if (!(e instanceof CheckFailed)) throw e;
    error = e.message.slice(0, 500);
  }
  md.it = iteration;
  if (error) md.error = error;
  txDone.add(1);
  delete md.error;
  delete md.it;
  delete md.id;
}

function runScript(user, index, iteration) {
  for (const step of PLAN.scripts[index]) {
    if (step.think > 0) sleep(step.think);
    runTransaction(user, index, step.tx, iteration);
  }
}

export default function () {
  const md = exec.vu.metrics.metadata;
  const iteration = `${exec.vu.idInTest}.${exec.vu.iterationInInstance}`;
  // closed loop: a user per VU, its variables kept; open loop: every arrival a new user
  const user = PLAN.open ? exec.scenario.iterationInTest : exec.vu.idInTest - 1;
  if (PLAN.open) vars = {};
  if (PLAN.open || rng === null) rng = new Random(PLAN.seed, user);  // a stream per user, as the variables
  md.it = iteration;
  iterationStart.add(1);
  delete md.it;
  if (PLAN.init !== null && !PLAN.open && !loggedOn) runScript(user, PLAN.init, iteration);  // as the native driver
  loggedOn = true;
  runScript(user, PLAN.mix[pick(PLAN.cumulative)], iteration);
}
"""


def script_text(plan: dict[str, Any]) -> str:
    return f"const PLAN = {json.dumps(plan, indent=1)};\n{RUNTIME}"


def plan(workload: Workload, scenario: dict[str, Any], open_loop: bool, seed: int) -> dict[str, Any]:
    """The workload as data for RUNTIME, with k6's options (one scenario) and the seed of this
    k6 run (32 bits: see tool_seed)."""
    target = workload.target
    assert isinstance(target, HttpTarget)
    default_think = constant_think(workload.think, 0.0)
    names = {s.name: i for i, s in enumerate(workload.scripts)}
    tx_index = {t.name: i for i, t in enumerate(workload.transactions)}
    mix, cumulative = script_mix(workload)
    return {
        "options": {"scenarios": {"perflab": scenario}, "systemTags": SYSTEM_TAGS, "maxRedirects": 0,
                    "summaryTrendStats": ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"]},
        "open": open_loop,
        "seed": seed,
        "base_url": target.base_url,
        "scripts": [[{"tx": tx_index[step.transaction],
                      "think": constant_think(step.think, default_think)}
                     for step in script.steps] for script in workload.scripts],
        "mix": mix,
        "cumulative": cumulative,
        "init": names[workload.init_script] if workload.init_script is not None else None,
        "transactions": [{"params": {name: _param(spec) for name, spec in tx.params.items()},
                          "requests": [_request(r, target, tx.timeout) for r in tx.http_body()]}
                         for tx in workload.transactions],
    }


def _param(spec) -> dict[str, Any]:
    if isinstance(spec, RandomInt):
        return {"random_int": list(spec.random_int)}
    if isinstance(spec, Choice):
        weights = None
        if spec.weights is not None:
            weights, total = [], 0.0
            for w in spec.weights:
                total += w
                weights.append(total)
        return {"choice": spec.choice, "weights": weights}
    assert isinstance(spec, Constant)
    return {"value": spec.value}


def _request(request, target: HttpTarget, tx_timeout: float | None) -> dict[str, Any]:
    statuses = request.expect_status
    if isinstance(statuses, int):
        statuses = [statuses]
    timeout = tx_timeout if tx_timeout is not None else target.timeout
    return {
        "method": request.method.upper(),
        "path": request.path,
        "headers": {**target.headers, **request.headers},
        "json": request.json_body,
        "body": request.body,
        "statuses": statuses or None,
        "expect_body": request.expect_body,
        "extract": {name: {"json": rule.json_path, "regex": rule.regex, "header": rule.header}
                    for name, rule in request.extract.items()},
        # k6 reads the body either way; it keeps it only where a check or extraction needs it
        "keep_body": bool(request.expect_body is not None or request.extract),
        "timeout": f"{max(1, round(timeout * 1000))}ms",
    }


def closed_scenario(users: int, seconds: float, stagger: float = 0.0) -> dict[str, Any]:
    """`users` VUs for `seconds`; with a stagger, VUs start one by one over it (ramping-vus).
    In-flight iterations finish after the end (gracefulStop), so every request k6 counts is
    a whole transaction."""
    if stagger > 0:
        return {"executor": "ramping-vus", "startVUs": 0, "gracefulRampDown": "30s", "gracefulStop": "30s",
                "stages": [{"duration": _ms(stagger), "target": users},
                           {"duration": _ms(max(0.001, seconds - stagger)), "target": users}]}
    return {"executor": "constant-vus", "vus": users, "duration": _ms(seconds), "gracefulStop": "30s"}


def open_scenario(rate: float, seconds: float, workload: Workload) -> dict[str, Any]:
    """Arrivals at a constant rate. k6 takes an integer rate per time unit: rate per 1000 s
    keeps three decimals. An arrival that finds no free VU (max_in_flight of them) is dropped.

    k6 also drops an arrival that finds every *pre-allocated* VU busy while it starts one more
    in the background, so the pre-allocation is what absorbs a stall: a fifth of a second of
    arrivals (rate / 5 VUs). With rate / 20 (50 ms), 17 of 600
    arrivals at 200/s were dropped on a busy CI host (2026-11-27): drops that measured the host,
    not the SUT."""
    max_vus = workload.load.max_in_flight if isinstance(workload.load, OpenLoad) else 1000
    return {"executor": "constant-arrival-rate", "rate": max(1, round(rate * 1000)), "timeUnit": "1000s",
            "duration": _ms(seconds), "preAllocatedVUs": min(max_vus, max(5, math.ceil(rate / 5))),
            "maxVUs": max_vus, "gracefulStop": "30s"}


def _ms(seconds: float) -> str:
    return f"{max(1, round(seconds * 1000))}ms"
