"""Builds the rsim package for pip (issue 44): the C++ executable and the Python extension with
CMake, then lays them out in the package like an installation prefix:

    rsim/__init__.py, __main__.py   (python/package/rsim)
    rsim/_rsim.<abi>.so             the binding (python/rsim_module.cpp)
    rsim/bin/rsim                   the executable (`python3 -m rsim`, the `rsim` console script)
    rsim/share/rsim/...             `cmake --install`'s data: catalog, model zoo, examples, rsim_torch
    rsim_torch/                     the PyTorch backend, importable on its own

The CMake build goes to build-pip/cmake (Release, no tests or benchmarks), or to the folder named
by RSIM_CMAKE_BUILD_DIR: an existing build tree whose rsim and module are reused (the test suite
installs from build/ so that it does not compile everything twice). RSIM_CMAKE_JOBS sets the
parallel jobs (default: the CPU count).
"""
import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

SRC = os.path.dirname(os.path.abspath(__file__))
os.makedirs(os.path.join(SRC, "build-pip"), exist_ok=True)  # egg_info's folder must exist


def cmake_build():
    """the CMake build folder, configured and built (rsim and the Python module)"""
    given = os.environ.get("RSIM_CMAKE_BUILD_DIR")
    build = os.path.abspath(given) if given else os.path.join(SRC, "build-pip", "cmake")
    jobs = os.environ.get("RSIM_CMAKE_JOBS") or str(os.cpu_count() or 1)
    if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        subprocess.check_call(["cmake", "-S", SRC, "-B", build, "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_TESTING=OFF",
                               "-DRSIM_BENCH=OFF", "-DRSIM_PYTHON=ON", f"-DPython3_EXECUTABLE={sys.executable}"])
    subprocess.check_call(["cmake", "--build", build, "-j", jobs, "--target", "rsim", "rsim_python", "rsim_man"])
    return build


def built_module(build):
    """the binding built for this interpreter (its ABI suffix), or a clear error"""
    folder = os.path.join(build, "python", "rsim")
    want = "_rsim" + sysconfig.get_config_var("EXT_SUFFIX")
    if not os.path.isfile(os.path.join(folder, want)):
        have = sorted(f for f in os.listdir(folder) if f.startswith("_rsim")) if os.path.isdir(folder) else []
        sys.exit(f"rsim: {folder} has no {want} (it has {have or 'no module'}): the build tree was configured for "
                 f"another Python; configure it with -DPython3_EXECUTABLE={sys.executable} or unset RSIM_CMAKE_BUILD_DIR")
    return os.path.join(folder, want)


class BuildWithCMake(build_py):
    def run(self):
        super().run()  # the pure Python files of both packages
        build = cmake_build()
        pkg = os.path.join(self.build_lib, "rsim")
        os.makedirs(pkg, exist_ok=True)
        shutil.copy2(built_module(build), pkg)
        # the executable and its data, where the executable looks for them (<prefix>/share/rsim)
        subprocess.check_call(["cmake", "--install", build, "--prefix", pkg], stdout=subprocess.DEVNULL)


class BinaryDistribution(Distribution):
    """a wheel for this platform and Python (it holds an executable and an extension)"""

    def has_ext_modules(self):
        return True


setup(
    packages=["rsim", "rsim_torch"],
    package_dir={"rsim": "python/package/rsim", "rsim_torch": "python/rsim_torch"},
    cmdclass={"build_py": BuildWithCMake},
    distclass=BinaryDistribution,
    options={"build": {"build_base": "build-pip/setuptools"}, "egg_info": {"egg_base": "build-pip"}},
    zip_safe=False,
)
