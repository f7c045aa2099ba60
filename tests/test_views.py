"""Lazy views and the sampler: deterministic everywhere, disjoint shares, filters that agree
with plain Python, exact resumption after a crash, and adapters their consumers accept."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import taskpack
from taskpack.cli import main
from taskpack.errors import TaskpackError
from taskpack.storage.views import Sampler, permutation

from .conftest import make_task

REPOS = ["django/django", "astropy/astropy", "sympy/sympy"]


def _task(i: int) -> dict[str, Any]:
    reward = {"kind": "numeric_match"} if i % 3 else {"kind": "exact_match"}
    return make_task(
        i,
        reward=reward,
        environment={"repo": REPOS[i % 3]} if i % 4 else None,
        metadata={"difficulty": ["easy", "medium", "hard"][i % 3 - (i % 7 == 0)], "n": i},
    )


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("views") / "ts"
    taskpack.write(path, {"train": [_task(i) for i in range(300)]}, name="views")
    return taskpack.open(path).split("train")


def test_the_order_of_a_seed_is_fixed_for_good() -> None:
    """Golden values: any machine, any Python, any numpy gives exactly these."""
    assert permutation(12, 42).tolist() == [1, 10, 2, 7, 9, 4, 5, 11, 3, 0, 8, 6]
    assert permutation(12, "seed").tolist() == [7, 1, 4, 5, 8, 2, 11, 9, 3, 0, 6, 10]


def test_the_same_seed_gives_the_same_order_in_another_process(split: Any) -> None:
    probe = (
        "import sys, taskpack; s = taskpack.open(sys.argv[1]).split('train');"
        "print(s.shuffle(7).ids()[:50])"
    )
    root = str(Path(split._parquets[0]).parents[1])
    out = subprocess.run([sys.executable, "-c", probe, root], capture_output=True, text=True)
    assert out.stdout.strip() == str(split.shuffle(7).ids()[:50])
    assert split.shuffle(7).ids() != split.shuffle(8).ids()
    assert sorted(split.shuffle(7).ids()) == sorted(split.ids())


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 300), shards=st.integers(1, 17), contiguous=st.booleans())
def test_shards_are_disjoint_and_cover_the_split(
    split: Any, n: int, shards: int, contiguous: bool
) -> None:
    rows = split.select(range(n))
    parts = [rows.shard(shards, k, contiguous=contiguous).ids() for k in range(shards)]
    flat = [tid for part in parts for tid in part]
    assert sorted(flat) == sorted(rows.ids()) and len(set(flat)) == len(flat)
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1
    if contiguous:
        assert flat == rows.ids()


def _repo(t: Any) -> Any:
    return t.environment.repo if t.environment is not None else None


FILTERS = [
    ({"difficulty": "easy"}, lambda t: t.metadata.get("difficulty") == "easy"),
    ({"difficulty": ["easy", "hard"]}, lambda t: t.metadata["difficulty"] in ("easy", "hard")),
    ({"environment.repo": "django/django"}, lambda t: _repo(t) == "django/django"),
    ({"reward__kind": "exact_match"}, lambda t: t.reward.kind == "exact_match"),
    ({"n": lambda n: n % 10 == 3}, lambda t: t.metadata["n"] % 10 == 3),
    (
        {"difficulty": "medium", "reward.kind": "numeric_match"},
        lambda t: t.metadata["difficulty"] == "medium" and t.reward.kind == "numeric_match",
    ),
    ({"environment.repo": None}, lambda t: _repo(t) is None),  # rows without the key match null
]


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ({"rewrd__kind": "exact"}, "no field or metadata key 'rewrd'; did you mean 'reward'?"),
        ({"reward__knd": "exact_match"}, "no key under reward 'knd'; did you mean 'kind'?"),
        ({"dificulty": "easy"}, "no field or metadata key 'dificulty'; did you mean 'difficulty'?"),
    ],
)
def test_a_filter_on_a_key_no_task_has_is_an_error(split: Any, where: Any, message: str) -> None:
    """A typo in a filter's key names what is there, rather than matching nothing silently."""
    with pytest.raises(TaskpackError, match=re.escape(message)):
        split.filter(**where)


