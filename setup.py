"""The one compiled part of perflab: the loop that runs the users of the HTTP, TCP and PostgreSQL
targets (drive/load/loop/: loop.c the users, connections and time line; proto_http.c and
proto_pg.c the protocols over http_parse.c and pg_wire.c; tls.c TLS on the machine's OpenSSL;
binding.c Python's side).

Optional: where it cannot be built (not Linux, no C compiler) the install goes on without it and
perflab runs those users on its Python path, saying so (drive/load/native_http.py). TLS is
compiled in where OpenSSL's headers are (Debian: libssl-dev); without them https targets take
the Python path, saying why. Warnings are errors (-Wall -Wextra -Werror): a warning is a bug not
yet found.
"""

import os
import sys
from pathlib import Path

from setuptools import Extension, setup

# Every source and header by name (tests/install/test_package_data.py checks none is left out).
SOURCES = [
    "src/perflab/drive/load/loop/binding.c",
    "src/perflab/drive/load/loop/loop.c",
    "src/perflab/drive/load/loop/proto_http.c",
    "src/perflab/drive/load/loop/proto_pg.c",
    "src/perflab/drive/load/loop/http_parse.c",
    "src/perflab/drive/load/loop/pg_wire.c",
    "src/perflab/drive/load/loop/params.c",
    "src/perflab/drive/load/loop/mem.c",
    "src/perflab/drive/load/loop/tls.c",
]
HEADERS = [
    "src/perflab/drive/load/loop/http_parse.h",
    "src/perflab/drive/load/loop/loop.h",
    "src/perflab/drive/load/loop/mem.h",
    "src/perflab/drive/load/loop/params.h",
    "src/perflab/drive/load/loop/pg_wire.h",
    "src/perflab/drive/load/loop/proto.h",
    "src/perflab/drive/load/loop/proto_http.h",
    "src/perflab/drive/load/loop/proto_pg.h",
    "src/perflab/drive/load/loop/rng.h",
    "src/perflab/drive/load/loop/tls.h",
    "src/perflab/drive/load/loop/transport.h",
]


def openssl_headers() -> bool:
    """OpenSSL's headers where the compiler looks (PERFLAB_NO_TLS=1 builds without TLS)."""
    if os.environ.get("PERFLAB_NO_TLS"):
        return False
    return any((Path(d) / "openssl" / "ssl.h").is_file() for d in ("/usr/include", "/usr/local/include"))


extensions = []
if sys.platform.startswith("linux"):
    tls = openssl_headers()
    extensions.append(Extension(
        "perflab.drive.load.http_loop", SOURCES, depends=HEADERS,
        extra_compile_args=["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror"],
        define_macros=[("PERFLAB_TLS", "1")] if tls else [],
        libraries=["ssl", "crypto"] if tls else [],
        optional=True))

setup(ext_modules=extensions)
