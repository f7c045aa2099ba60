"""Multi-SWE-bench (ByteDance-Seed): pull requests in Java, TypeScript, JavaScript, Go, Rust, C,
C++ and more, one JSON object per line: `org`, `repo`, `number`, `state`, `title`, `body`, `base`
{label, ref, sha}, `resolved_issues` [{number, title, body}], `fix_patch`, `test_patch`, and its
harness's verdicts: the tests by transition (`fixed_tests`, `p2p_tests`, `f2p_tests`,
`s2p_tests`, `n2p_tests`: {name: {run, test, fix}}) and the three runs' results (`run_result`,
`test_patch_result`, `fix_patch_result`).

`instance_id` (else `<org>__<repo>-<number>`) -> id; the resolved issues' titles and bodies ->
prompt (the rows hold no problem statement of their own; the PR's title and body describe the
fix, so the agent never sees them); fix_patch -> solution; test_patch -> the task file
`test.patch`; the f2p, s2p and n2p tests -> fail_to_pass and the p2p tests -> pass_to_pass of
a swe_tests reward; org/repo, base.sha -> environment, with the harness's image of the pull
request (`mswebench/<org>_m_<repo>:pr-<number>`, lowercase) and its repository at
`/home/<repo>`. Every other field stays in metadata verbatim.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from taskpack.converters._format import Format, Options
from taskpack.converters._sources.records import Record, RowError, map_rows, need
from taskpack.converters._sources.tables import iter_table_rows

TEST_PATCH = "test.patch"
_MAPPED = ("instance_id", "fix_patch", "test_patch")
_FAILING = ("f2p_tests", "s2p_tests", "n2p_tests")  # every one must pass after the fix


def image(org: str, repo: str, number: int) -> str:
    return f"mswebench/{org}_m_{repo}".lower() + f":pr-{number}"


def _names(row: dict[str, Any], key: str) -> list[str]:
    tests = row.get(key) or {}
    if not isinstance(tests, dict):
        raise RowError(f"field {key!r}: expected an object of test names")
    return [str(name) for name in tests]


def _prompt(row: dict[str, Any]) -> str:
    issues = row.get("resolved_issues") or []
    if not isinstance(issues, list):
        raise RowError("field 'resolved_issues': expected a list")
    parts = []
    for issue in issues:
        if isinstance(issue, dict):
            text = "\n\n".join(str(issue[k]) for k in ("title", "body") if issue.get(k))
            if text:
                parts.append(text)
    if not parts:
        raise RowError("field 'resolved_issues': no issue with a title or body to ask about")
    return "\n\n".join(parts)


def to_task(row: dict[str, Any], split: str, ordinal: int) -> dict[str, Any]:
    org, repo, number = need(row, "org"), need(row, "repo"), need(row, "number", int)
    base = need(row, "base", dict)
    tid = row.get("instance_id") or f"{org}__{repo}-{number}"
    failing = [name for key in _FAILING for name in _names(row, key)]
    return {
        "id": str(tid),
        "prompt": _prompt(row),
        "solution": need(row, "fix_patch"),
        "reward": {
            "kind": "swe_tests",
            "fail_to_pass": list(dict.fromkeys(failing)),
            "pass_to_pass": _names(row, "p2p_tests"),
            "test_patch": TEST_PATCH,
        },
        "files": [
            {"path": TEST_PATCH, "role": "tests", "data": need(row, "test_patch").encode("utf-8")}
        ],
        "environment": {
            "repo": f"{org}/{repo}",
            "commit": need(base, "sha"),
            "image": image(org, repo, number),
            "workdir": f"/home/{repo}",
        },
        "source": {"format": "multi-swebench", "split": split, "row": ordinal},
        "metadata": {k: v for k, v in row.items() if k not in _MAPPED},
    }


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return map_rows(iter_table_rows(uri), lambda row, n: to_task(row, split, n))


FORMAT = Format(
    name="multi-swebench",
    summary="Multi-SWE-bench pull requests (7+ languages): issues, patches, tests by transition.",
    read=read,
)
