"""HumanEval-X (THUDM/CodeGeeX): HumanEval's problems in Python, C++, Java, JavaScript, Go and
Rust, one JSON object per line: `task_id` (`CPP/0`; its prefix names the language), `prompt`
(imports, docstring and declaration), `declaration`, `canonical_solution` (the body), `test`
and `example_test`, Go's rows also `import` and `test_setup`. There is no `entry_point`: the
function is the one the declaration declares.

Python is HumanEval: a unit_tests reward on that function, graded by taskpack's grader. Every
other language gets a test_command reward running `tests/run_tests.sh`, which builds the
agent's `/app/solution.<ext>` with the hidden test as HumanEval-X's evaluation does and runs it
in the language's image: C++ with g++ -std=c++11 (its standard headers first), Java with javac
and java (the test's `Main`), JavaScript with node (passing only when nothing else is printed,
as a failed `console.assert` prints), Go with `go test` (testify must be in the image's module
cache, as HumanEval-X vendors it), Rust with `cargo test --offline` (rand, regex and md5 in
the image's cargo cache). Where the test is a program of its own (C++, Java, JavaScript, Go), it
must also print a nonce drawn for the run after its last test, so code that exits 0 before the
tests end scores 0; code compiled into the same program can still defeat its assertions
(SECURITY.md). prompt -> the instruction (the code to complete, then where to write it);
prompt + canonical_solution -> the solution and the oracle; the other fields -> metadata.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from taskpack.converters._format import Format, Options
from taskpack.converters._sources.records import Record, RowError, map_rows, need
from taskpack.converters._sources.tables import iter_table_rows


@dataclass(frozen=True)
class Language:
    name: str
    ext: str
    image: str  # the language's official image
    run: str  # the body of run_tests.sh
    extra: tuple[str, str] | None = None  # (name, text): a file the run adds to the test


_HEAD = """#!/bin/bash
# taskpack: HumanEval-X's {name} check of /app/solution.{ext} against the hidden test
# ($TEST_DIR/test.{ext}); exits 0 only if every test passed and the run reached its end.
set -u
work=$(mktemp -d)
nonce=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n')
[ -f /app/solution.{ext} ] || exit 1
"""
# The standard headers HumanEval-X's C++ programs rely on, put before the agent's code.
_CPP_HEADERS = (
    "stdio.h", "stdlib.h", "math.h", "string.h", "limits.h", "algorithm", "climits",
    "cstring", "iostream", "map", "set", "string", "vector", "sstream", "numeric", "cmath",
)  # fmt: skip
_CPP = (
    "{ "
    + "; ".join(f"echo '#include<{h}>'" for h in _CPP_HEADERS)
    + "; cat /app/solution.cpp; echo\n"
    # the test's main becomes a function that returns 0 when it reaches its end
    "  sed -E ':a;$!{N;ba};s/\\bint[[:space:]]+main[[:space:]]*\\(/int taskpack_tests_main(/;"
    's/(.*)\\}/\\1    return 0;\\n}/\' "$TEST_DIR/test.cpp"; echo\n'
    '  cat "$TEST_DIR/taskpack_main.cpp"; } > "$work/test.cpp"\n'
    'g++ -std=c++11 -o "$work/a.out" "$work/test.cpp" -lm || exit 1\n'
    'out=$(TASKPACK_DONE="$nonce" "$work/a.out") || exit 1\n'
    '[ "$(printf \'%s\\n\' "$out" | tail -n 1)" = "$nonce" ]\n'
)
_CPP_MAIN = """#include <cstdio>
#include <cstdlib>
int main() {
    int status = taskpack_tests_main();
    const char *done = std::getenv("TASKPACK_DONE");
    if (status == 0 && done) std::printf("\\n%s\\n", done);
    return status;
}
"""
_JAVA = (
    "{ cat /app/solution.java; echo; sed -E 's/public[[:space:]]+class[[:space:]]+Main\\b/"
    'class TaskpackTests/\' "$TEST_DIR/test.java"; echo; cat "$TEST_DIR/TaskpackMain.java"; }'
    ' > "$work/Main.java"\n'
    # a heap of its own size: the JVM's default reserves a quarter of the machine's memory
    'javac -J-Xmx512m -J-XX:+UseSerialGC -d "$work" "$work/Main.java" || exit 1\n'
    'out=$(TASKPACK_DONE="$nonce" java -Xmx512m -XX:+UseSerialGC -cp "$work" Main) || exit 1\n'
    '[ "$(printf \'%s\\n\' "$out" | tail -n 1)" = "$nonce" ]\n'
)
_JAVA_MAIN = """public class Main {
    public static void main(String[] args) throws Exception {
        TaskpackTests.main(args);
        System.out.println();
        System.out.println(System.getenv("TASKPACK_DONE"));
    }
}
"""
_JS = (
    '{ cat /app/solution.js; echo; cat "$TEST_DIR/test.js"; echo;'
    ' echo \'process.stdout.write(process.env.TASKPACK_DONE + "\\n");\'; } > "$work/test.js"\n'
    'out=$(cd "$work" && TASKPACK_DONE="$nonce" node test.js 2>&1) || exit 1\n'
    '[ "$out" = "$nonce" ]\n'
)
_GO = (
    'cp /app/solution.go "$work/main.go"\n'
    'cp "$TEST_DIR/test.go" "$work/main_test.go"\n'
    'cp "$TEST_DIR/taskpack_main_test.go" "$work/"\n'
    'cd "$work" && go mod init humanevalx >/dev/null 2>&1\n'
    "go mod tidy >/dev/null 2>&1\n"
    'out=$(TASKPACK_DONE="$nonce" go test -count=1 ./...) || exit 1\n'
    'printf \'%s\\n\' "$out" | grep -qx "$nonce"\n'
)
_GO_MAIN = """package main

