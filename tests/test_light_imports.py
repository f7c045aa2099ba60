"""The episode-start path (open a split, read a task) must not drag in datasets or pandas, and
from a pinned version read before on this machine nothing but the standard library."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import taskpack
from taskpack.errors import install_line

from .conftest import make_task

PROBE = """
import json, sys, taskpack
split = taskpack.open(sys.argv[1]).split("train")
task = split[1]
task = split.get("t2")
task.materialize(sys.argv[2])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("datasets", "pandas", "numpy"))
print(json.dumps({"id": task.id, "heavy": heavy}))
"""


def test_open_and_read_import_neither_datasets_nor_pandas(tmp_path: Path) -> None:
    taskpack.write(tmp_path / "ts", {"train": [make_task(i) for i in range(3)]}, name="x")
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "ts"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(proc.stdout)
    assert result["id"] == "t2"
    assert (tmp_path / "out" / "tests" / "check.py").read_text() == "assert 2 + 1 == 3\n"
    assert not [m for m in result["heavy"] if not m.startswith("numpy")], result["heavy"]


EPISODE = """
import json, sys, taskpack
task = taskpack.load("x@0.1.0", split="train")[int(sys.argv[1])]
task.materialize(sys.argv[2])
print(json.dumps({"id": task.id, "instruction": task.instruction, "modules": sorted(sys.modules)}))
"""
# Everything a warm episode start loads (the version read once before on this machine, so its
# split's decoded copy is in the cache, `storage.warm`): these taskpack modules and the standard
# library; not pyarrow, numpy, pydantic or boto3.
EPISODE_MODULES = [
    "taskpack",
    "taskpack.base",
    "taskpack.base.digests",
    "taskpack.base.fs",
    "taskpack.base.lazy",
    "taskpack.base.settings",
    "taskpack.episode",
    "taskpack.errors",
    "taskpack.records",
    "taskpack.storage",
    "taskpack.storage.warm",
]


def test_episode_start_from_a_pinned_cached_version_imports_no_pydantic_nor_boto3(
    tmp_path: Path,
) -> None:
    tasks = [make_task(i) for i in range(5)]
    taskpack.write(tmp_path / "ts", {"train": tasks}, name="x")
    taskpack.publish(tmp_path / "ts")
    assert taskpack.load("x@0.1.0", split="train")[0].id == "t0"  # now pinned in the cache
    proc = subprocess.run(
        [sys.executable, "-c", EPISODE, "3", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(proc.stdout)
    assert (result["id"], result["instruction"]) == ("t3", "What is 3 + 1?")
    assert (tmp_path / "out" / "tests" / "check.py").read_text() == "assert 3 + 1 == 4\n"
    modules = result["modules"]
    assert [m for m in modules if m.split(".")[0] in ("pydantic", "pydantic_core", "boto3")] == []
    assert [m for m in modules if m.startswith("taskpack")] == EPISODE_MODULES
    # a thread pool (and the logging it loads) is for checks, not an episode's start (6 ms)
    assert not {"concurrent.futures", "logging"} & set(modules)
    outside = {m.split(".")[0] for m in modules} - set(sys.stdlib_module_names)
    assert {m for m in outside if not m.startswith("_")} == {"taskpack"}, outside


def test_taskpack_works_where_fcntl_does_not_exist(tmp_path: Path) -> None:
    """As on Windows: nothing imports fcntl, and locks come from `filelock`."""
    probe = """
import sys
sys.modules["fcntl"] = None  # any `import fcntl` now raises ImportError
import pytest

import taskpack
from taskpack.base.fs import file_lock
from pathlib import Path
taskpack.write(sys.argv[1] + "/ts", {"train": [{"id": "a", "prompt": "q"}]}, name="x")
print(taskpack.open(sys.argv[1] + "/ts").split("train")[0].id)
with file_lock(Path(sys.argv[1]) / "l.lock"):
    print("locked")
