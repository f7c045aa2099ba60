"""Lazy views of a split for trainers: shuffled, sharded, selected, filtered, and resumable
sampling; each a row-index array over the split, never a copy of its data.

    split.shuffle(seed)            the same order for the same seed on every machine and Python
    split.shard(n, k)              worker k's share: contiguous blocks (the first n % k shards
                                   one longer), or `contiguous=False` for every n-th row
    split.select([3, 1, 4])        rows by position
    split.filter(difficulty="easy", **{"environment.repo": "django/django"})
    Sampler(split, seed=0, num_workers=8, worker=k)   one global order, disjoint shares, and a
                                   state_dict() that resumes on any number of workers

Views compose (`split.filter(...).shuffle(1).shard(4, 0)`) and read tasks as the split does.
The order comes from a fixed integer hash (SplitMix64) of (seed, row), sorted: no library's
random generator, whose stream may change between versions, decides it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, overload

from taskpack.errors import TaskpackError

if TYPE_CHECKING:
    from pathlib import Path

    import numpy as np
    import pyarrow as pa

    from taskpack.model import Task


def _seed64(seed: int | str) -> int:
    """Any int or str as 64 bits, the same everywhere."""
    return int.from_bytes(hashlib.sha256(str(seed).encode()).digest()[:8], "little")


def permutation(n: int, seed: int | str) -> np.ndarray:
    """Row order for `seed`: rows sorted by SplitMix64(seed + row)."""
    import numpy as np

    x = np.arange(n, dtype=np.uint64) + np.uint64(_seed64(seed))
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return np.argsort(x, kind="stable")


class BaseSplit(Protocol):
    """What views read of the split below them: `taskset.Split`, which is itself `Rows` (the
    task-set reader sits above this module, so it is named here by what it offers)."""

    @property
    def name(self) -> str: ...
    @property
    def digest(self) -> str: ...
    @property
    def json_columns(self) -> tuple[str, ...]: ...
    @property
    def version(self) -> int: ...
    def parquet_paths(self) -> list[Path]: ...
    def __len__(self) -> int: ...
    def __getitem__(self, i: int) -> Task: ...
    def ids(self) -> list[str]: ...
    def columns(self, names: Sequence[str] | None = None) -> pa.Table: ...
    def row_groups(self, columns: Sequence[str] | None = None) -> Iterator[pa.Table]: ...


class Rows:
    """What a split and every view of it offer; subclasses say which rows of which split."""

    def _base(self) -> BaseSplit:
        raise NotImplementedError

    def _rows(self) -> np.ndarray:
        """Positions in the base split, in this view's order."""
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __getitem__(self, i: int) -> Task:
        raise NotImplementedError

    def __iter__(self) -> Iterator[Task]:
        raise NotImplementedError

    def shuffle(self, seed: int | str) -> View:
        rows = self._rows()
        return View(self._base(), rows[permutation(len(rows), seed)])

    def shard(self, num_shards: int, index: int, *, contiguous: bool = True) -> View:
        """Share `index` of `num_shards`: disjoint, and together every row once."""
        if not 0 <= index < num_shards:
            raise TaskpackError(f"shard {index} of {num_shards}: expected 0 <= index < shards")
        rows = self._rows()
        if not contiguous:
            return View(self._base(), rows[index::num_shards])
        size, extra = divmod(len(rows), num_shards)
        start = index * size + min(index, extra)
        return View(self._base(), rows[start : start + size + (index < extra)])

    def select(self, indices: Sequence[int] | np.ndarray) -> View:
        """Rows at these positions of this view (negative counts from the end)."""
        import numpy as np

        rows = self._rows()
        chosen = np.asarray(indices, dtype=np.int64)
        if len(chosen) and not (-len(rows) <= chosen.min() and chosen.max() < len(rows)):
            raise IndexError(f"select: positions out of range for {len(rows)} tasks")
        return View(self._base(), rows[chosen])

    def filter(self, predicate: Callable[[Task], bool] | None = None, /, **where: Any) -> View:
        """Rows whose task satisfies `predicate` and every `where` condition.

        A condition's key is a field path (`environment.repo`, `reward.kind`, `source.format`;
        `__` works as `.` in keyword form), or a metadata key (`difficulty`). Its value matches
        by equality (a number and its text alike: 18 matches "18"), by membership when it is a
        list, tuple or set, or by a function's answer.
        Conditions are checked on the stored columns, without building tasks; a predicate gets
        each task."""
        import numpy as np

        rows = self._rows()
        keep = np.ones(len(rows), dtype=bool)
        if where:
            table = self._base().columns(sorted({_path(k)[0] for k in where}))
            for key, wanted in where.items():
                column, path = _path(key)
                decode = column in self._base().json_columns
                values = [_dig(v, path, decode) for v in table.column(column).to_pylist()]
                if values and all(v is _MISSING for v in values):
                    raise _no_field(key, column, path, table.column(column).to_pylist(), decode)
                test = _matcher(wanted)
                chosen = (values[int(r)] for r in rows)
                keep &= np.fromiter(
                    (test(None if v is _MISSING else v) for v in chosen),
                    dtype=bool,
                    count=len(rows),
                )
        if predicate is not None:
            base = self._base()
            for i in np.flatnonzero(keep):
                keep[i] = bool(predicate(base[int(rows[i])]))
        return View(self._base(), rows[keep])

    def to_arrow(self, *, typed: bool = False) -> pa.Table:
        """The rows as stored (JSON columns as JSON text), in this view's order; `typed=True`
        decodes the JSON columns into Arrow types (see `typed_columns`)."""
        table = self._base().columns().take(self._rows())
        return typed_columns(table, self._base().json_columns) if typed else table

    def to_pandas(self, *, typed: bool = False) -> Any:
        """A pandas DataFrame of the stored rows; `typed=True` as in `to_hf`."""
        from taskpack.errors import require

        require("pandas", "pandas")
        return self.to_arrow(typed=typed).to_pandas()

    def to_hf(self, *, typed: bool = False) -> Any:
        """A `datasets.Dataset` of the stored rows, in memory; `typed=True` gives the JSON
        columns as nested columns (see `to_arrow`), so `ds.filter` and the viewer see fields."""
        from taskpack.errors import require

        require("datasets", "datasets")
        import datasets

        return datasets.Dataset(self.to_arrow(typed=typed))

    def to_torch(
        self,
        *,
        iterable: bool = False,
        seed: int | str = 0,
        rank: int = 0,
        world_size: int = 1,
        batch_size: int = 1,
        drop_last: bool = False,
    ) -> Any:
        """A torch dataset of tasks as plain data (`Task.model_dump(mode="json")`), map-style
        by default (a DataLoader's sampler picks the order). `iterable=True` streams rank
        `rank`'s share of one global order (`Sampler(seed=...)`'s, the same at any
        `world_size`), a DataLoader's workers taking its batches of `batch_size` in turn, every
        rank as many (`drop_last`: see `Sampler`); its `state_dict(taken)` resumes streams of
        any world size."""
        from taskpack.errors import require

        require("torch", "torch")
        from taskpack.storage.torch_data import TaskDataset, TaskStream

        if not iterable:
            return TaskDataset(self)
        sampler = Sampler(self, seed=seed, num_workers=world_size, worker=rank, drop_last=drop_last)
        return TaskStream(sampler, batch_size)

    def to_ray(self) -> Any:
        """A `ray.data.Dataset` of the stored rows (as `to_arrow()`), each row's digest
        checked on the worker that reads it (see `taskpack.storage.ray_data`)."""
        from taskpack.errors import require

        require("ray", "ray")
        from taskpack.storage.ray_data import ray_dataset

        base = self._base()
        whole = len(self) == len(base) and bool((self._rows() == range(len(base))).all())
        return ray_dataset(base, None if whole else self.to_arrow())

    def ids(self) -> list[str]:
        raise NotImplementedError


