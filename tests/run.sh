#!/usr/bin/env bash
# The whole test suite on a fresh machine, set up by itself: the Debian packages it needs
# when they are missing (saying so), a virtual environment with the test extras, the linters
# and the layers check, then pytest. Arguments go to pytest: `bash tests/run.sh -m "not slow"`
# is the fast lane. `.ci/run` runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "taskpack tests: about 40 minutes on 2 cores and 7 GB of disk (1.5 GB in .venv, 5 GB of" \
    "framework venvs in ~/.cache/taskpack/framework-venvs); -m 'not slow': about 5 minutes" >&2

# bubblewrap: `taskpack check` runs exported tasks in its sandbox (tests/test_check.py);
# chromium and its driver: a real headless browser looks at `taskpack serve`'s pages
# (tests/test_serve.py); curl: the README's server examples.
missing=()
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing Debian packages the tests need: ${missing[*]}" >&2
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || {
            echo "not root and no sudo: run 'apt-get install ${missing[*]}' as root" >&2
            exit 1
        }
        sudo="sudo"
    fi
    echo "apt-get update (about 1 minute)..." >&2
    $sudo apt-get update -qq
    echo "apt-get install ${missing[*]} (about 2 minutes)..." >&2
    $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The conformance tests run Harbor and OpenEnv on Python 3.12 and NeMo Gym on 3.13: found in
# pyenv's versions (or as python3.12 / python3.13 on PATH), else the tests that need them fail.
for version in 3.12 3.13; do
    root=$( (command -v pyenv >/dev/null && pyenv root) || echo "${PYENV_ROOT:-$HOME/.pyenv}")
    if ! ls -d "$root"/versions/"$version".*/bin/python3 >/dev/null 2>&1 &&
        ! command -v "python$version" >/dev/null 2>&1; then
        echo "no Python $version here (pyenv install $version, or python$version on PATH):" \
            "the framework tests that run on it will fail" >&2
    fi
done

python3 -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
    echo "taskpack needs Python 3.10 or later; python3 is $(python3 -V)" >&2
    exit 1
}
echo "making .venv and installing taskpack with its test extras (about 5 minutes the first" \
    "time; pip's own lines follow)..." >&2
python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q --upgrade pip
# pip's "Collecting ..." lines as they come (minutes of them), all it says kept in a log
set +e
python -m pip install --progress-bar off -e '.[test]' 2>&1 | tee .venv/pip-install.log |
    grep --line-buffered -E '^(Collecting|Successfully installed)' >&2
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
    echo "pip install failed; its last lines (all of them: .venv/pip-install.log):" >&2
    tail -20 .venv/pip-install.log >&2
    exit "$status"
fi
echo "ruff, mypy, lint-imports, then pytest..." >&2
ruff check .
ruff format --check .
mypy
lint-imports
python -m pytest "$@"