"""
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["a", "locked"]


@pytest.mark.parametrize(
    ("hidden", "code", "extra"),
    [
        ("boto3", "taskpack.registry.open_registry('s3://bucket/p')", "s3"),
        ("huggingface_hub", "taskpack.registry.open_registry('hf://owner')", "hub"),
        ("datasets", "taskpack.open(sys.argv[1]).split('train').to_hf()", "datasets"),
    ],
)
def test_a_missing_extra_is_named(tmp_path: Path, hidden: str, code: str, extra: str) -> None:
    """The core install has no boto3, huggingface_hub or datasets: asking for what needs one
    says which extra brings it."""
    taskpack.write(tmp_path / "ts", {"train": [make_task(0)]}, name="x")
    probe = f"import sys\nsys.modules[{hidden!r}] = None\nimport taskpack, taskpack.registry\n"
    probe += f"try:\n    {code}\nexcept taskpack.TaskpackError as e:\n    print(e)\n"
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "ts")], capture_output=True, text=True
    )
    assert install_line(extra) in proc.stdout, proc.stdout + proc.stderr
    # from a checkout installed in place, the line names the checkout: it works from anywhere
    root = Path(taskpack.__file__).resolve().parents[1]
    assert install_line(extra).startswith(f"pip install -e '{root}[{extra}]'")


@pytest.mark.parametrize("hidden", ["httptools", "markdown_it"])
def test_serve_without_its_extra_is_one_line(tmp_path: Path, hidden: str) -> None:
    taskpack.write(tmp_path / "ts", {"train": [make_task(0)]}, name="x")
    probe = f"import sys\nsys.modules[{hidden!r}] = None\nfrom taskpack.cli import main\n"
    probe += "main(['serve', sys.argv[1], '--port', '0'])\n"
    proc = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "ts")], capture_output=True, text=True
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"Error: this needs {hidden}, which is not installed: {install_line('serve')}"
    ]


def test_import_taskpack_loads_each_public_name_on_first_use() -> None:
    """`import taskpack` alone imports no pyarrow (its names load with their modules); every
    public name then resolves to the object its module defines."""
    code = "import json, sys, taskpack; print(json.dumps(sorted(sys.modules)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = json.loads(proc.stdout)
    assert [m for m in modules if m.startswith("taskpack")] == [
        "taskpack",
        "taskpack.base",
        "taskpack.base.lazy",
        "taskpack.errors",
    ]
    assert not [m for m in modules if m.split(".")[0] in ("pyarrow", "pydantic", "numpy")]
    from taskpack import changes, episode, merging, model
    from taskpack.registry import client
    from taskpack.storage import integrity, taskset, writer

    homes = {"diff": changes, "verify": integrity, "merge": merging, "Task": model}
    homes |= {"TaskSet": taskset, "write": writer, "load": episode, "publish": client}
    for name, module in homes.items():
        assert getattr(taskpack, name) is getattr(module, name)
    assert set(taskpack.__all__) <= set(dir(taskpack))
    assert all(getattr(taskpack, name) is not None for name in taskpack.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = taskpack.nothing  # type: ignore[attr-defined]


def test_the_cli_help_and_completion_load_neither_pyarrow_nor_pydantic() -> None:
    """`taskpack --help` and each tab press start the CLI: each command imports its own."""
    code = (
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from taskpack.cli import main\n"
        "assert CliRunner().invoke(main, ['--help']).exit_code == 0\n"
        "tab = {'_TASKPACK_COMPLETE': 'bash_complete', 'COMP_WORDS': 'taskpack con', "
        "'COMP_CWORD': '1'}\n"
        "done = CliRunner().invoke(main, [], env=tab, prog_name='taskpack')\n"
        "assert 'convert' in done.output, done.output\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyarrow', 'pydantic', 'numpy'}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# Every attempt to import pandas recorded, and refused (as where it is not installed): pyarrow's
# pandas shim asks once a process, so the first attempt is the only one and names its caller.
REFUSING_PANDAS = """
import json, sys, traceback
asked = []
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pandas":
            asked.append(traceback.format_stack(limit=8))
            raise ImportError("pandas refused")