def typed_columns(table: pa.Table, json_columns: Sequence[str]) -> pa.Table:
    """`table` with each of its `json_columns` decoded into Arrow types (structs, lists,
    numbers), so a table viewer or an SQL engine can filter by `metadata.difficulty` or
    `environment.repo`, where that is faithful: a column whose typed values would not read
    back exactly as stored (an integer beside a float read as `18.0`, an object missing a key
    its neighbours have read with it as null, rows that disagree in shape) stays JSON text,
    whole, as the task set stores it; see `_faithful`."""
    decoded = _decoded(table, json_columns)
    return _refitted(_plans([decoded]), lambda plans: _typed(table, plans, decoded))


def write_typed(split: BaseSplit, path: Path, *, group_rows: int = 16_384, **parquet: Any) -> None:
    """The split as one Parquet file at `path`, its JSON columns typed as `typed_columns` types
    them over the whole split, a few row groups at a time: each column's type is planned over
    every row group first (one pass, nothing kept but the plans), then the groups are converted
    to it and written in groups of `group_rows` (a second), so memory does not grow with the
    split (nor the writer's footer: an entry per column of each group written). Where a
    group's values do not fit the plan (an integer no double holds exactly, in a field planned
    as floats), that part is loosened as inference over the whole split would have it, and the
    file is written again."""
    import pyarrow.parquet as pq

    def write(plans: dict[str, Any]) -> None:
        groups = split.row_groups()
        typed = (_typed(g, plans, _decoded(g, split.json_columns)) for g in groups)
        with contextlib.ExitStack() as stack:
            writer = None
            for batch in _batched_rows(typed, group_rows):
                if writer is None:
                    writer = pq.ParquetWriter(path, batch.schema, **parquet)
                    stack.callback(writer.close)
                writer.write_table(batch, row_group_size=group_rows)
            if writer is None:  # no row group: the columns as they are, with no rows
                pq.write_table(split.columns(), path, **parquet)

    planned = split.row_groups(split.json_columns)  # the other columns are not read to plan
    _refitted(_plans(_decoded(g, split.json_columns) for g in planned), write)