@pytest.mark.parametrize(("where", "plain"), FILTERS)
def test_filters_agree_with_a_plain_python_filter(split: Any, where: Any, plain: Any) -> None:
    expected = [t.id for t in split if plain(t)]
    assert split.filter(**where).ids() == expected
    shuffled = split.shuffle(3)
    assert shuffled.filter(**where).ids() == [t.id for t in shuffled if plain(t)]
    assert split.filter(plain).ids() == expected  # a predicate over tasks, the slow path


def test_views_compose_and_read_tasks(split: Any) -> None:
    view = split.filter(difficulty="easy").shuffle(1).shard(2, 1)
    assert all(t.metadata["difficulty"] == "easy" for t in view)
    assert [t.id for t in view] == view.ids() and view[0].id == view.ids()[0]
    assert view[1:3].ids() == view.ids()[1:3]
    assert split.select([5, -1, 0]).ids() == ["t5", "t299", "t0"]
    with pytest.raises(IndexError):
        split.select([300])
    with pytest.raises(TaskpackError):
        split.shard(3, 3)


CONSUMER = """
import json, os, signal, sys, taskpack
from taskpack.storage.views import Sampler

split = taskpack.open(sys.argv[1]).split("train")
state_file, kill_after = sys.argv[2], int(sys.argv[3])
sampler = Sampler(split, seed=5, num_workers=3, worker=1)
seen = []
if os.path.exists(state_file):
    saved = json.load(open(state_file))
    sampler.load_state_dict(saved["state"])
    seen = saved["seen"]
for n, task in enumerate(sampler):
    seen.append(task.id)
    tmp = state_file + ".tmp"
    with open(tmp, "w") as f:  # the task and the state that follows it, saved together
        json.dump({"state": sampler.state_dict(), "seen": seen}, f)
    os.replace(tmp, state_file)
    if n + 1 == kill_after:
        os.kill(os.getpid(), signal.SIGKILL)
print(json.dumps(seen))
"""


def test_a_killed_consumer_resumes_with_nothing_repeated_or_skipped(
    split: Any, tmp_path: Path
) -> None:
    root = str(Path(split._parquets[0]).parents[1])
    state = str(tmp_path / "state.json")
    for kill_after in (17, 40):
        proc = subprocess.run([sys.executable, "-c", CONSUMER, root, state, str(kill_after)])
        assert proc.returncode == -signal.SIGKILL
    done = subprocess.run(
        [sys.executable, "-c", CONSUMER, root, state, "0"], capture_output=True, text=True
    )
    seen = json.loads(done.stdout)
    expected = Sampler(split, seed=5, num_workers=3, worker=1)
    assert seen == [t.id for t in expected]
    assert len(seen) == 100 and len(set(seen)) == 100
    shares = [set(Sampler(split, seed=5, num_workers=3, worker=k).rows.ids()) for k in range(3)]
    orders = [
        {split.ids()[int(i)] for i in Sampler(split, seed=5, num_workers=3, worker=k).order(0)}
        for k in range(3)
    ]
    assert set.union(*orders) == shares[0] and sum(map(len, orders)) == 300


def test_epochs_differ_and_state_is_checked(split: Any) -> None:
    s = Sampler(split, seed=1)
    first, second = [t.id for t in s], [t.id for t in s]
    assert sorted(first) == sorted(second) and first != second and s.epoch == 2
    other = Sampler(split.select(range(10)), seed=1)
    with pytest.raises(TaskpackError, match="sampler state is for"):
        other.load_state_dict(s.state_dict())


def _draw(sampler: Sampler, count: int) -> list[str]:
    """`count` tasks from a worker's sampler, into the next epoch when this one ends."""
    out: list[str] = []
    while len(out) < count:
        for task in sampler:
            out.append(task.id)
            if len(out) == count:
                break
    return out


def _run(split: Any, world: int, steps: int, state: Any = None) -> tuple[list[str], Any]:
    """`world` workers drawing in step for `steps` steps (resumed from `state`): the tasks in
    the order of the stream's places, and worker 0's state at the end."""
    workers = [Sampler(split, seed=9, num_workers=world, worker=k) for k in range(world)]
    for w in workers:
        if state is not None:
            w.load_state_dict(json.loads(json.dumps(state)))  # as a checkpoint would
    drawn = [_draw(w, steps) for w in workers]
    by_place = [drawn[k][j] for j in range(steps) for k in range(world)]
    return by_place, workers[0].state_dict()


