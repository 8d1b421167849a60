"""The one compiled part of perflab: the closed-loop users of the HTTP, TCP and PostgreSQL
targets (drive/load/http_loop.c, with pg_wire.h).

Optional: where it cannot be built (not Linux, no C compiler) the install goes on without it and
perflab runs those users on its Python path, saying so (drive/load/native_http.py).
"""

import sys

from setuptools import Extension, setup

extensions = []
if sys.platform.startswith("linux"):
    extensions.append(Extension("perflab.drive.load.http_loop", ["src/perflab/drive/load/http_loop.c"],
                                depends=["src/perflab/drive/load/pg_wire.h"],
                                extra_compile_args=["-O2", "-std=gnu11"], optional=True))

setup(ext_modules=extensions)