def _batched_rows(tables: Iterable[pa.Table], rows: int) -> Iterator[pa.Table]:
    """The tables' rows in tables of `rows` rows (the last one fewer), however the tables
    are cut."""
    import pyarrow as pa

    pending: list[pa.Table] = []
    held = 0
    for table in tables:
        pending.append(table)
        held += table.num_rows
        while held >= rows:
            whole = pa.concat_tables(pending)
            yield whole.slice(0, rows)
            pending, held = [whole.slice(rows)], held - rows
    if held:
        yield pa.concat_tables(pending)


# The columns holding the task author's own JSON, where a null, a missing key and `{}` are three
# values: typed only if every value reads back exactly. The others hold the model's objects
# (prompt items, rewards by kind, environment), whose every field is stored, null when unset:
# there a key read back as null or an empty object left out is the same unset field.
FREE_FORM = frozenset({"answer", "metadata", "extras", "rewards"})

# A plan: how a JSON column becomes Arrow. The type pyarrow infers for its values; where it
# infers none and the values are objects, a dict of one plan per key; else _TEXT (compared by
# identity: an Arrow type equals the string of its name), the values as JSON text.
_TEXT = "json text"
T = TypeVar("T")


class _Unfit(Exception):
    """Values the plan at `path` (a column, then keys) does not fit: a number too wide for the
    type planned from all groups together, where each group's own type took it; `text`: the
    column would not read back as stored, so it is text, whole."""

    def __init__(self, path: tuple[str, ...], text: bool = False) -> None:
        self.path, self.text = path, text


def _refitted(plans: dict[str, Any], attempt: Callable[[dict[str, Any]], T]) -> T:
    """`attempt(plans)`, again wherever the plan did not fit with that part loosened: a
    struct taken key by key, anything else as text, as `_plan` does where inference fails."""
    while True:
        try:
            return attempt(plans)
        except _Unfit as e:
            plans = {**plans, e.path[0]: _TEXT} if e.text else _loosened(plans, e.path)


