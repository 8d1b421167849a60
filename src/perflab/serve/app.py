"""The web application (aiohttp.web): pages over the run store, downloads, live streams.

Pages are jinja2 templates with autoescape on; their behaviour is one script file shipped in
the package (static/app.js), so the Content-Security-Policy can forbid inline script. Reports
(the run report, the study report, the compare report) are rendered by perflab's exporters and
shown in a frame, with the policy they carry when opened from disk.

Work that takes more than a moment (reducing a run, drawing charts, comparing groups) runs on
one background thread: the event loop keeps serving the live streams meanwhile, and matplotlib
(whose rc_context is process-global) draws one report at a time.

Live: while a run is `running`, its page subscribes to /events/runs/ID (server-sent events), a
message a second from its live.json; when run.json leaves `running` the stream says `end` and
the page reloads into the stored report. Studies and the lists work the same way.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlencode

import jinja2

from perflab.errors import InputError
from perflab.extras import require
from perflab.records.live import LiveStatus
from perflab.reduce.reduce import TRANSACTION_KEYS
from perflab.report import numbers as fmt
from perflab.report import view as report_view
from perflab.report.answer import aa_rows, answer_rows
from perflab.report.html import plain_text
from perflab.report.run import data as run_data
from perflab.report.run.export import EXPORTERS as RUN_EXPORTERS
from perflab.report.run.model import TRANSACTIONS_TITLE, RunReport, ThresholdRow, build_report, heading, read_record
from perflab.serve import compare as cmp
from perflab.serve.data import ID, RUN_FILES, Cache, FileKey, NotFound, RunFilter, StoreView, file_key, study_summary
from perflab.serve.history import history_page
from perflab.serve.security import DOWNLOAD_CSP, REPORT_CSP, guard, headers

if TYPE_CHECKING:
    from aiohttp import web
    from aiohttp.typedefs import Handler
else:
    web = require("aiohttp.web", extra="serve", feature="perflab serve")   # this module is the web application

log = logging.getLogger("perflab.serve")
PACKAGE = Path(__file__).resolve().parent
#: How often the live streams look at the store.
POLL_S = 1.0
#: A compare result is reused this long (the page, its frame and the downloads ask in turn).
COMPARE_TTL_S = 30.0

T = TypeVar("T")
#: A live stream's message: the event's name and its data (sent as JSON).
Event = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class RunTexts:
    """A run's reports as served: each format's text by kind (html, md, json), and the report
    they were rendered from (the page's own views and the CSV files read it)."""

    texts: dict[str, str]
    report: RunReport


@dataclass
class ServeState:
    """What the application keeps beside the store: the page templates, the one thread that
    renders reports, and the reports rendered (each keyed by what it depends on)."""

    templates: jinja2.Environment
    render: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(max_workers=1, thread_name_prefix="perflab-render"))
    runs: Cache[tuple[str, FileKey], RunTexts] = field(default_factory=Cache)
    studies: Cache[tuple[str, FileKey], dict[str, str]] = field(default_factory=Cache)
    compare: Cache[tuple[cmp.CompareQuery, int], cmp.CompareResult] = field(default_factory=lambda: Cache(16))


STORE = web.AppKey("store", StoreView)
STATE = web.AppKey("state", ServeState)


def create_app(home: Path, token: str | None = None, check_host: bool = True) -> web.Application:
    """The application over the store at `home`. `token`: required on every request when given;
    `check_host`: answer only requests addressed to the loopback (the default binding)."""
    app = web.Application(middlewares=[guard(token, check_host), _errors])
    app[STORE] = StoreView(Path(home))
    app[STATE] = ServeState(templates=_templates())
    app.on_response_prepare.append(headers)
    app.on_cleanup.append(_cleanup)
    r = app.router
    r.add_get("/", root)
    r.add_get("/favicon.ico", favicon)
    r.add_get("/runs", runs_page)
    r.add_get("/runs/{run_id}", run_page)
    r.add_get("/runs/{run_id}/report.{kind:html|md|json}", run_report_file)
    r.add_get("/runs/{run_id}/data.json", run_chart_data)
    r.add_get("/runs/{run_id}/{table:intervals|transactions}.csv", run_csv)
    r.add_get("/runs/{run_id}/files/{name}", run_file)
    r.add_get("/studies", studies_page)
    r.add_get("/studies/{study_id}", study_page)
    r.add_get("/studies/{study_id}/report.{kind:html|md|json}", study_report_file)
    r.add_get("/studies/{study_id}/study.json", study_json)
    r.add_get("/compare", compare_page)
    r.add_get("/compare/report.{kind:html|md|json}", compare_report_file)
    r.add_get("/compare/series.json", compare_series)
    r.add_get("/history", history_page)
    r.add_get("/api/runs", api_runs)
    r.add_get("/api/compare", api_compare)
    r.add_get("/events/runs", events_runs)
    r.add_get("/events/runs/{run_id}", events_run)
    r.add_get("/events/studies", events_studies)
    r.add_get("/events/studies/{study_id}", events_study)
    r.add_static("/static", PACKAGE / "static", follow_symlinks=False)
    return app


