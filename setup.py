"""Build the kernels compiled ahead of time (`tieaware.kernels.ahead_of_time`) with the package.

Everything else is declared in pyproject.toml. Where the kernels cannot be compiled (no C compiler),
the package installs without them and numba compiles each kernel on its first use.
"""
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, str(Path(__file__).resolve().parent / "src"))
from tieaware.kernels.ahead_of_time import module_compiler  # noqa: E402
from tieaware.kernels.numba_compat import pycc_objects  # noqa: E402

NOT_COMPILED = "tieaware: the kernels were not compiled ahead of time ({}); numba compiles each on its first use"


class BuildKernels(build_ext):
    """setuptools' build_ext, first compiling the kernels into the object files the extension links."""

    def build_extension(self, ext):
        try:
            Path(self.build_temp).mkdir(parents=True, exist_ok=True)
            ext.extra_objects = pycc_objects(ext.kernels, self.build_temp)
            super().build_extension(ext)
        except Exception as error:  # noqa: BLE001 - any failure leaves the JIT to serve
            print(NOT_COMPILED.format(error), file=sys.stderr)


def extensions() -> list:
    """The compiled kernels' extension module, or none where numba's pycc finds no C compiler."""
    try:
        compiler = module_compiler()
    except Exception as error:  # noqa: BLE001 - numba.pycc raises RuntimeError without a C compiler
        print(NOT_COMPILED.format(error), file=sys.stderr)
        return []
    kernels = sorted(str(path) for path in Path("src/tieaware/kernels").rglob("*.py"))  # rebuilt when one changes
    extension = compiler.distutils_extension(optional=True, depends=kernels)
    extension.kernels = compiler
    return [extension]


setup(ext_modules=extensions(), cmdclass={"build_ext": BuildKernels})
