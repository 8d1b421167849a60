"""A team's history in one store: run archives, exported on each machine and imported into one.

    perflab archive export lab-2.tar --since 2026-12-01     # on each machine (a CI job, after its runs)
    perflab archive import lab-2.tar                        # into the team's store

An archive is a tar file (`.tar`, or compressed: `.tar.gz`, `.tgz`) holding run directories as
the store keeps them (`runs/<id>/`: run.json, transactions.parquet, samples.parquet...), the
studies they belong to (`studies/<id>/`: study.json and its reports: a history reads a study's
design for its series key), and `perflab-archive.json`, the manifest: every file with its size and
SHA-256, and the exporting machine's identity.

Why archives and not a shared catalog in PostgreSQL (docs/history.md, "A team's history"): the
catalog is an index, the data are the run directories -- parquet files of megabytes to gigabytes
that the reduction, the reports and the history read. A shared catalog would list runs that the
machine reading it cannot reduce unless the files are shared too (a network file system or an
object store, and its failure modes), and would make every Store operation a second back-end with
its own locking. An archive moves the files with their index entries, works between machines that
never see each other (a CI runner, a laptop, a lab behind a firewall), and leaves each store as it
is: an embedded catalog that `perflab runs --rescan` can rebuild from the files. The host stays
in each run's fingerprint (run.json), so the history keeps the runs of two hosts apart.

Import is safe on any archive: members are regular files under `runs/<id>/` or `studies/<id>/`
only (no links, no absolute or `..` paths), every file is checked against the manifest's size and
checksum, a run is unpacked into a temporary directory of the store and renamed into place whole
(the catalog indexes it after), and a run already in the store is kept: skipped when its files are
the same, refused (and said so) when they differ -- an import never overwrites a measurement.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import secrets
import shutil
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from perflab.errors import InputError
from perflab.records.run import RunRecord, parse_run_record
from perflab.store.catalog import Store, is_plain_name

MANIFEST = "perflab-archive.json"
ARCHIVE_FORMAT = 1
#: The machine's identity recorded in the manifest (the runs' own fingerprints are what count).
SOURCE_FIELDS = ("hostname", "cpu_model", "cores", "memory_bytes", "arch", "kernel")
_CHUNK = 1 << 20


@dataclass
class ExportResult:
    path: Path
    runs: list[str]
    studies: list[str]
    bytes: int


@dataclass
class ImportResult:
    imported: list[str] = field(default_factory=list)
    same: list[str] = field(default_factory=list)          # already in the store, identical
    refused: list[tuple[str, str]] = field(default_factory=list)   # (run id, why)
    studies: list[str] = field(default_factory=list)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _files(directory: Path) -> dict[str, dict[str, Any]]:
    """Every regular file of a run or study directory (recursively), by relative path."""
    out: dict[str, dict[str, Any]] = {}
    for path in sorted(directory.rglob("*")):
        if path.is_symlink() or not path.is_file():
            continue
        rel = path.relative_to(directory).as_posix()
        if rel.startswith(".") or "/." in rel:      # temporary files of a writer (atomic writes)
            continue
        out[rel] = {"size": path.stat().st_size, "sha256": _sha256(path)}
    return out


def _read_record(run_dir: Path) -> RunRecord:
    return parse_run_record(json.loads((run_dir / "run.json").read_text(encoding="utf-8")), run_dir / "run.json")


def _since(text: str | None) -> dt.datetime | None:
    if text is None:
        return None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"expected a date or time such as 2026-12-01 or 2026-12-01T08:00, got {text!r}",
                         field="--since") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.datetime.now().astimezone().tzinfo)


def _created(record: RunRecord) -> dt.datetime | None:
    try:
        when = dt.datetime.fromisoformat(record.created)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def chosen_runs(store: Store, run_ids: Iterable[str] = (), workload: str | None = None,
                since: str | None = None) -> list[tuple[Path, RunRecord]]:
    """The finished runs to export: the ids given (all when none), of `workload`, created since."""
    after = _since(since)
    wanted = list(run_ids)
    dirs = [store.resolve(ref) for ref in wanted] if wanted else sorted(store.runs_dir.glob("*/"))
    out = []
    for run_dir in dirs:
        if not (run_dir / "run.json").is_file():
            continue
        try:
            record = _read_record(run_dir)
        except (OSError, ValueError, InputError):
            continue
        if record.status == "running":
            continue      # a run still being written (or abandoned): its files are not final
        if workload is not None and record.workload_name != workload:
            continue
        created = _created(record)
        if after is not None and (created is None or created < after):
            continue
        out.append((run_dir, record))
    return out


def export_archive(store: Store, out: Path, run_ids: Iterable[str] = (), workload: str | None = None,
                   since: str | None = None, source: dict[str, Any] | None = None) -> ExportResult:
    """Write the chosen runs, the studies they belong to and the manifest into `out` (atomically)."""
    out = Path(out)
    if not out.name.endswith((".tar", ".tar.gz", ".tgz")):
        raise InputError("an archive is a .tar, .tar.gz or .tgz file", field="FILE")
    runs = chosen_runs(store, run_ids, workload, since)
    if not runs:
        raise InputError("no finished run matches: nothing to export", field="--run/--workload/--since")
    studies = sorted({r.study for _, r in runs if r.study and (store.home / "studies" / r.study / "study.json").is_file()})
    manifest: dict[str, Any] = {"format": ARCHIVE_FORMAT, "created": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
                      "source": {k: (source or {}).get(k) for k in SOURCE_FIELDS}, "runs": {}, "studies": {}}
    for run_dir, record in runs:
        manifest["runs"][record.run_id] = _files(run_dir)
    for study_id in studies:
        manifest["studies"][study_id] = _files(store.home / "studies" / study_id)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{secrets.token_hex(3)}.tmp")
    try:
        compressed = out.name.endswith((".tar.gz", ".tgz"))
        with (tarfile.open(tmp, "w:gz") if compressed else tarfile.open(tmp, "w")) as tar:
            data = json.dumps(manifest, indent=1).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size = len(data)
            info.mtime = int(dt.datetime.now().timestamp())
            tar.addfile(info, io.BytesIO(data))
            for kind, entries, root in (("runs", manifest["runs"], store.runs_dir),
                                        ("studies", manifest["studies"], store.home / "studies")):
                for name, files in entries.items():
                    for rel in files:
                        tar.add(root / name / rel, arcname=f"{kind}/{name}/{rel}", recursive=False)
        os.replace(tmp, out)
    except OSError as exc:
        raise InputError(f"cannot write the archive: {exc.strerror or exc}", file=out) from None
    finally:
        tmp.unlink(missing_ok=True)
    return ExportResult(out, [r.run_id for _, r in runs], studies, out.stat().st_size)


# -- import ------------------------------------------------------------------------------------------

def _member_parts(member: tarfile.TarInfo, archive: Path) -> tuple[str, str, str] | None:
    """(kind, id, relative path) of a file member; None for the manifest; InputError for anything
    an archive must not hold."""
    name = member.name
    if name == MANIFEST:
        return None
    path = PurePosixPath(name)
    parts = path.parts
    if path.is_absolute() or ".." in parts or len(parts) < 3 or parts[0] not in ("runs", "studies") \
            or not is_plain_name(parts[1]) or parts[1].startswith("."):
        raise InputError(f"not a perflab archive member: {name!r}", file=archive)
    if member.isdir():
        return None
    if not member.isfile():
        raise InputError(f"{name!r} is not a regular file (links and devices are refused)", file=archive)
    return parts[0], parts[1], "/".join(parts[2:])


def _open(path: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(path, "r:*")
    except FileNotFoundError:
        raise InputError("no such file", file=path) from None
    except (tarfile.TarError, OSError) as exc:
        raise InputError(f"not a readable tar archive ({exc})", file=path) from None


def read_manifest(path: Path) -> dict[str, Any]:
    with _open(path) as tar:
        try:
            member = tar.getmember(MANIFEST)
            handle = tar.extractfile(member)
            data = json.loads(handle.read().decode()) if handle is not None else None
        except KeyError:
            raise InputError(f"not a perflab archive: no {MANIFEST}", file=path) from None
        except (ValueError, UnicodeDecodeError, tarfile.TarError) as exc:
            raise InputError(f"{MANIFEST} cannot be read: {exc}", file=path) from None
    if not isinstance(data, dict) or not isinstance(data.get("runs"), dict):
        raise InputError(f"{MANIFEST} is not a perflab archive manifest", file=path)
    if data.get("format") != ARCHIVE_FORMAT:
        raise InputError(f"archive format {data.get('format')!r}: this perflab reads format {ARCHIVE_FORMAT}", file=path)
    return data


def _same(directory: Path, files: dict[str, dict[str, Any]]) -> bool:
    return _files(directory) == files


def _unpack(tar: tarfile.TarFile, archive: Path, kind: str, name: str, files: dict[str, dict[str, Any]],
            members: dict[tuple[str, str], list[tarfile.TarInfo]], target: Path) -> None:
    """The files of one run or study into `target` (a new directory), each checked."""
    got = {}
    for member in members.get((kind, name), []):
        parts = _member_parts(member, archive)
        assert parts is not None        # members are files of this run or study
        rel = parts[2]
        if rel not in files:
            raise InputError(f"{member.name} is not in the manifest", file=archive)
        dest = target / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        source = tar.extractfile(member)
        if source is None:
            raise InputError(f"{member.name} cannot be read", file=archive)
        digest = hashlib.sha256()
        with open(dest, "wb") as handle:
            while chunk := source.read(_CHUNK):
                digest.update(chunk)
                handle.write(chunk)
        if digest.hexdigest() != files[rel].get("sha256") or dest.stat().st_size != files[rel].get("size"):
            raise InputError(f"{member.name} does not match the manifest's checksum: the archive is damaged",
                             file=archive)
        got[rel] = True
    missing = sorted(set(files) - set(got))
    if missing:
        raise InputError(f"{kind}/{name}/{missing[0]} is in the manifest but not in the archive", file=archive)


def _members(tar: tarfile.TarFile, archive: Path) -> dict[tuple[str, str], list[tarfile.TarInfo]]:
    out: dict[tuple[str, str], list[tarfile.TarInfo]] = {}
    for member in tar.getmembers():
        parts = _member_parts(member, archive)
        if parts is not None:
            out.setdefault((parts[0], parts[1]), []).append(member)
    return out


def import_archive(store: Store, path: Path) -> ImportResult:
    """Bring an archive's runs and studies into `store` (module doc: what is checked, what is kept)."""
    path = Path(path)
    manifest = read_manifest(path)
    result = ImportResult()
    store.runs_dir.mkdir(parents=True, exist_ok=True)
    staging = store.home / f".import-{secrets.token_hex(4)}"
    with _open(path) as tar:
        members = _members(tar, path)
        unknown = sorted(f"{k}/{n}" for k, n in members if n not in manifest.get(k, {}))
        if unknown:
            raise InputError(f"{unknown[0]} is in the archive but not in its manifest", file=path)
        staging.mkdir()
        try:
            for study_id, files in sorted((manifest.get("studies") or {}).items()):
                final = store.home / "studies" / study_id
                if final.exists():
                    continue       # a study is kept as it is (its runs are checked one by one)
                target = staging / "studies" / study_id
                _unpack(tar, path, "studies", study_id, files, members, target)
                final.parent.mkdir(parents=True, exist_ok=True)
                os.rename(target, final)
                result.studies.append(study_id)
            for run_id, files in sorted(manifest["runs"].items()):
                if not is_plain_name(run_id):
                    raise InputError(f"not a run id: {run_id!r}", file=path)
                final = store.run_dir(run_id)
                if final.exists():
                    if _same(final, files):
                        result.same.append(run_id)
                    else:
                        result.refused.append((run_id, "a different run with this id is in the store: kept, not "
                                                        "overwritten"))
                    continue
                target = staging / "runs" / run_id
                try:
                    _unpack(tar, path, "runs", run_id, files, members, target)
                except InputError as exc:
                    result.refused.append((run_id, exc.message))
                    continue
                try:
                    record = _read_record(target)
                except (OSError, ValueError, InputError) as exc:
                    result.refused.append((run_id, f"its run.json cannot be read: {exc}"))
                    continue
                if record.run_id != run_id:
                    result.refused.append((run_id, f"its run.json names another run ({record.run_id})"))
                    continue
                os.rename(target, final)
                store.index(record)
                result.imported.append(run_id)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return result


def archive_runs(path: Path) -> Iterator[str]:
    """The run ids an archive holds (its manifest)."""
    yield from read_manifest(path)["runs"]