async def _cleanup(app: web.Application) -> None:
    app[STATE].render.shutdown(wait=False, cancel_futures=True)


def _templates() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("perflab.serve", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, finalize=plain_text)   # control chars as \xNN
    env.filters["qs"] = lambda params: urlencode({k: v for k, v in params.items() if v not in (None, "")})
    env.filters["number"] = lambda value, digits=2: "" if fmt.number(value) is None else f"{fmt.number(value):.{digits}f}"
    env.filters["metric"] = lambda value, key, entry=None: fmt.value(value, key, entry)
    env.filters["ratio"] = fmt.ratio
    env.filters["ci"] = lambda entry: fmt.ci_ratio(entry.ci_low, entry.ci_high)
    env.filters["label"] = fmt.label_of
    env.filters["percent"] = fmt.percent_level
    # the per-transaction table's columns, stored (the report's) and live (app.js fills it)
    env.globals["transaction_keys"] = list(TRANSACTION_KEYS)
    env.globals["transaction_headings"] = ["transaction"] + [heading(k) for k in TRANSACTION_KEYS]
    return env


async def root(request: web.Request) -> web.Response:
    raise web.HTTPFound("/runs")


async def favicon(request: web.Request) -> web.Response:
    # Browsers ask for it whatever the page says; the answer is "none", not a 404 in the log.
    return web.Response(status=204)


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Bad input is the user's to fix: a 400 page with the one-line message; an id that names
    nothing, a 404. Anything else is a bug: logged, and a 500 page without details."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except InputError as exc:
        return _page(request, "error.html.j2", code=400, title="Bad request", message=str(exc))
    except NotFound as exc:
        return _page(request, "error.html.j2", code=404, title="Not found",
                     message=f"nothing named {exc.args[0] if exc.args else '?'!r} in this store")
    except (ConnectionResetError, asyncio.CancelledError):
        raise
    except Exception:
        log.exception("error serving %s", request.path)
        return _page(request, "error.html.j2", code=500, title="Server error",
                     message="perflab serve failed on this request; the details are in its log.")


def _page(request: web.Request, template: str, code: int = 200, **context: Any) -> web.Response:
    store = request.app[STORE]
    html = request.app[STATE].templates.get_template(template).render(store=str(store.home), path=request.path, **context)
    return web.Response(text=html, status=code, content_type="text/html", charset="utf-8")


async def _render(request: web.Request, make: Callable[[], T]) -> T:
    """`make()` on the render thread (the event loop keeps serving meanwhile)."""
    return await asyncio.get_running_loop().run_in_executor(request.app[STATE].render, make)


def _document(text: str, kind: str, name: str, download: bool) -> web.Response:
    """A report as a response: HTML under the report policy, Markdown and JSON as text."""
    types = {"html": "text/html", "md": "text/markdown", "json": "application/json"}
    response = web.Response(text=text, content_type=types[kind], charset="utf-8")
    response.headers["Content-Security-Policy"] = REPORT_CSP if kind == "html" else DOWNLOAD_CSP
    if download or kind != "html":
        response.headers["Content-Disposition"] = f'{"attachment" if download else "inline"}; filename="{name}"'
    return response


# -- runs ----------------------------------------------------------------------------------------

async def runs_page(request: web.Request) -> web.Response:
    store = request.app[STORE]
    f = RunFilter.from_query(dict(request.query))
    entries = await asyncio.to_thread(store.runs, f)
    live = {e.row.run_id: store.live(e.row.run_id) for e in entries if e.running}
    labels = sorted({r.label for r in await asyncio.to_thread(store.store.rows) if r.label})
    return _page(request, "runs.html.j2", title="Runs", f=f, entries=entries, live=live, labels=labels,
                 version=store.runs_version(entries), query=f.query())


async def api_runs(request: web.Request) -> web.Response:
    store = request.app[STORE]
    entries = await asyncio.to_thread(store.runs, RunFilter.from_query(dict(request.query)))
    return web.json_response([e.as_json() for e in entries])