def test_a_state_from_any_world_size_resumes_any_other(split: Any) -> None:
    """24 ranks draw 5 each, rank 0's state resumes 16 ranks that draw 5 each: 200 distinct
    tasks, the first 200 of the one-worker order; then 24 -> 48 -> 16 across an epoch's end:
    every task of the epoch once, the 48 ranks' epoch padded to 336 places by repeating its
    first ones, and the next epoch begun in its own order."""
    one = _draw(Sampler(split, seed=9), 600)
    first, state = _run(split, 24, 5)
    second, _ = _run(split, 16, 5, state)
    assert first + second == one[:200] and len(set(first + second)) == 200
    a, state = _run(split, 24, 5)
    b, state = _run(split, 48, 4, state)  # places 120 to 311 of an epoch padded to 336
    c, state = _run(split, 16, 5, state)  # 312 is past 16 ranks' epoch of 304: the next
    stream = a + b
    assert stream[:300] == one[:300] and sorted(stream[:300]) == sorted(split.ids())
    assert stream[300:] == one[:12]  # the padding: the epoch's first places again
    assert c == one[300:380]
    assert (state["position"], state["epoch"], state["offset"]) == (384, 1, 80)
    with pytest.raises(TaskpackError, match="sampler state is for"):
        Sampler(split, seed=10).load_state_dict(state)


@pytest.mark.parametrize("drop_last", [False, True])
def test_every_rank_takes_the_same_number_of_steps(split: Any, drop_last: bool) -> None:
    """300 tasks over 8 ranks: 38 each (the epoch padded by repeating its first 4 places, as
    DistributedSampler pads) or 37 (the last 4 dropped), every task in some rank's share; a
    data-parallel loop takes as many steps on every rank, epoch after epoch and resumed."""
    ranks = [Sampler(split, seed=2, num_workers=8, worker=k, drop_last=drop_last) for k in range(8)]
    shares = [[t.id for t in r] for r in ranks]
    assert {len(s) for s in shares} == {37 if drop_last else 38}
    seen = {i for share in shares for i in share}
    assert len(seen) == (296 if drop_last else 300)
    again = [[t.id for t in r] for r in ranks]  # the next epoch: as many again
    assert {len(s) for s in again} == {len(shares[0])} and again != shares
    state = ranks[0].state_dict()
    resumed = [
        Sampler(split, seed=2, num_workers=6, worker=k, drop_last=drop_last) for k in range(6)
    ]
    for r in resumed:
        r.load_state_dict(state)
    assert {len(list(r)) for r in resumed} == {50}  # 300 over 6: no padding, nothing dropped


def test_the_mixture_stream_is_one_whatever_the_world_size(tmp_path: Path) -> None:
    from taskpack.curation import Part, mix
    from taskpack.curation.mixture import sampler, sources

    for name in ("a", "b"):
        tasks = [_task(i) for i in range(40)]
        taskpack.write(tmp_path / name, {"train": tasks}, name=name)
    parts = [Part(str(tmp_path / "a"), 0.7), Part(str(tmp_path / "b"), 0.3)]
    mix("m", parts, tmp_path / "m")
    ts = taskpack.open(tmp_path / "m")
    split, entries = ts.split("train"), sources(ts)
    one = [(p, t.id) for p, t in itertools.islice(sampler(split, seed=3, entries=entries), 300)]

    def run(world: int, steps: int, start: int) -> list[tuple[int, str]]:
        streams = [
            sampler(split, seed=3, entries=entries, start=start, num_workers=world, worker=k)
            for k in range(world)
        ]
        drawn = [[(p, t.id) for p, t in itertools.islice(s, steps)] for s in streams]
        return sorted(x for d in drawn for x in d)

    first = run(24, 5, 0)
    second = run(16, 5, first[-1][0] + 1)
    third = run(7, 10, second[-1][0] + 1)
    assert first + second + third == one[:270]


