"""The two ways the package gets installed, each into a private directory:
pip install lib/python (offline, Debian's setuptools), and cmake --install of
the build (the package then finds the installed library by itself)."""

import glob
import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(args, **kw):
    out = subprocess.run(args, capture_output=True, text=True, timeout=120,
                         **kw)
    assert out.returncode == 0, "%s\n%s\n%s" % (args, out.stdout, out.stderr)
    return out.stdout


def test_pip_install_offline(tmp_path):
    for mod in ("pip", "setuptools", "wheel"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip("no %s for %s" % (mod, sys.executable))
    # Build from a copy: setuptools writes build/ and *.egg-info beside the
    # sources, and the source tree is shared.
    src = tmp_path / "src"
    shutil.copytree(PKG, src, ignore=shutil.ignore_patterns(
        "tests", "__pycache__", "build", "*.egg-info"))
    target = tmp_path / "site"
    run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation",
         "--no-index", "--no-deps", "--target", str(target), str(src)],
        cwd=str(tmp_path))
    assert (target / "dynprof" / "__init__.py").exists()
    assert (target / "dynprof" / "mindspore.py").exists()
    assert (target / "dynprof" / "torch.py").exists()
    env = dict(os.environ, PYTHONPATH=str(target))
    out = run([sys.executable, "-c",
               "import dynprof; print(dynprof.__file__); "
               "print(dynprof.library_version())"],
              cwd=str(tmp_path), env=env)
    path, version = out.split()
    assert path == str(target / "dynprof" / "__init__.py")
    assert version.count(".") == 2


def test_cmake_install_finds_its_library(tmp_path):
    build = os.environ.get("DYNPROF_BUILD_DIR")
    if not build or not shutil.which("cmake"):
        pytest.skip("needs DYNPROF_BUILD_DIR and cmake")
    if not os.path.exists(os.path.join(build, "lib", "python",
                                       "cmake_install.cmake")):
        pytest.skip("lib/python is not part of this build")
    prefix = tmp_path / "prefix"
    # Only the library and the binding: the rest of the tree may not be built,
    # and cmake is not the program a sanitizer build preloads its runtime for.
    cmake_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    for component in ("lib", "python"):
        run(["cmake", "--install", build, "--prefix", str(prefix),
             "--component", component], env=cmake_env)
    inits = glob.glob(str(prefix / "lib" / "**" / "dynprof" / "__init__.py"),
                      recursive=True)
    assert len(inits) == 1, inits
    site = os.path.dirname(os.path.dirname(inits[0]))
    env = {k: v for k, v in os.environ.items()
           if k not in ("DYNPROF_LIBRARY", "LD_LIBRARY_PATH")}
    env["PYTHONPATH"] = site
    shm = tmp_path / "shm"
    shm.mkdir()
    code = ("import dynprof, dynprof._native as n\n"
            "m = dynprof.Monitor(job='inst', shm_dir=%r,"
            " agent_socket=%r, output_root=%r)\n"
            "m.step(); m.close()\n"
            "print(n._lib._name)\n" % (str(shm), str(tmp_path / "sock"),
                                       str(tmp_path / "out")))
    out = run([sys.executable, "-c", code], cwd=str(tmp_path), env=env)
    assert out.strip().startswith(str(prefix)), out