def _run_texts(store: StoreView, run_dir: Path, cache: Cache[tuple[str, FileKey], RunTexts]) -> RunTexts:
    """The run's three reports (and the report itself, for the page), rendered once per version
    of its files."""
    record = read_record(run_dir)
    study_id = record.study or ""
    study_path = store.studies_dir / study_id / "study.json" if ID.match(study_id) and ".." not in study_id else None
    key = (run_dir.name, file_key(run_dir / "run.json", run_dir / "transactions.parquet", run_dir / "samples.parquet",
                                  *([study_path] if study_path else [])))

    def make() -> RunTexts:
        study = None
        if study_path is not None:
            try:
                study = store.study(study_path.parent.name)
            except (NotFound, InputError, OSError):
                study = None
        report = build_report(run_dir, study)
        return RunTexts({e.suffix: e.render(report) for e in RUN_EXPORTERS}, report)

    return cache.get(key, make)


async def run_page(request: web.Request) -> web.Response:
    store = request.app[STORE]
    run_id = request.match_info["run_id"]
    run_dir = store.run_dir(run_id)
    record = store.run_record(run_id)
    status = store.run_status(record)
    files = [name for name in RUN_FILES if name != "live.json" and (run_dir / name).is_file()]
    study = None
    if record.study:
        try:
            study = study_summary(store.study(record.study), record.study)
        except (NotFound, InputError, OSError):
            study = None
    thresholds: list[ThresholdRow] = []
    report: RunReport | None = None
    if status != "running":
        report = (await _run_texts_of(request, run_dir)).report
        thresholds = report.thresholds
    outcome = await asyncio.to_thread(store.run_outcome, record)
    return _page(request, "run.html.j2", title=f"Run {run_id}", run=record, run_id=run_id, status=status,
                 outcome=outcome,
                 live=store.live(run_id) if status == "running" else None, files=files, study=study,
                 workload=record.workload_name, thresholds=thresholds, report=report,
                 transactions=report.table(TRANSACTIONS_TITLE) if report is not None else None,
                 units=json.dumps(run_data.units()))


async def run_report_file(request: web.Request) -> web.Response:
    store = request.app[STORE]
    run_id, kind = request.match_info["run_id"], request.match_info["kind"]
    texts = await _run_texts_of(request, store.run_dir(run_id))
    return _document(texts.texts[kind], kind, f"{run_id}-report.{kind}", "download" in request.query)


async def _run_texts_of(request: web.Request, run_dir: Path) -> RunTexts:
    store, cache = request.app[STORE], request.app[STATE].runs
    return await _render(request, lambda: _run_texts(store, run_dir, cache))


async def _run_report(request: web.Request) -> RunReport:
    store = request.app[STORE]
    return (await _run_texts_of(request, store.run_dir(request.match_info["run_id"]))).report


def _no_data(request: web.Request, why: run_data.NoData) -> web.Response:
    return _page(request, "error.html.j2", code=404, title="No data",
                 message=f"run {request.match_info['run_id']} has no measurements to give: {why}")


async def run_chart_data(request: web.Request) -> web.Response:
    """The run page's charts: every interval of the run (run_data.chart_data)."""
    report = await _run_report(request)
    try:
        return web.json_response(run_data.chart_data(report))
    except run_data.NoData as exc:
        return _no_data(request, exc)


async def run_csv(request: web.Request) -> web.Response:
    """intervals.csv (every interval of the run) or transactions.csv (per transaction name)."""
    run_id, table = request.match_info["run_id"], request.match_info["table"]
    report = await _run_report(request)
    try:
        text = run_data.intervals_csv(report) if table == "intervals" else run_data.transactions_csv(report)
    except run_data.NoData as exc:
        return _no_data(request, exc)
    return web.Response(text=text, content_type="text/csv", charset="utf-8",
                        headers={"Content-Security-Policy": DOWNLOAD_CSP,
                                 "Content-Disposition": f'attachment; filename="{run_id}-{table}.csv"'})


async def run_file(request: web.Request) -> web.StreamResponse:
    store = request.app[STORE]
    run_id, name = request.match_info["run_id"], request.match_info["name"]
    if name not in RUN_FILES:
        raise NotFound(name)
    path = store.run_dir(run_id) / name
    if not path.is_file():
        raise NotFound(name)
    return web.FileResponse(path, headers={"Content-Type": RUN_FILES[name], "Content-Security-Policy": DOWNLOAD_CSP,
                                           "Content-Disposition": f'attachment; filename="{run_id}-{name}"'})


# -- studies -------------------------------------------------------------------------------------

