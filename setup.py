"""The compiled parts of drsg: the fused order of hybrid candidates (workers/_fusion.c), the
adjacency walk on LMDB's C API (store/_walk.c, its rows made by store/_records.c) and an import's
entries (store/_bulk.c). Everything else is configured in pyproject.toml."""

from setuptools import Extension, setup

# a function used without its declaration is an int-returning guess: a pointer it returns is cut to 32
# bits at run time, so that is a build error, not a warning
STRICT = ["-Werror=implicit-function-declaration"]

setup(
    ext_modules=[
        Extension(
            "drsg.workers._fusion",
            ["workers/_fusion.c"],
            # no fused multiply-add: totals must round exactly as numpy's reference does
            extra_compile_args=["-O2", "-ffp-contract=off", "-std=c99", *STRICT],
        ),
        # LMDB's functions are found at run time in py-lmdb's own extension (dlopen/dlsym): nothing to link
        Extension(
            "drsg.store._walk",
            ["store/_walk.c", "store/_records.c"],
            depends=["store/_walk.h", "store/_lmdb.h"],
            extra_compile_args=["-O2", "-std=c99", "-fvisibility=hidden", *STRICT],  # exports PyInit__walk alone
        ),
        # an import's new records as the projection's entries (store/bulkwrite.py)
        Extension(
            "drsg.store._bulk",
            ["store/_bulk.c", "store/_bulklines.c", "store/_bulkmap.c", "store/_bulkrun.c", "store/_bulkscan.c"],
            depends=["store/_bulk.h", "store/_lmdb.h"],
            extra_compile_args=["-O2", "-std=c99", "-fvisibility=hidden", *STRICT],
        ),
    ]
)
