"""The framework packages the conformance tests run, each pinned, each in a virtual environment
of its own (their dependencies conflict with each other and with ours), cached across runs.

    python -m tests.conformance.frameworks [NAME ...]    # create or reuse them, print paths

A venv is keyed by its spec, so changing a pin makes a new one. Failing to install is an error,
never a skip: CI must know when a framework could not be checked.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Framework:
    python: str  # interpreter version, from pyenv when it is not the running one
    packages: tuple[str, ...]
    no_deps: tuple[str, ...] = field(default=())  # installed after, without dependencies
    check: str = "pass"  # an import that proves the venv works
    pip_flags: tuple[str, ...] = ()  # given to every `pip install` of the venv


FRAMEWORKS = {
    # The 0.3 HF-Dataset API (legacy form) and the current 0.4 tasksets (`verifiers.v1`).
    # with what its own tests need (its `dev` extra's pytest pair): they run on the exports
    "verifiers": Framework(
        "3.11",
        ("verifiers==0.3.1", "pytest==8.4.2", "pytest-asyncio==1.2.0"),
        check="import verifiers as vf, pytest_asyncio; vf.SingleTurnEnv",
    ),
    "verifiers04": Framework(
        "3.11",
        ("verifiers==0.4.0",),
        check="from verifiers.v1.utils.loaders import load_taskset, taskset_config_type",
    ),
    # Verifiers 0.4's built-in Harbor taskset drives the Harbor CLI: both in one venv, on
    # Python 3.12 (Harbor's floor), as its `harbor` extra installs them (Harbor 0.24.0, which
    # verifiers 0.4.0 pins; Harbor 0.26 itself is the `harbor` venv's).
    "verifiers04_harbor": Framework(
        "3.12",
        ("verifiers[harbor]==0.4.0",),
        check="from verifiers.v1.tasksets.harbor.taskset import HarborTaskset",
    ),
    "skyrl": Framework(
        "3.11",
        ("skyrl-gym==0.4.0", "datasets>=3", "transformers>=5.6.1,<=5.8.0", "loguru", "jinja2"),
        no_deps=("skyrl==0.3.0",),
        check="import skyrl_gym; from skyrl.train.dataset import PromptDataset",
    ),
    "gem": Framework("3.11", ("gem-llm==0.1.0", "datasets>=3", "pylatexenc"), check="import gem"),
    # ors-sdk with what its own tests need (its `dev` extra): they run against `taskpack serve`
    "ors": Framework(
        "3.11",
        ("ors-sdk==0.1.0", "pyyaml", "pytest==8.4.2", "pytest-asyncio==1.2.0", "httpx==0.28.1"),
        check="import ors, uvicorn, yaml, pytest_asyncio, httpx",
    ),
    # OpenEnv's Harbor task server: the other peer of `taskpack serve` (bench/serve.py)
    "openenv": Framework(
        "3.12", ("openenv==0.10.0",), check="from openenv.harbor.serving import build_app"
    ),
    # the hosted platform's SDK, whose environment client speaks the same task verbs
    "openreward": Framework(
        "3.11", ("openreward==0.1.167",), check="from openreward import OpenReward"
    ),
    # NeMo Gym 0.7 (October) declares Python >= 3.13.14; pyenv's newest 3.13 is 3.13.0, on
    # which the whole package installs and runs when told to ignore that floor.
    "nemo": Framework(
        "3.13",
        ("nemo-gym==0.7.0",),
        check=(
            "from nemo_gym.train_data_utils import compute_sample_metrics;"
            "from nemo_gym.task_materialization import materialize_task"
        ),
        pip_flags=("--ignore-requires-python",),
    ),
    # last quarter's release, whose flat rows (no `task_id`) taskpack still reads and writes
    "nemo04": Framework(
        "3.13",
        ("nemo-gym==0.4.0",),
        check="from nemo_gym.train_data_utils import compute_sample_metrics",
    ),
    # Multi-SWE-bench's harness as taskpack's grader installs it inside an image: without its
    # docker and GitHub clients, which grading does not use.
    "multi_swebench": Framework(
        "3.11",
        ("dataclasses-json", "unidiff", "marshmallow", "typing-inspect"),
        no_deps=("multi-swe-bench==1.1.2",),
        check="import multi_swe_bench.harness.repos",
    ),
    "harbor": Framework(
        "3.12", ("harbor==0.26.0",), check="from harbor.models.task.task import Task"
    ),
    # TRL's own config parser and dataset-mixture loader, on the same CPU-only torch wheel as
    # verl's (accelerate, a TRL dependency, needs torch)
    # with openreward's client, which TRL's OpenReward integration drives ORS servers through
    "trl": Framework(
        "3.11",
        ("torch==2.13.0", "trl==1.16.0", "openreward==0.1.167"),
        check="from trl import DatasetMixtureConfig, TrlParser, get_dataset",
    ),
    # decon's Python bindings (Rust; Python 3.12 and later): bench/decontaminate.py's rival
    "decon": Framework("3.12", ("decontaminate==0.3.0.post4",), check="import decon"),
    # The Hub backend under huggingface_hub 0.x, installed beside transformers 4.x (whose
    # whole line excludes huggingface_hub 1.x); taskpack from PYTHONPATH.
    "hub0": Framework(
        "3.11",
        (
            "huggingface-hub==0.36.2",
            "transformers==4.57.6",
            "httpx>=0.27",
            "tenacity>=8",
            "pyarrow>=14",
            "pydantic>=2.6,<3",
            "pyyaml>=6",
            "click>=8.1",
            "filelock>=3.12",
            "tqdm>=4.66",
        ),
        check="import huggingface_hub, transformers; assert huggingface_hub.__version__ < '1'",
    ),
    # verl 0.9 on a CPU-only torch (the 2.13.0 CPU wheel; a plain `torch` would take a CUDA
    # build of several GB), with what `import taskpack` needs: it also runs `split.to_torch()`
    # (taskpack from PYTHONPATH), so torch is installed once.
    "verl": Framework(
        "3.11",
        (
            "torch==2.13.0",
            "verl==0.9.1",
            "pydantic>=2.6,<3",
            "pyyaml>=6",
            "click>=8.1",
            "filelock>=3.12",
            "tqdm>=4.66",
            "zstandard>=0.21",
            "tomli-w>=1.0",
        ),
        check=(
            "import torch, torch.utils.data; torch.zeros(1); assert '+cpu' in torch.__version__;"
            "from verl.utils.dataset.rl_dataset import RLHFDataset;"
            "from verl.utils.reward_score import default_compute_score"
        ),
    ),
    # EvalPlus's own harness: `sanitize` (how it reads code out of a reply) and
    # `untrusted_check` (how it runs one), for the extraction comparison and bench/grade.py
    "evalplus": Framework(
        "3.11",
        ("evalplus==0.3.1",),
        check="from evalplus.sanitize import sanitize; from evalplus.eval import untrusted_check",
    ),
    # verl 0.9.1's math graders (math_dapo, math_reward, math_verify: standard-library files,
    # loaded by path, so no torch) beside the math-verify package its math_verify.py calls
    "verl_math": Framework(
        "3.11",
        ("math-verify[antlr4_13_2]==0.9.0",),
        no_deps=("verl==0.9.1",),
        check="import math_verify, importlib.util; assert importlib.util.find_spec('verl')",
    ),
}


def cache_dir() -> Path:
    base = os.environ.get("TASKPACK_FRAMEWORK_VENVS")
    return Path(base) if base else Path.home() / ".cache" / "taskpack" / "framework-venvs"


def pyenv_root() -> Path:
    """pyenv's own answer (`pyenv root`: $PYENV_ROOT, else its default), else $PYENV_ROOT,
    else ~/.pyenv: a machine whose HOME is not pyenv's still finds its interpreters."""
    if shutil.which("pyenv"):
        found = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=False)
        if found.returncode == 0 and found.stdout.strip():
            return Path(found.stdout.strip())
    root = os.environ.get("PYENV_ROOT")
    return Path(root) if root else Path.home() / ".pyenv"


