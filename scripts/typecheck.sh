#!/usr/bin/env bash
# The type checks CI runs: the package strictly ([tool.mypy] in pyproject.toml), then the tests'
# bodies: check_untyped_defs, with strict's flags about annotations and exports off (a test needs
# none), and the package only followed there (it was checked strictly just before).
set -euo pipefail
cd "$(dirname "$0")/.."
mypy "$@"
mypy "$@" --follow-imports=silent --check-untyped-defs --allow-untyped-defs --allow-incomplete-defs \
  --allow-untyped-calls --allow-untyped-decorators --allow-any-generics --allow-subclassing-any \
  --implicit-reexport --no-warn-return-any --no-strict-equality tests
