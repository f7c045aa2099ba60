"""Any valid task survives Parquet: read back, it is the equal task with the same digest."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import taskpack
from taskpack import Task
from taskpack.storage.rows import INLINE_MAX

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
json_leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | text
json_leaf |= st.floats(allow_nan=False, allow_infinity=False)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
segment = st.text("abcXYZ019_-.", min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))
rel_path = st.lists(segment, min_size=1, max_size=3).map("/".join)
file_data = st.binary(max_size=64) | st.just(b"\x00" * (INLINE_MAX + 1))

rewards = st.one_of(
    st.none(),
    st.builds(lambda: {"kind": "exact_match"}),
    st.builds(lambda t: {"kind": "numeric_match", "tolerance": t}, st.floats(0, 1e6)),
    st.builds(
        lambda w: {"kind": "weighted_tests", "weights": w},
        st.dictionaries(text, st.floats(0.001, 10), min_size=1, max_size=3),
    ),
    st.builds(
        lambda f, p: {"kind": "swe_tests", "fail_to_pass": f, "pass_to_pass": p},
        st.lists(text, max_size=3),
        st.lists(text, max_size=3),
    ),
    st.builds(lambda c: {"kind": "rubric", "criteria": [{"description": c}]}, text),
    st.builds(
        lambda labels: {
            "kind": "multiple_choice",
            "choices": [{"label": x, "text": f"choice {x}"} for x in labels],
        },
        st.lists(st.sampled_from("ABCDE"), min_size=2, max_size=5, unique=True),
    ),
)


@st.composite
def tasks(draw: st.DrawFn) -> dict[str, Any]:
    paths = draw(st.lists(rel_path, max_size=3, unique=True))
    # A path cannot be both a file and a folder of another file.
    paths = [p for p in paths if not any(q.startswith(p + "/") for q in paths)]
    messages = st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant"]), "content": text}
    )
    reward = draw(rewards)
    answer = draw(st.none() | text)
    if reward is not None and reward["kind"] == "multiple_choice" and answer is not None:
        answer = reward["choices"][-1]["label"]
    return {
        "id": draw(
            st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=20)
        ),
        "prompt": draw(text | st.lists(messages, min_size=1, max_size=3)),
        "answer": answer,
        "solution": draw(st.none() | text),
        "reward": reward,
        "files": [
            {"path": p, "data": draw(file_data), "mode": draw(st.sampled_from([0o644, 0o755]))}
            for p in paths
        ],
        "environment": draw(
            st.none()
            | st.builds(lambda r, s: {"repo": r, "setup": s}, text, st.lists(text, max_size=2))
        ),
        "limits": draw(st.none() | st.builds(lambda n: {"max_turns": n}, st.integers(1, 100))),
        "metadata": draw(st.dictionaries(text, json_value, max_size=4)),
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(tasks(), min_size=1, max_size=4, unique_by=lambda t: t["id"]))
def test_any_valid_task_round_trips_through_parquet(rows: list[dict[str, Any]]) -> None:
    originals = [Task.model_validate(r) for r in rows]
    with tempfile.TemporaryDirectory() as tmp:
        taskpack.write(Path(tmp) / "ts", {"train": rows}, name="prop", version="0.0.1")
        split = taskpack.open(Path(tmp) / "ts").split("train")
        back = list(split)
        assert back == originals
        assert [t.digest for t in back] == [t.digest for t in originals]
        for original, read in zip(originals, back, strict=True):
            assert [f.read_bytes() for f in read.files] == [f.read_bytes() for f in original.files]
        assert taskpack.verify(taskpack.open(Path(tmp) / "ts")) == []