sys.meta_path.insert(0, Refuse())
"""
CONVERT = (
    REFUSING_PANDAS
    + """
from taskpack.importer import import_sources
done = import_sources(sys.argv[1], {"train": [sys.argv[2]]}, sys.argv[3],
                      options=json.loads(sys.argv[4]), name="x")
print(json.dumps({"rows": done.manifest.splits["train"].rows, "asked": asked}))
"""
)

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.mark.parametrize(
    ("fmt", "source", "options"),
    [
        ("gsm8k", DATA / "gsm8k" / "test.jsonl", {}),
        ("humaneval", DATA / "humaneval" / "HumanEval.jsonl.gz", {}),
        ("kaggle", DATA / "kaggle_llm_science_exam" / "train.csv", {"preset": "multiple-choice"}),
        ("swebench", DATA / "swebench" / "swebench_verified_sample50.jsonl", {}),
        ("nemo", DATA / "peers" / "nemo_gym" / "mcqa.jsonl", {}),
        ("nemo", DATA / "peers" / "nemo_gym" / "xlam_fc.jsonl", {}),
        ("skyrl", DATA / "peers" / "skyrl" / "gsm8k" / "train.parquet", {}),
        ("verifiers", DATA / "peers" / "verifiers" / "gsm8k" / "train.parquet", {}),
        # the row path: folders, and NeMo rows no batch check takes
        ("terminal-bench", DATA / "terminal_bench", {}),
        ("harbor", DATA / "peers" / "harbor_cookbook", {}),
        ("nemo", DATA / "peers" / "nemo_gym" / "tau2.jsonl", {}),
    ],
    ids=lambda v: v.name if isinstance(v, Path) else None,
)
def test_a_conversion_never_asks_for_pandas(
    tmp_path: Path, fmt: str, source: Path, options: dict[str, str]
) -> None:
    """Arrays are built from buffers (`taskpack.base.arrow`, `rows.table_of`): pyarrow's pandas
    shim would import pandas, a third of a small conversion's time."""
    out = tmp_path / "set"
    argv = [str(out), str(source), fmt, json.dumps(options)]
    proc = subprocess.run(
        [sys.executable, "-c", CONVERT, *argv], capture_output=True, text=True, check=True
    )
    result = json.loads(proc.stdout)
    assert result["rows"] > 0
    assert result["asked"] == [], "".join(result["asked"][0])


# The same refusal around rating tasks and keeping them with their pass rates (the rows written
# as `annotations/SPLIT.parquet`, then read back).
RATE = (
    REFUSING_PANDAS
    + """
import taskpack
from taskpack.curation import annotate, keep
report = annotate(sys.argv[1], [sys.argv[2]], model="m", settings={"n": 2})
keep(report.taskset, report.kept(), sys.argv[3], version="1.1.0", source=report.record,
     annotations=report.annotations())
rows = taskpack.open(sys.argv[3]).annotations("train")
print(json.dumps({"rows": [[r[f] for f in ("id", "count", "correct", "mean")] for r in rows],
                  "asked": asked}))
"""
)


def test_rating_and_keeping_tasks_never_asks_for_pandas(tmp_path: Path) -> None:
    """Pass rates are written from buffers (`passrates.write`), not `Table.from_pylist`."""
    tasks = [make_task(i) for i in range(3)]
    taskpack.write(tmp_path / "ts", {"train": tasks}, name="x")
    rollouts = tmp_path / "rollouts.jsonl"
    rewards = {"t0": [1.0, 0.0], "t1": [1.0, 1.0], "t2": [0.0, 0.5]}
    rollouts.write_text(
        "".join(json.dumps({"id": i, "reward": r}) + "\n" for i, rs in rewards.items() for r in rs)
    )
    argv = [str(tmp_path / "ts"), str(rollouts), str(tmp_path / "kept")]
    proc = subprocess.run(
        [sys.executable, "-c", RATE, *argv], capture_output=True, text=True, check=True
    )
    result = json.loads(proc.stdout)
    assert result["asked"] == [], "".join(result["asked"][0])
    assert result["rows"] == [["t0", 2, 1, 0.5], ["t1", 2, 2, 1.0], ["t2", 2, 0, 0.25]]


