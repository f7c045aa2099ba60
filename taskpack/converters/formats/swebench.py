"""SWE-bench (Lite, Verified, full) as JSONL, JSON or Parquet.

instance_id -> id; problem_statement -> prompt (verbatim, `\\r\\n` and all); FAIL_TO_PASS and
PASS_TO_PASS (JSON-encoded strings upstream) -> real lists in a swe_tests reward; repo,
base_commit, environment_setup_commit -> environment; test_patch -> the task file `test.patch`;
the gold patch -> solution, never the prompt. Every other field stays in metadata verbatim
(`version` is the string "0.20", never a float). A test list whose upstream text would not be
reproduced exactly by `json.dumps` is also kept verbatim in metadata, so rebuilding is exact.
"""

from __future__ import annotations

from taskpack.converters._columnar.fieldmap import FieldMap, Flat, IdOf
from taskpack.converters._columnar.kinds import JsonTextList, Kind, Text
from taskpack.converters._format import Format
from taskpack.converters._swe_rules import TEST_LISTS, test_list, to_task
from taskpack.converters._swe_rules import source_row as source_row  # the format's own face

# In the order the row path checks them; the test lists' text as upstream writes it.
_FIELDS: dict[str, Kind] = {key: JsonTextList(test_list) for key in TEST_LISTS}
_FIELDS |= {
    name: Text()
    for name in ("instance_id", "problem_statement", "patch", "test_patch", "repo", "base_commit")
}
FIELDS = FieldMap(_FIELDS, id=IdOf("instance_id"), mapping=Flat(to_task), rest=True, keyed=True)


FORMAT = Format(
    name="swebench",
    summary="SWE-bench instances (Lite, Verified, full): problem statement, patches, test lists.",
    default_split="test",  # a benchmark: Lite and Verified are `test` splits on the Hub
    read=FIELDS.read,
    read_columns=FIELDS.read_columns,
)