import (
\t"fmt"
\t"os"
\t"testing"
)

func TestMain(m *testing.M) {
\tcode := m.Run()
\tif code == 0 {
\t\tfmt.Println(os.Getenv("TASKPACK_DONE"))
\t}
\tos.Exit(code)
}
"""
_RUST = (
    'mkdir -p "$work/src"\n'
    '{ cat /app/solution.rs; echo; cat "$TEST_DIR/test.rs"; } > "$work/src/main.rs"\n'
    'printf \'[package]\\nname = "humanevalx"\\nversion = "0.1.0"\\nedition = "2021"\\n\\n'
    '[dependencies]\\nrand = "0.8"\\nregex = "1"\\nmd5 = "0.7"\\n\' > "$work/Cargo.toml"\n'
    'cd "$work" && cargo test --offline\n'
)
LANGUAGES = {
    "cpp": Language("C++", "cpp", "gcc:13", _CPP, ("taskpack_main.cpp", _CPP_MAIN)),
    "java": Language(
        "Java", "java", "eclipse-temurin:17-jdk", _JAVA, ("TaskpackMain.java", _JAVA_MAIN)
    ),
    "javascript": Language("JavaScript", "js", "node:20-slim", _JS),
    "go": Language("Go", "go", "golang:1.22", _GO, ("taskpack_main_test.go", _GO_MAIN)),
    "rust": Language("Rust", "rs", "rust:1.79", _RUST),
}
_MAPPED = ("task_id", "prompt", "canonical_solution", "test")
_PY_DEF = re.compile(r"^def\s+(\w+)\s*\(", re.M)


def language(task_id: str) -> str:
    prefix = task_id.split("/", 1)[0].lower()
    prefix = {"js": "javascript", "c++": "cpp"}.get(prefix, prefix)
    if prefix != "python" and prefix not in LANGUAGES:
        known = ", ".join(["Python", *(lang.name for lang in LANGUAGES.values())])
        raise RowError(f"field 'task_id': {task_id!r} names no HumanEval-X language ({known})")
    return prefix


def _python(row: dict[str, Any], split: str, ordinal: int) -> dict[str, Any]:
    declaration = row.get("declaration") or need(row, "prompt")
    names = _PY_DEF.findall(declaration)
    if not names:
        raise RowError("field 'declaration': declares no function (def name(...))")
    return {
        "prompt": need(row, "prompt"),
        "solution": need(row, "canonical_solution"),
        "reward": {"kind": "unit_tests", "entry_point": names[-1], "test_file": "test.py"},
        "files": [{"path": "test.py", "role": "tests", "data": need(row, "test").encode()}],
    }


def _compiled(row: dict[str, Any], lang: Language) -> dict[str, Any]:
    prompt = need(row, "prompt")
    whole = prompt + need(row, "canonical_solution")
    if lang.ext == "go":  # a Go file of its own: the package clause, then the prompt's code
        whole = "package main\n\n" + whole
    test = need(row, "test")
    if lang.ext == "go":  # Go's test file starts with its package clause and imports
        test = need(row, "test_setup") + "\n" + test
    tests = [
        ("test." + lang.ext, test.encode(), 0o644),
        ("run_tests.sh", (_HEAD.format(name=lang.name, ext=lang.ext) + lang.run).encode(), 0o755),
    ]
    if lang.extra is not None:
        tests.append((lang.extra[0], lang.extra[1].encode(), 0o644))
    solve = (
        f"#!/bin/bash\n# The canonical solution, completing the prompt's code.\n"
        f"cat > /app/solution.{lang.ext} <<'TASKPACK_SOLUTION'\n{whole.rstrip()}\n"
        "TASKPACK_SOLUTION\n"
    )
    ask = (
        f"{prompt.rstrip()}\n\nComplete the {lang.name} code above and write all of it, "
        f"completed, to /app/solution.{lang.ext}."
    )
    return {
        "prompt": ask,
        "solution": whole,
        "reward": {"kind": "test_command", "command": 'bash "$TEST_DIR/run_tests.sh"'},
        "files": [
            *({"path": p, "role": "tests", "data": d, "mode": m} for p, d, m in tests),
            {"path": "solve.sh", "role": "solution", "data": solve.encode(), "mode": 0o755},
        ],
        "environment": {"image": lang.image, "workdir": "/app"},
    }


def to_task(row: dict[str, Any], split: str, ordinal: int) -> dict[str, Any]:
    task_id = need(row, "task_id")
    lang = language(task_id)
    task = _python(row, split, ordinal) if lang == "python" else _compiled(row, LANGUAGES[lang])
    return {
        "id": task_id,
        **task,
        "source": {"format": "humaneval-x", "split": split, "row": ordinal},
        "metadata": {k: v for k, v in row.items() if k not in _MAPPED},
    }


def read(uri: str, split: str, options: Options) -> Iterator[Record]:
    return map_rows(iter_table_rows(uri), lambda row, n: to_task(row, split, n))


FORMAT = Format(
    name="humaneval-x",
    summary="HumanEval-X in Python, C++, Java, JavaScript, Go and Rust (task ids CPP/0, ...).",
    read=read,
    default_split="test",  # a benchmark: its one split is `test`, as the catalog names it
)
