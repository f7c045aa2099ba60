"""Runs inside the verifiers==0.3.1 venv: verifiers' own loader imports the environment module
taskpack wrote beside its datasets, and the rubric it returns scores each task's reference
completion 1.0 and a wrong one 0.0, through an offline rollout against a stub OpenAI server.

    python check_verifiers_env.py EXPORT_DIR REFERENCES.json  ->  JSON on stdout

REFERENCES.json maps each eval prompt's last message to [reference reply, wrong reply].
"""

import json
import os
import sys

import verifiers as vf
from fake_openai import serve

sys.path.insert(0, sys.argv[1])
env = vf.load_environment("taskpack_env")
with open(sys.argv[2], encoding="utf-8") as f:
    references = json.load(f)
which = {"reply": 0}


base_url = serve(lambda question: references.get(question, ["?", "?"])[which["reply"]])
os.environ["FAKE_KEY"] = "not-a-secret"
config = vf.ClientConfig(
    api_base_url=base_url,
    api_key_var="FAKE_KEY",
    max_retries=0,
)
n = int(sys.argv[3]) if len(sys.argv) > 3 else 5
out = {"type": type(env).__name__, "eval_rows": len(env.get_eval_dataset())}
for name, index in (("reference", 0), ("wrong", 1)):
    which["reply"] = index
    results = env.evaluate_sync(client=config, model="fake", num_examples=n)
    out[name] = [o["reward"] for o in results["outputs"]]
print(json.dumps(out))