STUDY_FILTERS = ("workload", "status", "since", "until")


def _study_filters(request: web.Request) -> dict[str, str]:
    return {k: request.query.get(k, "").strip() for k in STUDY_FILTERS}


async def studies_page(request: web.Request) -> web.Response:
    store = request.app[STORE]
    filters = _study_filters(request)
    studies = await asyncio.to_thread(store.studies, **filters)
    return _page(request, "studies.html.j2", title="Studies", studies=studies, filters=filters,
                 version=store.studies_version(studies),
                 query={k: v for k, v in filters.items() if v})


def _study_texts(store: StoreView, study_dir: Path, cache: Cache[tuple[str, FileKey], dict[str, str]]) -> dict[str, str]:
    """The study's reports: the files `perflab study` wrote when it finished; while it runs
    (or if it never finished), rendered from study.json as it stands."""
    from perflab.report.write import EXPORTERS

    doc = store.study(study_dir.name)
    stored = doc.status != "running" and all((study_dir / e.filename).is_file() for e in EXPORTERS)
    if stored:
        return {e.suffix: (study_dir / e.filename).read_text(encoding="utf-8") for e in EXPORTERS}
    key = (study_dir.name, file_key(study_dir / "study.json"))
    return cache.get(key, lambda: {e.suffix: e.render(doc) for e in EXPORTERS})


async def study_page(request: web.Request) -> web.Response:
    store = request.app[STORE]
    study_id = request.match_info["study_id"]
    doc = store.study(study_id)
    status = store.study_status(doc)
    current = store.current_run(doc) if status == "running" else None
    return _page(request, "study.html.j2", title=f"Study {study_id}", study_id=study_id, doc=doc, status=status,
                 summary=study_summary(doc, study_id), current=current,
                 live=store.live(current.row.run_id) if current else None, noise=report_view.noise_table(doc),
                 aa=aa_rows(doc), answer=answer_rows(doc), units=json.dumps(run_data.units()))


async def study_report_file(request: web.Request) -> web.Response:
    store = request.app[STORE]
    study_id, kind = request.match_info["study_id"], request.match_info["kind"]
    study_dir, cache = store.study_dir(study_id), request.app[STATE].studies
    texts = await _render(request, lambda: _study_texts(store, study_dir, cache))
    return _document(texts[kind], kind, f"{study_id}-report.{kind}", "download" in request.query)


async def study_json(request: web.Request) -> web.StreamResponse:
    store = request.app[STORE]
    study_id = request.match_info["study_id"]
    path = store.study_dir(study_id) / "study.json"
    return web.FileResponse(path, headers={"Content-Type": "application/json", "Content-Security-Policy": DOWNLOAD_CSP,
                                           "Content-Disposition": f'attachment; filename="{study_id}-study.json"'})


# -- compare -------------------------------------------------------------------------------------

