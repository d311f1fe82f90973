#!/usr/bin/env bash
# Written by `course autograder`. Gradescope runs it once, as root, when the autograder
# is uploaded: it installs the course (the wheel beside it, built without the reference
# solutions) into $ROOT/venv.
#
# The course needs Python 3.11 or newer; Gradescope's Ubuntu 22.04 image has 3.10. The
# first Python found of $PYTHON, python3.13, python3.12, python3.11 and python3 that is
# new enough is used; if none is, Python 3.11 is installed from the deadsnakes PPA (the
# usual source of newer Pythons for Ubuntu 22.04; `uv python install 3.11` is another
# way: set PYTHON to the one it installs).
set -euo pipefail

ROOT="${AUTOGRADER_ROOT:-/autograder}"

python_ok() {  # is "$1" a Python 3.11 or newer?
    "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' >/dev/null 2>&1
}

find_python() {  # the path of the first Python new enough, or exit status 1
    local candidate found
    for candidate in ${PYTHON:+"$PYTHON"} python3.13 python3.12 python3.11 python3; do
        found="$(command -v "$candidate" 2>/dev/null)" || continue
        if python_ok "$found"; then
            echo "$found"
            return 0
        fi
    done
    return 1
}

real_python() {  # "$1" with every link resolved: the venv's python must not point through
    # a folder the sandbox hides (/tmp, /root, /home: a symlink farm, ~/.local/bin), or the
    # sandbox cannot start Python and grading goes on without it
    "$1" -c 'import os, sys; print(os.path.realpath(sys.executable))'
}

install_python() {  # Python 3.11 and its venv module from the deadsnakes PPA (Ubuntu)
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends software-properties-common gpg-agent
    add-apt-repository -y ppa:deadsnakes/ppa
    apt-get update
    apt-get install -y --no-install-recommends python3.11 python3.11-venv
}

main() {
    local python
    if ! python="$(find_python)"; then
        echo "setup.sh: no Python 3.11 or newer here; installing 3.11 (deadsnakes PPA)"
        install_python
        python="$(find_python)" || {
            echo "setup.sh: still no Python 3.11 or newer; set PYTHON to one" >&2
            exit 1
        }
    fi
    python="$(real_python "$python")"
    echo "setup.sh: $python, $("$python" --version 2>&1)"
    "$python" -m venv "$ROOT/venv"
    "$ROOT/venv/bin/python" -m pip install --quiet --upgrade pip
    "$ROOT/venv/bin/python" -m pip install --quiet "$ROOT"/source/scaling_course-*.whl
    # the installation must hold no reference solution (its code runs the students' code)
    "$ROOT/venv/bin/python" -I -m course.commands.autograder --check
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    main "$@"
fi
