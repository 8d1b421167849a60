"""The compiled loop built under AddressSanitizer and UndefinedBehaviorSanitizer, run on the tests
that feed it hostile input: the parsers' (tests/core/test_native_parsers.py, property-based
input included) and the hostile servers' (tests/net/test_native_hostile.py). Any out-of-bounds
access, use after free, overflow or undefined shift aborts the run and fails this test.

The build is a copy of perflab's source with the extension replaced by the sanitized one, put
first on the import path of a pytest of its own (ASan's runtime preloaded into that Python). The
two tests of peak memory are left out there: ASan's shadow memory and quarantine are the
process's peak, not the loop's (they run unsanitized in the suite)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import programs
import pytest

REPO = Path(__file__).resolve().parents[2]
LOOP = REPO / "src" / "perflab" / "drive" / "load" / "loop"
pytestmark = [*programs.needs_compiled_loop(), pytest.mark.lab]
SANITIZE = ["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-g", "-O1"]


def build(out: Path) -> None:
    """The extension, sanitized, at `out` (setup.py's sources and flags, and the sanitizers')."""
    tls = (Path("/usr/include/openssl/ssl.h")).is_file()
    sources = sorted(str(p) for p in LOOP.glob("*.c"))
    command = ["gcc", "-shared", "-fPIC", "-std=gnu11", "-Wall", "-Wextra", "-Werror", *SANITIZE,
               f"-I{sysconfig.get_paths()['include']}", *(["-DPERFLAB_TLS=1"] if tls else []), *sources,
               "-o", str(out), *(["-lssl", "-lcrypto"] if tls else [])]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_the_loop_under_asan_and_ubsan_survives_the_hostile_tests(tmp_path):
    copy = tmp_path / "src" / "perflab"
    shutil.copytree(REPO / "src" / "perflab", copy, ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    module = copy / "drive" / "load" / f"http_loop{sysconfig.get_config_var('EXT_SUFFIX')}"
    build(module)
    asan = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip()
    logs = tmp_path / "sanitizer"
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'src'}{os.pathsep}{REPO / 'tests'}", "LD_PRELOAD": asan,
           # Python frees not everything at exit by design: leaks are not what is looked for here. The
           # reports go to files: pytest captures the standard error of the process they end.
           "ASAN_OPTIONS": f"detect_leaks=0:allocator_may_return_null=1:log_path={logs}",
           "UBSAN_OPTIONS": f"print_stacktrace=1:halt_on_error=1:log_path={logs}"}
    check = subprocess.run([sys.executable, "-c", "import perflab.drive.load.http_loop as h; print(h.__file__); "
                            "print(any('libasan' in line for line in open('/proc/self/maps')))"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert check.stdout.split() == [str(module), "True"], check.stdout + check.stderr
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                           "-k", "not 96_mib and not rows_of_any_size",
                           str(REPO / "tests" / "core" / "test_native_parsers.py"),
                           str(REPO / "tests" / "net" / "test_native_hostile.py")],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=1200)
    reports = "".join(p.read_text(errors="replace") for p in sorted(tmp_path.glob("sanitizer*")))
    assert not reports, reports[:6000]
    assert done.returncode == 0, (done.stdout + done.stderr)[-6000:]
