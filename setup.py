"""The one compiled part of drsg: the fused order of hybrid candidates (workers/_fusion.c).
Everything else is configured in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "drsg.workers._fusion",
            ["workers/_fusion.c"],
            # no fused multiply-add: totals must round exactly as numpy's reference does
            extra_compile_args=["-O2", "-ffp-contract=off", "-std=c99"],
        )
    ]
)