def _loosened(plan: Any, path: tuple[str, ...]) -> Any:
    import pyarrow as pa

    if path:
        return {**plan, path[0]: _loosened(plan[path[0]], path[1:])}
    if isinstance(plan, pa.DataType) and pa.types.is_struct(plan):
        return _fields(plan)
    return _TEXT


def _plans(tables: Iterable[dict[str, list[Any]]]) -> dict[str, Any]:
    """Each JSON column's plan over all of `tables` (their decoded columns): each table's own,
    merged."""
    plans: dict[str, Any] = {}
    for columns in tables:
        for name, values in columns.items():
            mine = _plan(values)
            plans[name] = _merge(plans[name], mine) if name in plans else mine
    return {name: _writable(plan, name not in FREE_FORM) for name, plan in plans.items()}


def _decoded(table: pa.Table, json_columns: Sequence[str]) -> dict[str, list[Any]]:
    """The table's JSON columns, each as its rows' values."""
    return {
        name: [None if v is None else json.loads(v) for v in table.column(name).to_pylist()]
        for name in json_columns
        if name in table.column_names
    }


def _fields(struct: pa.DataType) -> dict[str, Any]:
    return {f.name: f.type for f in struct}


def _plan(values: list[Any]) -> Any:
    import pyarrow as pa

    try:
        return pa.array(values).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        pass
    present = [v for v in values if v is not None]
    if present and all(isinstance(v, dict) for v in present):
        keys = dict.fromkeys(k for v in present for k in v)
        return {k: _plan([_get(v, k) for v in values]) for k in keys}
    return _TEXT


def _merge(a: Any, b: Any) -> Any:
    """The plan of two tables' values together, as `_plan` of them all would give: where
    pyarrow's inference unifies the two types (a null with anything, an integer with a float,
    the fields of two structs) the unified type, else objects key by key, else text."""
    import pyarrow as pa

    if a is _TEXT or b is _TEXT:
        return _TEXT
    if isinstance(a, pa.DataType) and isinstance(b, pa.DataType):
        both = [pa.schema([pa.field("v", t)]) for t in (a, b)]
        try:
            return pa.unify_schemas(both, promote_options="permissive").field("v").type
        except (pa.ArrowInvalid, pa.ArrowTypeError, NotImplementedError):
            pass
    keyed_a, keyed_b = _by_key(a), _by_key(b)
    if keyed_a is None or keyed_b is None:
        return _TEXT
    null = pa.null()
    keys = dict.fromkeys([*keyed_a, *keyed_b])
    return {k: _merge(keyed_a.get(k, null), keyed_b.get(k, null)) for k in keys}


def _by_key(plan: Any) -> dict[str, Any] | None:
    """A plan of objects as one plan per key; None for a plan of other values."""
    import pyarrow as pa

    if isinstance(plan, dict):
        return plan
    if pa.types.is_null(plan):
        return {}
    if pa.types.is_struct(plan):
        return _fields(plan)
    return None


def _writable(plan: Any, model: bool) -> Any:
    """The plan with what Parquet cannot store (a struct without fields) taken key by key,
    or as text where there is no key. A key that would be JSON text inside a typed column
    reads as a string like any other, so its column is text, whole; in a `model` column a key
    that holds only empty objects is left out instead (unset, as the model has it)."""
    import pyarrow as pa

    if isinstance(plan, dict):
        keyed = {k: _writable(p, model) for k, p in plan.items()}
        if model:
            keyed = {k: p for k, p in keyed.items() if p is not _TEXT or not _all_empty(plan[k])}
        return keyed if keyed and all(p is not _TEXT for p in keyed.values()) else _TEXT
    if plan is _TEXT or _parquet_writable(plan):
        return plan
    if pa.types.is_struct(plan) and plan.num_fields:
        return _writable(_fields(plan), model)
    return _TEXT


