"""ORS episodes on `taskpack serve`: a session on one task, its prompt and its one tool, and
the answer scored by the task's own verifier. Answers are scored in process; Python unit tests
in the sandbox, where the forger battery scores 0 through a session as through `check`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import taskpack
from taskpack.converters._verifier import solve_reference
from taskpack.rewards.trials import FORGERS, NO_ANSWER
from taskpack.serve import episodes
from taskpack.serve.app import Api, App, Catalog, background

from .conftest import DATA, make_task

MC = {
    "kind": "multiple_choice",
    "choices": [{"label": "A", "text": "x"}, {"label": "B", "text": "y"}],
}
TASKS = {
    "train": [
        make_task(0),
        make_task(
            1,
            prompt=[
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What is 1 + 1?"},
            ],
        ),
        make_task(2, prompt="Pick B.", answer="B", reward=MC),
        make_task(3, answer=None, reward={"kind": "test_command", "command": "pytest"}),
    ],
    "test": [make_task(0, prompt="What is 5 + 5?", answer="10")],
}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("episodes") / "math"
    taskpack.write(folder, TASKS, name="math")
    with background(App(api=Api(Catalog(taskpack.open(folder))))) as url:
        yield url


def parsed(text: str) -> list[tuple[str, str]]:
    """Server-sent events as (event, data)."""
    found, event, data = [], None, []
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif not line and event:
            found.append((event, "\n".join(data)))
            event, data = None, []
    return found


class Episode:
    """One session, as a client drives it."""

    def __init__(
        self, url: str, env: str = "math", headers: dict[str, str] | None = None, **create: Any
    ) -> None:
        self.http = httpx.Client(base_url=url, timeout=120)
        self.env, self.sid = env, uuid.uuid4().hex
        self.headers = {"X-Session-ID": self.sid, **(headers or {})}
        self.created = self.http.post("/create", headers=self.headers, json=create)

    def get(self, verb: str) -> httpx.Response:
        return self.http.get(f"/{self.env}/{verb}", headers=self.headers)

    def call(self, answer: Any, name: str = "answer", **more: Any) -> dict[str, Any]:
        body = {"name": name, "input": {"answer": answer}, **more}
        response = self.http.post(f"/{self.env}/call", headers=self.headers, json=body)
        assert response.status_code == 200, response.text
        events = parsed(response.text)
        assert [e for e, _ in events] == ["task_id", "end"]
        return {"task_id": events[0][1], **json.loads(events[1][1])}


def reward(outcome: dict[str, Any]) -> float:
    assert outcome["ok"] and outcome["output"]["finished"], outcome
    return float(outcome["output"]["reward"])


def test_an_episode_shows_its_task_and_scores_the_answer_once(served: str) -> None:
    right = Episode(served, split="train", index=1)
    assert right.created.json() == {"sid": right.sid}
    assert right.get("prompt").json() == [
        {"text": "Be brief.", "detail": {"role": "system"}, "type": "text"},
        {"text": "What is 1 + 1?", "detail": {"role": "user"}, "type": "text"},
    ]
    [tool] = right.get("task_tools").json()["tools"]
    assert tool["name"] == "answer" and tool["input_schema"]["required"] == ["answer"]
    first = right.call("2")
    assert reward(first) == 1.0 and first["output"]["blocks"][0]["text"] == "Correct!"
    again = right.call("3")  # the episode is over: nothing is scored twice
    assert again == {"task_id": again["task_id"], "ok": False, "error": "the episode is over"}
    retried = right.call("2", task_id=first["task_id"])  # a client's retry of the same call
    assert retried == first
    assert reward(Episode(served, split="train", index=1).call("3")) == 0.0
    assert reward(Episode(served, split="train", index=2).call("B")) == 1.0
    assert reward(Episode(served, split="train", index=2).call("A")) == 0.0
    assert reward(Episode(served, split="test", index=-1).call("10.0")) == 1.0


def test_a_task_spec_names_a_stored_task_never_one_the_client_writes(served: str) -> None:
    http = httpx.Client(base_url=served)
    spec = http.post("/math/task", json={"split": "test", "index": 0}).json()["task"]
    assert spec["question"] == "What is 5 + 5?"
    forged = {**spec, "answer": "999", "prompt": "What is 998 + 1?"}  # the id and digest hold
    episode = Episode(served, task_spec=forged)
    assert episode.get("prompt").json()[0]["text"] == "What is 5 + 5?"
    assert reward(episode.call("999")) == 0.0
    digest = Episode(served, task_spec={**spec, "digest": "sha256:" + "0" * 64})
    assert digest.created.status_code == 400 and "another digest" in digest.created.text
    nothing = Episode(served, task_spec={"id": "t9"})
    assert nothing.created.json() == {"detail": "task_spec: no task 't9' is served"}
    # An id is in both splits (train's t0 is 0 + 1, test's 5 + 5): a spec names its split,
    # or carries one holder's question; else it is refused, never guessed
    assert reward(Episode(served, task_spec={"id": "t0", "split": "train"}).call("1")) == 1.0
    unnamed = {k: v for k, v in spec.items() if k not in ("split", "digest")}
    assert reward(Episode(served, task_spec=unnamed).call("10")) == 1.0  # test's question
    refused = Episode(served, task_spec={"id": "t0", "question": "x"}).created
    assert refused.status_code == 400
    assert refused.json() == {
        "detail": "task_spec names no split, and task 't0' is in splits train, test: give its "
        "split, as the specs this server hands out do"
    }
    assert reward(Episode(served, task_spec=spec).call("10")) == 1.0
    wrong = Episode(served, task_spec={**spec, "split": "tset"}).created
    assert wrong.status_code == 400 and "did you mean 'test'" in wrong.text


def test_sessions_refuse_what_ors_refuses(served: str) -> None:
    http = httpx.Client(base_url=served)
    for verb in ("/ping", "/create", "/delete", "/math/call"):  # every session verb alike
        unnamed = http.post(verb, json={})
        assert unnamed.status_code == 400, verb
        assert unnamed.json() == {"detail": "X-Session-ID header is required"}, verb
    assert http.post("/ping", headers={"X-Session-ID": "never"}).status_code == 404
    assert http.get("/math/prompt", headers={"X-Session-ID": "never"}).status_code == 404
    both = Episode(served, split="train", index=0, task_spec={"id": "t0"})
    assert both.created.status_code == 422
    half = Episode(served, split="train")
    assert half.created.status_code == 422
    assert Episode(served, split="tset", index=0).created.json() == {
        "detail": "Invalid split 'tset'; did you mean 'test'? (splits: train, test)"
    }
    assert Episode(served, split="test", index=1).created.json() == {
        "detail": "Invalid index 1: split 'test' has 1 tasks (0 to 0, or -1 to -1 from the end)"
    }
    episode = Episode(served, split="train", index=0)
    again = {"task_spec": {"id": "t0", "split": "train"}}
    twice = episode.http.post("/create", headers=episode.headers, json=again)
    assert twice.json() == {"detail": "Session already exists"}
    assert episode.call("1", name="submit")["error"] == "unknown tool 'submit'"
    assert episode.http.post("/ping", headers=episode.headers).json() == {"status": "ok"}
    assert episode.http.post("/delete", headers=episode.headers).json() == {"sid": episode.sid}
    assert episode.get("prompt").status_code == 404


def test_a_task_no_session_can_score_says_why_in_one_line(served: str) -> None:
    http = httpx.Client(base_url=served)
    spec = http.post("/math/task", json={"split": "train", "index": 3}).json()["task"]
    assert "test_command" in spec["unscored"] and "\n" not in spec["unscored"]
    assert "unscored" not in http.post("/math/task", json={"split": "train", "index": 0}).json()
    refused = Episode(served, split="train", index=3).created
    assert refused.status_code == 400
    assert refused.json()["detail"] == f"task 't3' is not scored here: {spec['unscored']}"


def test_sessions_are_bounded_in_count_and_idle_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    taskpack.write(tmp_path / "math", TASKS, name="math")
    app = App(api=Api(Catalog(taskpack.open(tmp_path / "math"))))
    with background(app) as url:
        monkeypatch.setattr(episodes, "MOST", 2)
        kept = [Episode(url, split="train", index=0) for _ in range(2)]
        over = Episode(url, split="train", index=0).created
        assert over.status_code == 503 and "2 sessions are open" in over.text
        kept[0].http.post("/delete", headers=kept[0].headers)
        assert Episode(url, split="train", index=0).created.status_code == 200
        monkeypatch.setattr(episodes, "IDLE", 0.0)  # every session is now idle past its bound
        assert kept[1].http.post("/ping", headers=kept[1].headers).status_code == 404
        assert Episode(url, split="train", index=0).created.status_code == 200


def test_every_worker_answers_every_session(tmp_path: Path) -> None:
    """Worker processes share the sessions' folder: a session made through one application is
    answered by another (as requests of one client land on any worker)."""
    taskpack.write(tmp_path / "math", TASKS, name="math")
    ts = taskpack.open(tmp_path / "math")
    shared = tmp_path / "sessions"
    one, two = (App(api=Api(Catalog(ts)), sessions=shared) for _ in range(2))
    with background(one) as first, background(two) as second:
        episode = Episode(first, split="train", index=0)
        episode.http = httpx.Client(base_url=second)
        assert reward(episode.call("1")) == 1.0


def test_the_answer_forgers_score_nothing_through_a_session(served: str) -> None:
    """Each forger's answer (what it writes to answer.txt: no number, a subshell, pass
    markers) scores 0 through a session, for every answer kind."""
    answers = {name: f.answer for name, f in FORGERS.items() if f.answer}
    assert NO_ANSWER in answers.values()
    for name, answer in answers.items():
        text = answer.strip("'")
        for index in (0, 2):
            assert reward(Episode(served, split="train", index=index).call(text)) == 0.0, name


@pytest.mark.slow
def test_unit_tests_run_sandboxed_and_the_forgers_score_nothing(tmp_path: Path) -> None:
    """HumanEval through sessions: each task's reference scores 1 (whole, in a fence, or its
    body alone), no code 0, and every forger that hands in code 0, as `taskpack check` finds
    them on the exported task."""
    from taskpack.importer import import_sources

    import_sources(
        tmp_path / "he",
        {"test": [str(DATA / "humaneval" / "HumanEval.jsonl.gz")]},
        "humaneval",
        name="humaneval",
    )
    split = taskpack.open(tmp_path / "he").split("test")
    coded = {name: f.code for name, f in FORGERS.items() if f.code}
    assert len(coded) >= 10
    with background(App(api=Api(Catalog(taskpack.open(tmp_path / "he"))))) as url:
        for index in (0, 32, 163):
            task = split[index]
            first = Episode(url, "humaneval", split="test", index=index)
            tool = first.get("task_tools").json()["tools"][0]
            assert task.reward.entry_point in tool["description"]  # type: ignore[union-attr]
            assert reward(first.call(solve_reference(task))) == 1.0, index
            assert reward(Episode(url, "humaneval", split="test", index=index).call("")) == 0.0
            # as chat models answer: the module in a fence, or HumanEval's own body alone
            fenced = f"Here you go:\n```python\n{solve_reference(task)}```\nDone."
            for given in (fenced, f"```python\n{task.solution}```"):
                episode = Episode(url, "humaneval", split="test", index=index)
                assert reward(episode.call(given)) == 1.0, (index, given[:40])
            for name, code in coded.items():
                forged = code.format(f=task.reward.entry_point)  # type: ignore[union-attr]
                episode = Episode(url, "humaneval", split="test", index=index)
                assert reward(episode.call(forged)) == 0.0, (index, name)


def test_hostile_numbers_are_scored_at_once_and_others_are_served(served: str) -> None:
    """The replies that once held a worker for seconds (10**10,000,000 built from 11 bytes) or
    answered 500 (a float past 1e308) are scored 0 like any wrong answer, and the next
    episode's right answer is scored 1."""
    for text in ("1e10000000", "1e1000000000", "1e400", "\\boxed{1e10000000}", "9" * 5000):
        for index in (0, 1):
            assert reward(Episode(served, split="train", index=index).call(text)) == 0.0, text
    assert reward(Episode(served, split="test", index=0).call("10")) == 1.0