def test_ls_where_on_the_command_line(split: Any) -> None:
    root = str(Path(split._parquets[0]).parents[1])
    result = CliRunner().invoke(
        main, ["ls", root, "--where", "difficulty=easy", "--where", "environment.repo=sympy/sympy"]
    )
    assert result.exit_code == 0, result.output
    assert (
        result.output.split()
        == split.filter(difficulty="easy", **{"environment.repo": "sympy/sympy"}).ids()
    )
    bad = CliRunner().invoke(main, ["ls", root, "--where", "nonsense"])
    assert bad.exit_code == 2 and "KEY=VALUE" in bad.output


# --- adapters, each checked by its consumer --------------------------------------------------


def test_arrow_pandas_and_datasets(split: Any, tmp_path: Path) -> None:
    import datasets

    view = split.filter(difficulty="hard").shuffle(2)
    table = view.to_arrow()
    assert table.column("id").to_pylist() == view.ids()
    assert list(view.to_pandas()["id"]) == view.ids()
    ds = view.to_hf()
    assert isinstance(ds, datasets.Dataset) and ds["id"] == view.ids()
    ds.save_to_disk(str(tmp_path / "hf"))
    back = datasets.load_from_disk(str(tmp_path / "hf"))
    assert back.to_list() == ds.to_list()
    assert json.loads(back[0]["metadata"]) == view[0].metadata
    typed = view.to_hf(typed=True)  # nested columns: the dataset filters by a field
    assert typed[0]["metadata"] == view[0].metadata
    assert typed.filter(lambda row: row["metadata"]["difficulty"] == "hard")["id"] == view.ids()
    assert view.to_pandas(typed=True)["metadata"][0] == view[0].metadata


def test_typed_arrow_has_real_columns_where_rows_agree(split: Any, tmp_path: Path) -> None:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = split.to_arrow(typed=True)
    pq.write_table(table, tmp_path / "typed.parquet")  # what the Hub's viewer gets
    back = pq.read_table(tmp_path / "typed.parquet")
    hard = back.filter(pc.field("metadata", "difficulty") == "hard").column("id").to_pylist()
    assert hard == split.filter(difficulty="hard").ids()
    repos = pc.struct_field(back.column("environment"), "repo").to_pylist()
    assert repos == [t.environment.repo if t.environment else None for t in split]
    assert back.column("reward").to_pylist()[1]["kind"] == "numeric_match"

    mixed = tmp_path / "mixed"
    rows = [make_task(0, answer=["a", 1], metadata={}), make_task(1, answer=2, metadata={})]
    taskpack.write(mixed, {"train": rows}, name="mixed")
    table = taskpack.open(mixed).split("train").to_arrow(typed=True)
    assert table.column("answer").to_pylist() == ['["a",1]', "2"]  # disagreeing shapes: text
    assert table.column("metadata").to_pylist() == ["{}", "{}"]  # Parquet stores no empty struct
    pq.write_table(table, tmp_path / "mixed.parquet")