def _all_empty(plan: Any) -> bool:
    """A plan of nothing but `{}` (or null): a struct without fields."""
    import pyarrow as pa

    return isinstance(plan, pa.DataType) and (
        pa.types.is_null(plan) or (pa.types.is_struct(plan) and plan.num_fields == 0)
    )


def _typed(table: pa.Table, plans: Mapping[str, Any], decoded: dict[str, list[Any]]) -> pa.Table:
    """The table with its JSON columns (`decoded`) as `plans` type them."""
    for name, plan in plans.items():
        i = table.column_names.index(name)
        if plan is _TEXT:  # the stored JSON text itself
            continue
        typed = _array(decoded[name], plan, (name,))
        if not _faithful(typed, decoded[name], name not in FREE_FORM):
            raise _Unfit((name,), text=True)
        table = table.set_column(i, name, typed)
    return table


def _faithful(typed: pa.Array, values: list[Any], model: bool) -> bool:
    """Whether every typed value reads back as the stored one: the same JSON, key for key,
    integers as integers (Python's `==` calls 18 and 18.0 equal; JSON text does not); in a
    `model` column, unset fields (null, `{}`) aside."""
    from taskpack.base.digests import canonical_json

    same = _set_fields if model else (lambda v: v)
    return all(
        canonical_json(same(a)) == canonical_json(same(b))
        for a, b in zip(typed.to_pylist(), values, strict=True)
    )


