#!/usr/bin/env bash
# The optional extras install together in either order: [env] then [verifiers], and the reverse, each in a
# clean venv, and then `spade serve-env` answers a reset through openenv-core's client (issue 37: with
# verifiers 0.4 installed second, serve-env died on a FastMCP ImportError while `pip check` was clean).
#   scripts/check_extras.sh [WORKDIR]        (default: a temporary folder, removed at the end)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d)}"
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"

check() {  # $1 name, $2 first extra, $3 second extra
  local venv="$work/venv-$1" src="$work/src-$1"
  rm -rf "$venv" "$src"
  mkdir -p "$src"  # the checkout's files, not its venvs, runs or git history
  tar -C "$root" --exclude='./.venv*' --exclude=./runs --exclude=./build --exclude=./.git --exclude=__pycache__ -cf - . | tar -C "$src" -xf -
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q -U pip >/dev/null
  # --no-compile: two thirds of an install's CPU was compiling every module of every package (52 s
  # against 20 s for [env]), for one server that imports a few of them
  "$venv/bin/pip" install -q --no-compile "$src[$2]"
  "$venv/bin/pip" install -q --no-compile "$src[$3]"
  "$venv/bin/pip" check
  "$venv/bin/python" - "$work/run-$1" <<'PY'
import os, re, subprocess, sys, time
out = sys.argv[1]
bin_dir = os.path.dirname(sys.executable)
server = subprocess.Popen(
    [os.path.join(bin_dir, "spade"), "serve-env", "--model", "fake/default", "--tasks-per-epoch", "1",
     "--samples-per-task", "1", "--port", "0", "--out", out],
    stderr=subprocess.PIPE, text=True,
)
try:
    url = None
    deadline = time.monotonic() + 120
    while url is None and time.monotonic() < deadline:
        line = server.stderr.readline()
        if not line:
            break
        found = re.search(r"listening on (http://\S+)", line)
        url = found.group(1) if found else None
    assert url, "serve-env did not listen"
    from openenv.core import GenericEnvClient
    with GenericEnvClient(base_url=url).sync() as env:
        result = env.reset()
    assert result.observation["task_id"] and not result.done, result
    print(f"serve-env answered a reset: {result.observation['task_id']}")
finally:
    server.terminate()
    server.wait(timeout=60)
PY
  echo "extras $2 then $3: ok"
}

check env-first env verifiers
check verifiers-first verifiers env
