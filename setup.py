"""The optional compiled kernels (pyhudi/_native.c); the project itself is described in pyproject.toml.

`optional=True`: without a C compiler the install goes on and pyhudi uses its numpy kernels, which give
the same results (pyhudi/index/murmur.py says which one runs)."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("pyhudi._native", ["pyhudi/_native.c"], optional=True,
                             extra_compile_args=["-O3"])])
