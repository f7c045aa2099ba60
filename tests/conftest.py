from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
# The real sets in ../shared/data: name -> (reader, path, reader options).
REAL_SETS: dict[str, tuple[str, Path, dict[str, Any]]] = {
    "gsm8k": ("gsm8k", DATA / "gsm8k" / "test.jsonl", {}),
    "humaneval": ("humaneval", DATA / "humaneval" / "HumanEval.jsonl.gz", {}),
    "swebench-lite": ("swebench", DATA / "swebench" / "swebench_lite_test.jsonl", {}),
    "swebench-verified": ("swebench", DATA / "swebench" / "swebench_verified_sample50.jsonl", {}),
    "science-exam": (
        "kaggle",
        DATA / "kaggle_llm_science_exam" / "train.csv",
        {"preset": "multiple-choice"},
    ),
    "terminal-bench": ("terminal-bench", DATA / "terminal_bench", {}),
    "harbor-cookbook": ("harbor", DATA / "peers" / "harbor_cookbook", {}),
    "nemo-gym": ("nemo", DATA / "peers" / "nemo_gym" / "swebench.jsonl", {}),
}


def make_task(i: int = 0, **overrides: Any) -> dict[str, Any]:
    """A valid task mapping with a file, a reward and metadata; overrides replace fields."""
    task: dict[str, Any] = {
        "id": f"t{i}",
        "prompt": f"What is {i} + 1?",
        "answer": str(i + 1),
        "reward": {"kind": "numeric_match"},
        "files": [{"path": "tests/check.py", "data": f"assert {i} + 1 == {i + 1}\n".encode()}],
        "metadata": {"row": i, "tags": ["a", "b"], "nested": {"x": 1.5, "y": None}},
    }
    task.update(overrides)
    return task


PYTHON_IMAGE = "FROM python:3.12-slim\nWORKDIR /app\n"  # the image `taskpack check` stands in for


def harbor_folder(
    root: Path, name: str, test_sh: str, solve_sh: str, dockerfile: str = PYTHON_IMAGE
) -> Path:
    """A Harbor task folder, hand-made: its verifier `tests/test.sh` and oracle
    `solution/solve.sh` as given, in a `python:*` image."""
    folder = root / name
    for sub in ("environment", "tests", "solution"):
        (folder / sub).mkdir(parents=True)
    (folder / "task.toml").write_text('version = "1.0"\n\n[verifier]\ntimeout_sec = 60.0\n')
    (folder / "instruction.md").write_text("Write done to /app/out.txt.\n")
    (folder / "environment" / "Dockerfile").write_text(dockerfile)
    (folder / "tests" / "test.sh").write_text(test_sh)
    (folder / "solution" / "solve.sh").write_text(solve_sh)
    return folder


def pytest_configure(config: pytest.Config) -> None:
    """Before any fixture of any scope (a module's server is built before a test's own
    fixtures run): the session's registry and cache are its own, never the user's. A user
    who ran the README's first line has `example` in the default registry, which a module's
    server read before this."""
    import os
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="taskpack-tests-"))
    os.environ["TASKPACK_REGISTRY"] = str(home / "registry")
    os.environ["TASKPACK_CACHE"] = str(home / "cache")
    for name in ("TASKPACK_OFFLINE", "TASKPACK_LOCKFILE", "TASKPACK_CHECK_KEY"):
        os.environ.pop(name, None)


@pytest.fixture(autouse=True)
def _isolated_registry_and_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test reads or writes the user's own registry or cache."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("TASKPACK_REGISTRY", str(home / "registry"))
    monkeypatch.setenv("TASKPACK_CACHE", str(home / "cache"))
    for name in ("TASKPACK_OFFLINE", "TASKPACK_LOCKFILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def data_dir() -> Path:
    if not DATA.is_dir():
        pytest.fail(f"shared data not found at {DATA}")
    return DATA


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Debian's chromium, headless, driven by Selenium."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--no-proxy-server"):
        options.add_argument(arg)
    options.add_argument("--window-size=1400,1000")
    # Chromium leaves its singleton socket's folder in TMPDIR: here, in pytest's own.
    scratch = str(tmp_path_factory.mktemp("chromium"))
    service = Service("/usr/bin/chromedriver", env={**os.environ, "TMPDIR": scratch})
    driver = webdriver.Chrome(service=service, options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real SeaweedFS S3 endpoint with authentication on; yields its URL."""
    from .services import start_seaweedfs

    server = start_seaweedfs(tmp_path_factory.mktemp("seaweedfs"))
    yield server.endpoint
    server.stop()


@pytest.fixture
def s3_env(seaweedfs: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """boto3 pointed at SeaweedFS through the standard environment variables."""
    from .services import ACCESS_KEY, SECRET_KEY

    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", seaweedfs)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return seaweedfs


@pytest.fixture
def bucket(s3_env: str) -> str:
    """A fresh bucket per test; yields an s3:// registry URL inside it."""
    import uuid

    import boto3

    name = f"t-{uuid.uuid4().hex[:12]}"
    boto3.client("s3").create_bucket(Bucket=name)
    return f"s3://{name}/registry"


@pytest.fixture(scope="session")
def hub_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """olah serving local git repos, behind the test server for the Hub's write endpoints."""
    from .hubserver import start_hub

    hub = start_hub(tmp_path_factory.mktemp("hub"))
    yield hub
    hub.stop()


@pytest.fixture
def hub(hub_server: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """huggingface_hub and datasets pointed at the test Hub; yields it. The session's olah
    must still run: were it gone, its port could be another test's server's (SeaweedFS answers
    an unsigned request 403), and the Hub's reads would fail as that server's refusals."""
    import uuid

    exited = hub_server.olah.proc.poll()
    if exited is not None:
        tail = hub_server.olah.log.read_text(errors="replace").splitlines()[-20:]
        raise RuntimeError(f"olah exited ({exited}); its log ends:\n" + "\n".join(tail))

    monkeypatch.setenv("HF_ENDPOINT", hub_server.endpoint)
    monkeypatch.setenv("HF_HUB_DISABLE_XET", "1")
    monkeypatch.setenv("HF_TOKEN", "test-token")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    hub_server.owner = f"org{uuid.uuid4().hex[:8]}"
    return hub_server