def interpreter(version: str) -> str:
    if f"{sys.version_info.major}.{sys.version_info.minor}" == version:
        return sys.executable
    versions = pyenv_root() / "versions"
    candidates = sorted(versions.glob(f"{version}.*"))
    for found in reversed(candidates):
        if (found / "bin" / "python3").exists():
            return str(found / "bin" / "python3")
    on_path = shutil.which(f"python{version}")
    if on_path:
        return on_path
    raise RuntimeError(
        f"no Python {version} interpreter found: none in {versions} (pyenv root) and no "
        f"python{version} on PATH"
    )


def ensure(name: str) -> Path:
    """The python of framework `name`'s venv, created on first use."""
    spec = FRAMEWORKS[name]
    key = hashlib.sha256(
        # flags only when given, so that the venvs without them keep their keys
        json.dumps(
            [spec.python, spec.packages, spec.no_deps, *filter(None, [spec.pip_flags])]
        ).encode()
    ).hexdigest()[:12]
    venv = cache_dir() / f"{name}-{key}"
    python = venv / "bin" / "python"
    if (venv / ".ready").exists():
        return python
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.with_name(venv.name + ".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one installer per venv, however many test runs
        if not (venv / ".ready").exists():
            _install(name, spec, venv, python)
    return python


def _install(name: str, spec: Framework, venv: Path, python: Path) -> None:
    if venv.exists():
        shutil.rmtree(venv)
    run = lambda *args: subprocess.run(args, check=True, capture_output=True, text=True)  # noqa: E731
    try:
        run(interpreter(spec.python), "-m", "venv", str(venv))
        pip = (str(python), "-m", "pip", "install", "-q", *spec.pip_flags)
        run(*pip, *spec.packages)
        if spec.no_deps:
            run(*pip, "--no-deps", *spec.no_deps)
        run(str(python), "-c", spec.check)
    except subprocess.CalledProcessError as e:
        # pip's own words end the message: a package index's refusal (its URL and status,
        # "HTTP error 403 while getting ...") must not read as a failure of the code under test.
        said = "\n".join((e.stderr or e.stdout or "").strip().splitlines()[-12:])
        raise RuntimeError(
            f"could not install {name} ({' '.join(spec.packages)}): {e}\n{said}"
        ) from None
    share(venv)
    (venv / ".ready").write_text("ok\n")


def share(venv: Path) -> int:
    """Each file of `venv` that another venv here holds too (same bytes, same mode) made one
    file on disk, by hard links through `<cache>/.shared/` (numpy, pyarrow, transformers,
    tokenizers... are in most of them): the bytes saved. The venvs are never written after
    they are made, so sharing a file cannot change another venv."""
    store = cache_dir() / ".shared"
    store.mkdir(exist_ok=True)
    saved = 0
    for path in venv.rglob("*"):
        if path.is_symlink() or not path.is_file():
            continue
        info = path.stat()
        if info.st_size < 4096:
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        kept = store / f"{digest}-{info.st_mode & 0o777:o}"
        if not kept.exists():
            os.link(path, kept)
        elif not os.path.samefile(kept, path):
            temporary = path.with_name(path.name + ".shared-tmp")
            os.link(kept, temporary)
            os.replace(temporary, path)
            saved += info.st_size
    return saved


if __name__ == "__main__":
    if sys.argv[1:] == ["--share"]:  # venvs made before sharing: share their files now
        for venv in sorted(p for p in cache_dir().iterdir() if (p / ".ready").exists()):
            print(venv.name, f"{share(venv) / 2**20:.0f} MiB saved", flush=True)
        sys.exit(0)
    for name in sys.argv[1:] or list(FRAMEWORKS):
        print(name, ensure(name), flush=True)
