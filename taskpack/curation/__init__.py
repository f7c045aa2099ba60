"""Curation: steps that make a new version of a task set from published ones (`decontaminate`,
`dedup`, `annotate`, `filter_pass_rate`, `mix`, then `keep`), the lineage each version records,
and what they use: text overlap, rollout files, draws from a mixture.

    report = decontaminate("gsm8k@1", ["humaneval@1"], ngram=8)
    keep(report.taskset, report.kept(), "gsm8k-clean", version="1.1.0", source=report.record)

The names load with their modules, as `taskpack`'s do.
"""

from __future__ import annotations

from taskpack.base.lazy import lazy

TYPE_CHECKING = False
__all__ = [
    "Band",
    "Contamination",
    "Duplicates",
    "Link",
    "Part",
    "PassRates",
    "Report",
    "annotate",
    "decontaminate",
    "dedup",
    "filter_pass_rate",
    "keep",
    "lineage",
    "mix",
    "next_version",
]
_LAZY = {
    "Contamination": "cleaning",
    "Duplicates": "cleaning",
    "decontaminate": "cleaning",
    "dedup": "cleaning",
    "Part": "mixing",
    "mix": "mixing",
    "Band": "passrates",
    "PassRates": "passrates",
    "annotate": "passrates",
    "filter_pass_rate": "passrates",
    "Link": "steps",
    "Report": "steps",
    "keep": "steps",
    "lineage": "steps",
    "next_version": "steps",
}

__getattr__, __dir__ = lazy(__name__, _LAZY, __all__)


if TYPE_CHECKING:
    from taskpack.curation.cleaning import Contamination, Duplicates, decontaminate, dedup
    from taskpack.curation.mixing import Part, mix
    from taskpack.curation.passrates import Band, PassRates, annotate, filter_pass_rate
    from taskpack.curation.steps import Link, Report, keep, lineage, next_version