def test_typed_file_is_written_a_row_group_at_a_time_as_the_whole_split_types_it(
    tmp_path: Path,
) -> None:
    """`write_typed` (the Hub viewer's copy) plans each JSON column over every row group, then
    converts and writes group by group: the file holds what `typed_columns` gives for the whole
    split at once, where the groups disagree (a float after integers, a key first seen later, a
    key of another type, a list after numbers, a number too wide for the float planned)."""
    import pyarrow.parquet as pq

    from taskpack.storage.views import typed_columns, write_typed
    from taskpack.storage.writer import ROW_GROUP_ROWS

    shapes = [  # (metadata, answer) of each row group's tasks
        ({"n": 1, "tags": []}, 1),
        ({"n": 2.5, "extra": {"k": "v"}}, 2),
        ({"n": 3, "extra": {"k": 7}, "big": 1.5}, [3]),
        ({"big": 2**62}, 4),
    ]
    rows = [
        make_task(i, files=[], metadata=meta, answer=answer)
        for g, (meta, answer) in enumerate(shapes)
        for i in range(g * ROW_GROUP_ROWS, (g + 1) * ROW_GROUP_ROWS)
    ]
    taskpack.write(tmp_path / "ts", {"train": rows}, name="shapes")
    split = taskpack.open(tmp_path / "ts").split("train")
    write_typed(split, tmp_path / "typed.parquet", group_rows=2 * ROW_GROUP_ROWS)

    back = pq.ParquetFile(tmp_path / "typed.parquet")
    sizes = [back.metadata.row_group(g).num_rows for g in range(back.num_row_groups)]
    assert sizes == [2 * ROW_GROUP_ROWS] * (len(shapes) // 2)
    streamed = back.read()
    whole = typed_columns(split.columns(), split.json_columns)
    assert streamed.schema.remove_metadata() == whole.schema.remove_metadata()
    assert streamed.to_pylist() == whole.to_pylist()
    # Integers beside floats, a key seen only in later groups, "v" beside 7: no typed column
    # would read back as stored, so metadata and answer are the stored JSON text, whole.
    for name in ("metadata", "answer"):
        assert str(streamed.column(name).type) == "string"
        assert streamed.column(name).to_pylist() == split.columns([name]).column(name).to_pylist()


PROBES = [  # (metadata, answer, extras) of each task: the shapes that used to change
    ({"n": 18, "tags": ["a"]}, 18, {}),
    ({"n": 2.5, "tags": []}, 2.5, {"x": {"k": 1}}),
    ({"tags": ["b"], "only_here": None}, "18", {"x": {"k": {}}}),
    ({}, [1, "a"], {"x": {"k": "1"}}),
    ({"n": 7, "tags": None}, {"a": 1}, {"x": {"k": [1]}}),
    ({"n": True}, None, {}),
]


def test_the_viewer_copy_reads_back_every_value_as_published(tmp_path: Path) -> None:
    """What pyarrow and `datasets` read from the Hub viewer's copy (`write_typed`) is the
    published value, or its column is the task set's own JSON text; model columns (reward by
    kind, environment) stay typed, their unset fields read as null."""
    import datasets
    import pyarrow.parquet as pq

    from taskpack.storage.views import FREE_FORM, write_typed

    kinds = [{"kind": "exact_match"}, {"kind": "numeric_match", "tolerance": 0.5}]
    rows = [
        make_task(
            i,
            metadata=m,
            answer=a,
            extras=e,
            reward=kinds[i % 2],
            environment={"repo": REPOS[i % 3], "env": {"A": "1"} if i == 2 else {}},
        )
        for i, (m, a, e) in enumerate(PROBES)
    ]
    taskpack.write(tmp_path / "ts", {"train": rows}, name="probes")
    split = taskpack.open(tmp_path / "ts").split("train")
    published = [t.model_dump(mode="json") for t in split]
    write_typed(split, tmp_path / "copy.parquet")
    by_pyarrow = pq.read_table(tmp_path / "copy.parquet")
    by_datasets = datasets.Dataset.from_parquet(str(tmp_path / "copy.parquet"))
    compared = 0
    for read in (by_pyarrow.to_pylist(), by_datasets.to_list()):
        for name in ("metadata", "answer", "extras"):
            kind = str(by_pyarrow.schema.field(name).type)
            for row, task in zip(read, published, strict=True):
                text = kind == "string" and row[name] is not None
                value = json.loads(row[name]) if text else row[name]
                assert value == task[name] and json.dumps(value) == json.dumps(task[name]), (
                    name,
                    value,
                    task[name],
                )
                compared += 1
    assert compared == 2 * 3 * len(PROBES)
    assert "answer" in FREE_FORM and str(by_pyarrow.schema.field("metadata").type) == "string"
    reward = by_pyarrow.schema.field("reward").type
    assert str(reward.field("kind").type) == "string"  # typed: the viewer filters by kind
    kinds_read = [r["kind"] for r in by_pyarrow.column("reward").to_pylist()]
    assert kinds_read == [t["reward"]["kind"] for t in published]
    environment = by_pyarrow.column("environment").to_pylist()
    assert [e["repo"] for e in environment] == [t["environment"]["repo"] for t in published]
    assert environment[2]["env"] == {"A": "1"}


def test_adapters_are_not_imported_at_episode_start(tmp_path: Path) -> None:
    taskpack.write(tmp_path / "ts", {"train": [make_task(0)]}, name="x")
    probe = (
        "import sys, taskpack; taskpack.open(sys.argv[1]).split('train')[0];"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'datasets', 'pandas', 'taskpack')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "ts")], capture_output=True, text=True
    )
    loaded = out.stdout
    assert "torch" not in loaded and "datasets" not in loaded and "pandas" not in loaded, loaded
    assert "taskpack.storage.torch_data" not in loaded