async def _compare(request: web.Request, query: cmp.CompareQuery) -> cmp.CompareResult:
    store, cache = request.app[STORE], request.app[STATE].compare
    # A group such as label:NAME grows as runs finish: a result is reused for a short while only.
    key = (query, int(time.time() // COMPARE_TTL_S))
    return await _render(request, lambda: cache.get(key, lambda: cmp.run_compare(store.store, query)))


async def compare_page(request: web.Request) -> web.Response:
    store = request.app[STORE]
    refs = await asyncio.to_thread(store.refs)
    form = {k: request.query.get(k, "") for k in ("a", "b", "metric", *cmp.CRITERIA_FIELDS)}
    try:
        query = cmp.CompareQuery.from_query(request.query)
        result = await _compare(request, query) if query else None
    except InputError as exc:
        return _page(request, "compare.html.j2", code=400, title="Compare", form=form, refs=refs, result=None,
                     error=str(exc), words=cmp.EXIT_WORD)
    return _page(request, "compare.html.j2", title="Compare", form=form, refs=refs, result=result, error=None,
                 words=cmp.EXIT_WORD, units=json.dumps(run_data.units()), overlay_runs=cmp.OVERLAY_RUNS)


async def compare_report_file(request: web.Request) -> web.Response:
    query = cmp.CompareQuery.from_query(request.query)
    if query is None:
        raise InputError("give both groups, A (base) and B (new)", field="A")
    kind = request.match_info["kind"]
    result = await _compare(request, query)
    return _document(result.texts[f"report.{kind}"], kind, f"compare-report.{kind}", "download" in request.query)


async def compare_series(request: web.Request) -> web.Response:
    """The runs of both groups per interval, for the compare page's overlay."""
    query = cmp.CompareQuery.from_query(request.query)
    if query is None:
        raise InputError("give both groups, A (base) and B (new)", field="A")
    result = await _compare(request, query)
    return web.json_response(result.series())


async def api_compare(request: web.Request) -> web.Response:
    """The comparison as JSON, with the exit code `perflab compare` would end with."""
    query = cmp.CompareQuery.from_query(request.query)
    if query is None:
        raise InputError("give both groups, A (base) and B (new)", field="A")
    result = await _compare(request, query)
    return web.json_response({"exit_code": result.exit_code, "meaning": result.meaning,
                              "verdict": None if result.doc.verdict is None else result.doc.verdict.model_dump(),
                              "primary": [r.to_json() for r in result.primary],
                              "report": json.loads(result.texts["report.json"])})


# -- live streams (server-sent events) -------------------------------------------------------------

async def _pump(request: web.Request, step: Callable[[], list[Event]]) -> web.StreamResponse:
    """Send what `step` (run on a thread: it reads files and the catalog) returns, once per
    POLL_S, until it returns an `end` event or the browser goes away (ConnectionResetError:
    nothing to clean up, the loop just stops). Any other failure ends the stream (logged): the
    browser's EventSource then reconnects by itself."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store",
                                           "X-Accel-Buffering": "no"})
    await response.prepare(request)
    try:
        while True:
            events = await asyncio.to_thread(step)
            for event, data in events:
                payload = json.dumps(data, separators=(",", ":"), default=str)
                await response.write(f"event: {event}\ndata: {payload}\n\n".encode())
            if any(event == "end" for event, _ in events):
                return response
            await asyncio.sleep(POLL_S)
    except ConnectionResetError:
        return response
    except Exception:
        log.exception("live stream %s", request.path)
        return response


def live_payload(live: LiveStatus | None) -> dict[str, Any] | None:
    if live is None:
        return None
    return {**live.model_dump(mode="json"), "age_s": max(0.0, time.time() - live.updated)}


async def events_run(request: web.Request) -> web.StreamResponse:
    """`live` once a second while the run is running, then `end` (the page reloads)."""
    store = request.app[STORE]
    run_id = request.match_info["run_id"]
    store.run_dir(run_id)

    def step() -> list[Event]:
        try:
            status = store.run_status(store.run_record(run_id))
        except NotFound:                        # the run directory was removed meanwhile
            return [("end", {"status": "gone"})]
        except InputError:                      # run.json no longer reads as a run record
            return [("end", {"status": "unreadable"})]
        if status != "running":
            return [("end", {"status": status})]
        return [("live", {"status": status, "run_id": run_id, "live": live_payload(store.live(run_id))})]

    return await _pump(request, step)


async def events_study(request: web.Request) -> web.StreamResponse:
    """`study` once a second (runs done, the run in progress and its live.json), then `end`."""
    store = request.app[STORE]
    study_id = request.match_info["study_id"]
    store.study_dir(study_id)

    def step() -> list[Event]:
        try:
            doc = store.study(study_id)
        except NotFound:                        # the study directory was removed meanwhile
            return [("end", {"status": "gone"})]
        except InputError:                      # study.json no longer reads as a study document
            return [("end", {"status": "unreadable"})]
        status = store.study_status(doc)
        current = store.current_run(doc) if status == "running" else None
        state = {"status": status, "done": len(doc.runs), "planned": len(doc.design.schedule),
                 "current": None if current is None else {
                     "run_id": current.row.run_id, "label": current.row.label,
                     "live": live_payload(store.live(current.row.run_id))}}
        return [("study", state)] + ([("end", {"status": status})] if status != "running" else [])

    return await _pump(request, step)


async def events_runs(request: web.Request) -> web.StreamResponse:
    """`runs` once a second: the list's version (the page reloads when it changes: a run
    started, ended) and the live figures of its running runs."""
    store = request.app[STORE]
    f = RunFilter.from_query(dict(request.query))

    def step() -> list[Event]:
        entries = store.runs(f)
        return [("runs", {"version": store.runs_version(entries),
                          "live": {e.row.run_id: live_payload(store.live(e.row.run_id))
                                   for e in entries if e.running}})]

    return await _pump(request, step)


async def events_studies(request: web.Request) -> web.StreamResponse:
    store = request.app[STORE]
    filters = _study_filters(request)
    store.studies(**filters)        # bad input is a 400 before the stream starts

    def step() -> list[Event]:
        studies = store.studies(**filters)
        return [("studies", {"version": store.studies_version(studies)})]

    return await _pump(request, step)