def test_arrays_made_from_buffers_equal_pyarrows_own() -> None:
    """`taskpack.base.arrow` builds what `pa.array` and `pa.scalar` build, nulls and slices
    included, and fails where they fail."""
    import numpy as np
    import pyarrow as pa

    from taskpack.base import arrow as _arrow

    words = ["", "é", None, "a\nb", "x" * 300]
    assert _arrow.texts(words).equals(pa.array(words, pa.string()))
    assert _arrow.texts([b"\x00", None], pa.large_binary()).equals(
        pa.array([b"\x00", None], pa.large_binary())
    )
    assert _arrow.numbers([3, -1], pa.int32()).equals(pa.array([3, -1], pa.int32()))
    assert _arrow.numbers(np.array([True, False, True]), pa.bool_()).equals(
        pa.array([True, False, True])
    )
    assert _arrow.repeated("ab", 3).equals(pa.array(["ab"] * 3))
    assert _arrow.repeated(None, 2).equals(pa.array([None, None], pa.string()))
    for value in ("", "x", 0, 7, True, 0.5):
        assert _arrow.scalar(value).equals(pa.scalar(value))
    assert _arrow.concat("<", pa.array(["a", None]), ">").equals(pa.array(["<a>", None]))
    sliced = pa.array([5, 6, 7, 8], pa.int64()).slice(1, 2)
    assert _arrow.view(sliced).tolist() == [6, 7]
    assert _arrow.numbers([1, None], pa.int32()).equals(pa.array([1, None], pa.int32()))
    with pytest.raises(UnicodeEncodeError):
        pa.array(["\ud800"], pa.string())
    with pytest.raises(UnicodeEncodeError):
        _arrow.texts(["\ud800"])


def test_stored_rows_made_from_buffers_equal_from_pylists() -> None:
    """The split writer's table (`rows.table_of`) is the one `Table.from_pylist` makes of the
    same rows: nulls, empty and missing file lists, inline and large files alike."""
    import pyarrow as pa

    from taskpack.storage.rows import SCHEMA, table_of

    file = {"path": "a.py", "role": "test", "step": None, "mode": 0o644, "size": 2}
    rows = [
        {"id": "t0", "digest": "d0", "files": [], "answer": '"1"'},
        {"id": "t1", "digest": "d1", "files": None, "solution": "s"},
        {
            "id": "t2",
            "digest": "d2",
            "files": [
                {**file, "sha256": "e" * 64, "data": b"ok"},
                {**file, "path": "big.bin", "step": "1", "sha256": "f" * 64, "data": None},
            ],
        },
    ]
    made = table_of(rows)
    made.validate(full=True)
    assert made.equals(pa.Table.from_pylist(rows, schema=SCHEMA))
    assert table_of([]).equals(SCHEMA.empty_table())


@pytest.mark.parametrize("package", ["taskpack", "taskpack.converters", "taskpack.curation"])
def test_a_lazy_face_and_its_typed_mirror_name_the_same_homes(package: str) -> None:
    """A package whose names load on first use (`_LAZY`) repeats them for type checkers in an
    `if TYPE_CHECKING:` block: each name imported there from the module its table names (a
    submodule named as itself: `from taskpack import trl`), no name in one and not the other,
    and every one of them in `__all__`."""
    import ast
    import importlib

    module = importlib.import_module(package)
    tree = ast.parse(Path(module.__file__ or "").read_text())
    mirror: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom) and stmt.module is not None
                for alias in stmt.names:
                    home = stmt.module.removeprefix(f"{package}.")
                    mirror[alias.asname or alias.name] = alias.name if home == package else home
    table = dict(module._LAZY)
    assert mirror == table
    assert set(table) <= set(module.__all__)
    for name, home in table.items():
        imported = importlib.import_module(f"{package}.{home}")
        assert getattr(module, name) is (imported if home == name else getattr(imported, name))
