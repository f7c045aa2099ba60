"""Runs inside the verifiers==0.3.1 venv: SingleTurnEnv accepts taskpack's datasets, returns
every row, and one offline rollout answered with the reference answer scores 1.0.

    python check_verifiers.py TRAIN_DIR TEST_DIR  ->  JSON on stdout
"""

import json
import os
import sys

import verifiers as vf
from datasets import load_from_disk
from fake_openai import serve

train, test = load_from_disk(sys.argv[1]), load_from_disk(sys.argv[2])
answers = {row["prompt"][-1]["content"]: row["answer"] for row in test}


def exact_answer(completion, answer, **kwargs) -> float:
    text = completion[-1]["content"] if isinstance(completion, list) else completion
    text = getattr(text, "content", text)
    return 1.0 if str(text).strip() == str(answer).strip() else 0.0


base_url = serve(lambda question: answers.get(question, "?"))
env = vf.SingleTurnEnv(dataset=train, eval_dataset=test, rubric=vf.Rubric(funcs=[exact_answer]))
os.environ["FAKE_KEY"] = "not-a-secret"
config = vf.ClientConfig(
    api_base_url=base_url,
    api_key_var="FAKE_KEY",
    max_retries=0,
)
results = env.evaluate_sync(client=config, model="fake", num_examples=3)
rewards = [o["reward"] for o in results["outputs"]]
print(
    json.dumps(
        {
            "train_rows": len(env.get_dataset()),
            "eval_rows": len(env.get_eval_dataset()),
            "rewards": rewards,
        }
    )
)