def _set_fields(value: Any) -> Any:
    """`value` without its unset fields: keys holding null or `{}`, at any depth."""
    if isinstance(value, dict):
        kept = {k: _set_fields(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v is not None and v != {}}
    if isinstance(value, list):
        return [_set_fields(v) for v in value]
    return value


def _array(values: list[Any], plan: Any, path: tuple[str, ...]) -> pa.Array:
    import pyarrow as pa

    if plan is _TEXT:
        text = [None if v is None else json.dumps(v, separators=(",", ":")) for v in values]
        return pa.array(text, pa.string())
    if isinstance(plan, dict):
        fields = [_array([_get(v, k) for v in values], p, (*path, k)) for k, p in plan.items()]
        nulls = pa.array([v is None for v in values], pa.bool_())
        return pa.StructArray.from_arrays(fields, names=list(plan), mask=nulls)
    try:
        return pa.array(values, type=plan)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        raise _Unfit(path) from None


def _get(value: dict[str, Any] | None, key: str) -> Any:
    return None if value is None else value.get(key)


def _parquet_writable(t: pa.DataType) -> bool:
    """False for a type Parquet cannot store: a struct without fields (`{}` in every row)."""
    import pyarrow as pa

    if pa.types.is_struct(t):
        return t.num_fields > 0 and all(_parquet_writable(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _parquet_writable(t.value_type)
    return True


class View(Rows):
    """Some rows of a split, in some order."""

    def __init__(self, split: BaseSplit, rows: np.ndarray) -> None:
        self._split = split
        self._order = rows

    def _base(self) -> BaseSplit:
        return self._split

    def _rows(self) -> np.ndarray:
        return self._order

    def __repr__(self) -> str:
        return f"<View of split {self._split.name!r}: {len(self)} of {len(self._split)} tasks>"

    def __len__(self) -> int:
        return len(self._order)

    @property
    def name(self) -> str:
        return self._split.name

    @overload
    def __getitem__(self, i: int) -> Task: ...
    @overload
    def __getitem__(self, i: slice) -> View: ...
    def __getitem__(self, i: int | slice) -> Task | View:
        if isinstance(i, slice):
            return View(self._split, self._order[i])
        n = len(self._order)
        if not -n <= i < n:
            raise IndexError(f"task {i} out of range: this view has {n} tasks")
        return self._split[int(self._order[i])]

    def __iter__(self) -> Iterator[Task]:
        for row in self._order:
            yield self._split[int(row)]

    def ids(self) -> list[str]:
        ids = self._split.ids()
        return [ids[int(r)] for r in self._order]


def check_worker(worker: int, num_workers: int) -> None:
    """Worker `worker` of `num_workers`, as every sampler takes them."""
    if not 0 <= worker < num_workers:
        raise TaskpackError(f"worker {worker} of {num_workers}: expected 0 <= worker < n")


class Sampler:
    """Tasks of a split (or view) for one worker of many, epoch after epoch, resumable on any
    number of workers.

    One global stream, whatever the world size: epoch `e` is the rows in `shuffle((seed, e))`
    order, and the epochs follow one another. Worker `k` of `n` takes the stream's places
    `start + k`, `start + k + n`, ...: the workers' shares are disjoint, and while they draw in
    step (one task each per step, as data-parallel trainers do) they have handed out exactly
    the stream's first places. Every worker's share of an epoch is the same size, so ranks
    take the same number of steps (a collective never waits on a rank with one more): as
    torch's `DistributedSampler` does, the epoch is padded to a multiple of `n` by repeating
    its first places (`drop_last=False`, the default) or cut to one (`drop_last=True`). A
    worker's `state_dict()` says where the stream stands: taken at a step boundary on any
    worker of `n`, it resumes samplers of any `m` workers (`load_state_dict`), which go on
    with the next place of the epoch, none repeated and none skipped, across epoch boundaries
    too. Iterating yields this worker's places in the current epoch, then moves to the next.
    """

    def __init__(
        self,
        rows: Rows,
        *,
        seed: int | str = 0,
        num_workers: int = 1,
        worker: int = 0,
        drop_last: bool = False,
    ) -> None:
        check_worker(worker, num_workers)
        self.rows = rows
        self.seed = seed
        self.num_workers = num_workers
        self.worker = worker
        self.drop_last = drop_last
        self.start = 0  # the stream's place where this sampler's share begins
        self.drawn = 0  # tasks this worker has handed out since `start`
        self._orders: dict[int, np.ndarray] = {}

    @property
    def epoch_length(self) -> int:
        """Places in an epoch: the rows, padded (or cut) to a multiple of the workers."""
        n, w = len(self.rows), self.num_workers
        return (n // w) * w if self.drop_last else -(-n // w) * w

    def _order(self, epoch: int) -> np.ndarray:
        if epoch not in self._orders:
            order = permutation(len(self.rows), json.dumps([self.seed, epoch]))
            length = self.epoch_length
            if length > len(order) and len(order):  # padded with the epoch's first places
                import numpy

                order = numpy.resize(order, length)
            self._orders = {epoch: order[:length]}
        return self._orders[epoch]

    @property
    def place(self) -> int:
        """The stream's place of this worker's next task."""
        return self.start + self.worker + self.drawn * self.num_workers

    @property
    def epoch(self) -> int:
        """The epoch this worker's next task is in."""
        return self.place // max(self.epoch_length, 1)

    def order(self, epoch: int) -> np.ndarray:
        """This worker's positions (in `rows`) for `epoch`: its places that fall in it."""
        n = self.epoch_length
        first = epoch * n
        # this worker's first place at or after the epoch's first (and after `start`)
        own = self.start + self.worker
        if own < first:
            own += -(-(first - own) // self.num_workers) * self.num_workers
        return self._order(epoch)[own - first : n : self.num_workers]

    def __len__(self) -> int:
        return len(self.order(self.epoch))

    def __iter__(self) -> Iterator[Task]:
        n = self.epoch_length
        if not n:
            return
        epoch = self.epoch
        while self.place < (epoch + 1) * n:
            task = self.rows[int(self._order(epoch)[self.place - epoch * n])]
            self.drawn += 1
            yield task

    def _identity(self) -> dict[str, Any]:
        base = self.rows._base()
        return {"split": base.name, "digest": base.digest, "rows": len(self.rows)}

    def state_dict(self) -> dict[str, Any]:
        """Where the stream stands: `position`, the places handed out when every worker has
        drawn as many as this one (at a step boundary), with the epoch it is in and the place
        in that epoch (`offset`, which a sampler of another world size resumes from)."""
        position = self.start + self.drawn * self.num_workers
        epoch = position // max(self.epoch_length, 1)
        offset = position - epoch * self.epoch_length
        state = {"seed": self.seed, "position": position, "epoch": epoch, "offset": offset}
        return {**state, **self._identity()}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from any worker's `state_dict()`, whatever the number of workers then and
        now; refused if it was taken over other rows or with another seed. The epoch and the
        place in it carry over (an epoch's length depends on the world size); a place past
        this world size's epoch starts the next. (A state written before the stream was
        global, with `num_workers` and a position in its worker's share of an epoch, is read
        as the place its step boundary stood at.)"""
        mine = {**self._identity(), "seed": self.seed}
        theirs = {k: state.get(k) for k in mine}
        if theirs != mine:
            raise TaskpackError(f"sampler state is for {theirs}, not {mine}")
        position = int(state["position"])
        if "num_workers" in state:  # per-worker: a position in its share of its epoch
            position = int(state["epoch"]) * len(self.rows) + position * int(state["num_workers"])
        elif "offset" in state:
            epoch, offset = int(state["epoch"]), int(state["offset"])
            position = epoch * self.epoch_length + min(offset, self.epoch_length)
        self.start, self.drawn = position, 0


def _path(key: str) -> tuple[str, list[str]]:
    """(stored column, path inside it): a key starting with a task field (other than files,
    which filters do not reach) names that field; any other key is a metadata key."""
    from taskpack.model import Task

    parts = key.replace("__", ".").split(".")
    if parts[0] in Task.model_fields and parts[0] != "files":
        return parts[0], parts[1:]
    return "metadata", parts


_MISSING = object()  # a filter's key that a row does not have (unlike one that holds null)


def _dig(value: Any, path: list[str], decode: bool) -> Any:
    if decode and isinstance(value, str):
        value = json.loads(value)
    for part in path:
        if not isinstance(value, dict):
            return None if value is None else _MISSING
        if part not in value:
            return _MISSING
        value = value[part]
    return value


def _no_field(key: str, column: str, path: list[str], values: list[Any], decode: bool) -> Exception:
    """A filter key no row has: an error naming the keys there are at the first missing level
    (a typo such as `rewrd__kind` would otherwise match nothing, silently)."""
    from taskpack.errors import unknown
    from taskpack.model import Task

    depth = 0
    while depth < len(path) and any(
        _dig(v, path[: depth + 1], decode) is not _MISSING for v in values
    ):
        depth += 1
    keys: set[str] = set()
    for v in values:
        found = _dig(v, path[:depth], decode)
        if isinstance(found, dict):
            keys.update(found)
    where = f"filter {key!r}"
    if column == "metadata" and depth == 0:
        fields = [f for f in Task.model_fields if f != "files"]
        return unknown("field or metadata key", path[0], fields + sorted(keys), where)
    return unknown(
        f"key under {'.'.join([column, *path[:depth]])}", path[depth], sorted(keys), where
    )


def _number(value: Any) -> int | float | None:
    """A number, or a text that is one (" 18", "1e3"); None for anything else (a bool too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        for kind in (int, float):
            try:
                return kind(value)
            except ValueError:
                pass
    return None


def _alike(value: Any, wanted: Any) -> bool:
    """Equal, or a number and its text: a value typed on a command line (`answer=18`) is a
    number, where the data may hold the text "18" (GSM8K's answers), and the other way round."""
    if value == wanted:
        return True
    if isinstance(value, str) == isinstance(wanted, str):
        return False
    a, b = _number(value), _number(wanted)
    return a is not None and b is not None and a == b


def _matcher(wanted: Any) -> Callable[[Any], bool]:
    if callable(wanted):
        return lambda v: bool(wanted(v))
    if isinstance(wanted, (list, tuple, set, frozenset)):
        return lambda v: any(_alike(v, w) for w in wanted)
    return lambda v: _alike(v, wanted)
