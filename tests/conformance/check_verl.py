"""Runs inside the verl venv: verl's RLHFDataset loads taskpack's Parquet (every row, the
prompt as chat messages, `index` from extra_info), and verl's `default_compute_score` scores
each row by its `data_source`: the reference answer in the form that scorer reads scores 1.0,
a wrong answer 0.0, for every row.

    python check_verl.py FILE.parquet [FILE.parquet ...]  ->  JSON on stdout

With TASKPACK_GRADE set to taskpack's grader (`grader.py`, standard library only), the MATH
rows' candidates are also graded by its math_match rule, which must agree with verl's scorer
on every one (`disagree` lists those that do not).
"""

import importlib.util
import json
import os
import sys

from omegaconf import OmegaConf
from verl.utils.dataset.rl_dataset import RLHFDataset
from verl.utils.reward_score import default_compute_score

# What the model must write for each scorer: GSM8K's takes the number after "####", the
# MATH scorer the last \boxed{}.
FORMS = {
    "openai/gsm8k": "Step by step, the result follows.\n#### {}",
    "DigitalLearningGmbH/MATH-lighteval": "So the final answer is $\\boxed{{{}}}$.",
}
WRONG = {"openai/gsm8k": "-987654321", "DigitalLearningGmbH/MATH-lighteval": "\\frac{{9}}{{7777}}"}

config = OmegaConf.create({"filter_overlong_prompts": False, "cache_dir": sys.argv[1] + ".cache"})
dataset = RLHFDataset(data_files=sys.argv[1:], tokenizer=None, config=config)
grade = None
if os.environ.get("TASKPACK_GRADE"):
    spec = importlib.util.spec_from_file_location("taskpack_grade", os.environ["TASKPACK_GRADE"])
    grade = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(grade)
MATH = "DigitalLearningGmbH/MATH-lighteval"
rows, sources, reference, wrong, indexes, disagree = len(dataset), set(), [], [], [], []
for i in range(rows):
    item = dataset[i]
    assert item["raw_prompt"] and item["raw_prompt"][-1]["role"] == "user"
    source = item["data_source"]
    truth = item["reward_model"]["ground_truth"]
    sources.add(source)
    indexes.append(item["index"])
    reference.append(default_compute_score(source, FORMS[source].format(truth), truth))
    wrong.append(default_compute_score(source, FORMS[source].format(WRONG[source]), truth))
    if grade is not None and source == MATH:
        candidates = [
            FORMS[source].format(truth),
            FORMS[source].format(WRONG[source]),
            f"The answer is {truth}.",  # no box: verl's scorer reads none
            f"\\boxed{{{truth}}} or maybe \\boxed{{{WRONG[source]}}}",  # the last box counts
        ]
        for reply in candidates:
            theirs = default_compute_score(source, reply, truth)
            ours = grade.answer_score({"kind": "math_match", "answer": truth}, reply)
            if theirs != ours:
                disagree.append([i, reply, theirs, ours])
print(
    json.dumps(
        {
            "rows": rows,
            "data_sources": sorted(sources),
            "reference": sorted(set(reference)),
            "wrong": sorted(set(wrong)),
            "indexes_unique": len(set(indexes)) == rows,
            "disagree": disagree,
        }
    )
)