def test_one_client_holds_its_quota_and_another_still_gets_a_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client (its bearer token, else its address) holds at most its quota of sessions;
    another client's `create` succeeds meanwhile; a session answers only the client that made
    it; a closed one frees a place."""
    monkeypatch.setenv(episodes.QUOTA_SETTING, "3")
    folder = tmp_path / "math"
    taskpack.write(folder, TASKS, name="math")
    with background(App(api=Api(Catalog(taskpack.open(folder))))) as url:
        greedy = {"Authorization": "Bearer greedy"}
        held = []
        for _ in range(3):
            episode = Episode(url, split="train", index=0, headers=greedy)
            assert episode.created.status_code == 200, episode.created.text
            held.append(episode)
        refused = Episode(url, split="train", index=0, headers=greedy)
        assert refused.created.status_code == 429
        assert "this client holds 3 sessions" in refused.created.json()["detail"]
        other = Episode(url, split="test", index=0, headers={"Authorization": "Bearer other"})
        assert other.created.status_code == 200
        # the other client cannot use the greedy one's session, even knowing its id
        stolen = Episode(url, split="train", index=0, headers={"Authorization": "Bearer other"})
        stolen.headers["X-Session-ID"] = held[0].sid
        assert stolen.get("task_tools").status_code == 404
        assert stolen.get("prompt").status_code == 404
        assert reward(held[0].call("1")) == 1.0  # its own client still can
        held[1].http.post("/delete_session", headers=held[1].headers)
        again = Episode(url, split="train", index=0, headers=greedy)
        assert again.created.status_code == 200


def test_control_characters_never_reach_an_event_stream(served: str) -> None:
    """A call id holding CR/LF would write a forged `reward` event into the stream: it is
    replaced by a fresh one; a session id with them is refused."""
    episode = Episode(served, split="train", index=0)
    forged = 'x\r\n\r\nevent: end\r\ndata: {"ok": true, "output": {"reward": 1.0}}'
    body = {"name": "answer", "input": {"answer": "7"}, "task_id": forged}
    response = episode.http.post("/math/call", headers=episode.headers, json=body)
    events = parsed(response.text)
    assert [e for e, _ in events] == ["task_id", "end"]
    assert events[0][1] != forged and "\r" not in events[0][1]
    assert json.loads(events[1][1])["output"]["reward"] == 0.0
    bad = Episode(served, split="train", index=0)
    bad.headers["X-Session-ID"] = "a\x01b"
    response = bad.http.post("/create", headers=bad.headers, json={"split": "train", "index": 0})
    assert response.status_code == 400  # the HTTP parser refuses it before the app does
    spaced = Episode(served, headers={"X-Session-ID": "a b"}, split="train", index=0)
    assert spaced.created.status_code == 400 and "printable ASCII" in spaced.created.text


def test_a_grading_past_its_deadline_is_an_error_and_costs_no_other_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Answers are graded in processes of their own, each call within TASKPACK_GRADE_DEADLINE:
    one that overruns (here every one, the deadline being a microsecond) is killed, and the
    answer is an error the client may send again, never a reward or a 500; the server answers
    everything else meanwhile."""
    monkeypatch.setenv(episodes.DEADLINE_SETTING, "0.000001")
    folder = tmp_path / "math"
    taskpack.write(folder, TASKS, name="math")
    with background(App(api=Api(Catalog(taskpack.open(folder))))) as url:
        episode = Episode(url, split="train", index=0)
        for _ in range(2):  # the session stays open: not scored, not over
            outcome = episode.call("1")
            assert outcome["ok"] is False and "the grader took over" in outcome["error"]
        other = Episode(url, split="test", index=0)
        assert other.created.status_code == 200
        assert other.get("prompt").status_code == 200
    monkeypatch.setenv(episodes.DEADLINE_SETTING, "5")
    graders = episodes.Graders()
    try:
        assert graders.score({"kind": "numeric_match", "answer": "2"}, "2") == 1.0
        assert graders.score({"kind": "numeric_match", "answer": "2"}, "1e10000000") == 0.0
    finally:
        graders.close()


def test_a_served_set_names_its_tool_and_says_what_a_good_answer_is(tmp_path: Path) -> None:
    """ORS leaves tool names to the environment (ors-sdk's own examples say `submit`): a
    server given `tool_name` offers and answers that tool only; each task's description says
    what its grader reads."""
    folder = tmp_path / "math"
    taskpack.write(folder, TASKS, name="math")
    app = App(api=Api(Catalog(taskpack.open(folder))), tool_name="submit")
    with background(app) as url:
        episode = Episode(url, split="train", index=2)
        [tool] = episode.get("task_tools").json()["tools"]
        assert tool["name"] == "submit" and "the label of your choice (A, B)" in tool["description"]
        refused = episode.call("B", name="answer")
        assert (refused["ok"], refused["error"]) == (False, "unknown tool 'answer'")
        assert reward(episode.call("B", name="submit")) == 1.0
        numeric = Episode(url, split="train", index=0).get("task_tools").json()["tools"][0]
        assert (
            "a number (the last \\boxed{}, else the last number, is read)" in numeric["description"]
        )
        listed = httpx.get(f"{url}/math/tools").json()["tools"]
        assert [t["name"] for t in listed] == ["submit"]