TORCH_PROBE = """
import json, sys
import torch.utils.data
import taskpack

split = taskpack.open(sys.argv[1]).split("train")
view = split.filter(difficulty="easy")
load = torch.utils.data.DataLoader
mapped = load(view.to_torch(), batch_size=8, num_workers=2, collate_fn=list)
streamed = load(view.to_torch(iterable=True), batch_size=8, num_workers=2, collate_fn=list)


def ranks(world, state=None, steps=2, batch=4):
    # each rank's DataLoader (2 workers) for `steps` batches; the state rank 0 then gives
    taken, states = [], []
    for rank in range(world):
        stream = split.to_torch(
            iterable=True, seed=5, rank=rank, world_size=world, batch_size=batch
        )
        if state is not None:
            stream.load_state_dict(state)
        loader = iter(load(stream, batch_size=batch, num_workers=2, collate_fn=list))
        taken.append([t["id"] for _ in range(steps) for t in next(loader)])
        states.append(stream.state_dict(steps * batch))
    return taken, states[0]


first, state = ranks(6)
then, _ = ranks(4, state)
Sampler = taskpack.Sampler
whole = [t.id for t in Sampler(split, seed=5)]
print(json.dumps({
    "mapped": [t["id"] for batch in mapped for t in batch],
    "streamed": [t["id"] for batch in streamed for t in batch],
    "ids": view.ids(),
    "first": view[0].model_dump(mode="json"),
    "mapped_first": next(iter(mapped))[0],
    "rank_order": first[1] == [t.id for t in Sampler(split, seed=5, num_workers=6, worker=1)][:8],
    "resumed": sorted(i for r in first + then for i in r) == sorted(whole[:80]),
    "distinct": len({i for r in first + then for i in r}),
    "state": state["position"],
}))
"""


@pytest.mark.slow
def test_torch_dataloader_with_two_workers(split: Any) -> None:
    """torch runs in the verl venv (tests/conformance/frameworks.py: a CPU torch installed
    once for both), with this taskpack."""
    from .conformance.frameworks import ensure

    python = str(ensure("verl"))
    root = str(Path(split._parquets[0]).parents[1])
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    out = subprocess.run(
        [python, "-c", TORCH_PROBE, root], capture_output=True, text=True, env=env, timeout=600
    )
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    assert got["mapped"] == got["ids"]
    assert sorted(got["streamed"]) == sorted(got["ids"]) and len(got["streamed"]) == len(got["ids"])
    assert got["mapped_first"] == got["first"]
    # one global order at any world size: 6 ranks x 8 tasks, resumed on 4 ranks x 8
    assert got["rank_order"] and got["resumed"] and got["distinct"] == 80 and got["state"] == 48


def test_a_number_and_its_text_match_alike(tmp_path: Path) -> None:
    """`--where answer=18` reads 18 as a number; GSM8K's answers are the text "18": the two
    match alike (15 tasks of its test split), on the command line, in Python and the reverse."""
    from taskpack.importer import import_sources

    from .conftest import DATA

    import_sources(
        tmp_path / "g", {"test": [str(DATA / "gsm8k" / "test.jsonl")]}, "gsm8k", name="g"
    )
    split = taskpack.open(tmp_path / "g").split("test")
    as_text = split.filter(answer="18").ids()
    assert len(as_text) == 15 and split.filter(answer=18).ids() == as_text
    assert split.filter(answer=[18, "19"]).ids() == split.filter(answer=["18", 19]).ids()
    assert split.filter(answer=18.0).ids() == as_text and split.filter(answer=True).ids() == []
    result = CliRunner().invoke(main, ["ls", str(tmp_path / "g"), "--where", "answer=18"])
    assert result.exit_code == 0 and result.output.split() == as_text
    numbered = [{"id": f"n{i}", "prompt": "q", "metadata": {"level": i}} for i in range(4)]
    taskpack.write(tmp_path / "n", {"train": numbered}, name="n")
    assert taskpack.open(tmp_path / "n").split("train").filter(level="2").ids() == ["n2"]
