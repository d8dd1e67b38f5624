#!/usr/bin/env bash
# Build the docker sandbox's image offline, from this machine's own interpreter: no registry needed.
#
#   scripts/docker_image.sh [--no-languages] [PYTHON] [TAG]
#
# PYTHON (default python3) is the interpreter whose version the image carries: the sandbox sends the
# harness as bytecode, so the image's Python must have the caller's minor version. TAG defaults to
# python:X.Y-slim, the name the docker backend looks for (or set sandbox.docker_image to another).
#
# The image holds the interpreter at /usr/local/bin/python3, its standard library without
# site-packages or the test suite, the shared libraries `ldd` names for it and its extension modules
# (at their own paths, plus an ld.so.cache), a small userland (sh, coreutils, grep, sed, awk: what
# programs under test call), a passwd with nobody, and a world-writable /tmp. No package manager.
# It is put together in a folder and loaded with `docker import`. Where a registry is reachable,
# `docker pull python:X.Y-slim` gives an equivalent image (without the toolchains below).
#
# The answer languages' toolchains (spade_llm.languages.TOOLCHAINS: g++, the JDK, Node, Go, rustc) go in
# too, each one whose commands are installed here: the files of the Debian packages that provide it and
# of the installed packages they depend on, at their own paths (scripts/docker_image_languages.py says
# which), and each is then checked by compiling and running a hello-world in the image as the sandbox
# runs it. SPADE_IMAGE_LANGUAGES=cpp,go picks some; --no-languages (or SPADE_IMAGE_LANGUAGES=none)
# leaves them all out, for a small image that runs Python answers only.
set -euo pipefail
trap 'echo "docker_image.sh: line $LINENO failed (exit $?): $BASH_COMMAND" >&2' ERR

LANGUAGES=${SPADE_IMAGE_LANGUAGES:-}
case "${1:-}" in
-h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
    exit 0
    ;;
--no-languages)
    LANGUAGES=none
    shift
    ;;
esac

PYTHON=${1:-python3}
command -v docker >/dev/null || { echo "docker_image.sh: the docker CLI is not installed" >&2; exit 1; }
docker info >/dev/null 2>&1 || { echo "docker_image.sh: no Docker engine answers (is dockerd running?)" >&2; exit 1; }

# where this interpreter's pieces are: the real binary behind a venv, its stdlib, its extension modules
read -r REAL VERSION STDLIB DYNLOAD LIBDIR < <("$PYTHON" -c '
import os, sys, sysconfig
real = os.path.realpath(getattr(sys, "_base_executable", "") or sys.executable)
paths = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
stdlib = paths["stdlib"]
dynload = sysconfig.get_config_var("DESTSHARED") or os.path.join(stdlib, "lib-dynload")
print(real, "%d.%d" % sys.version_info[:2], stdlib, dynload, sysconfig.get_config_var("LIBDIR") or "-")
')
TAG=${2:-python:$VERSION-slim}

STARTED=$SECONDS
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(mktemp -d)
LIST=$(mktemp)
trap 'rm -rf "$ROOT" "$LIST"' EXIT
DEST=$ROOT/usr/local
mkdir -p "$DEST/bin" "$DEST/lib/python$VERSION" "$ROOT/etc" "$ROOT/tmp" "$ROOT/usr/bin" "$ROOT/usr/lib"
chmod 1777 "$ROOT/tmp"
# /bin is usr/bin as in the python images; /lib, /lib64 and /sbin too where this machine's /usr is merged,
# so a library reached by either path is one file, and the packages copied below land where they do here
ln -s usr/bin "$ROOT/bin"
for dir in lib lib64 sbin; do
  if [ -L "/$dir" ]; then
    mkdir -p "$ROOT/$(readlink -f "/$dir")"
    ln -s "$(readlink "/$dir")" "$ROOT/$dir"
  fi
done

cp -L "$REAL" "$DEST/bin/python$VERSION"
ln -s "python$VERSION" "$DEST/bin/python3"
ln -s python3 "$DEST/bin/python"

# the standard library, without what no sandboxed program needs (installed packages, the test suite, GUIs)
tar -C "$STDLIB" -cf - \
  --exclude=./site-packages --exclude=./dist-packages --exclude=./test --exclude=./idlelib \
  --exclude=./tkinter --exclude=./turtledemo --exclude=./ensurepip --exclude='./lib2to3/tests' . |
  tar -C "$DEST/lib/python$VERSION" -xf -
mkdir -p "$DEST/lib/python$VERSION/site-packages"
if [ "$DYNLOAD" != "$STDLIB/lib-dynload" ] && [ -d "$DYNLOAD" ]; then
  mkdir -p "$DEST/lib/python$VERSION/lib-dynload"
  cp -a "$DYNLOAD/." "$DEST/lib/python$VERSION/lib-dynload/"
fi

# every shared library the interpreter and its extension modules load, at its own path; the ones
# that live beside the interpreter (libpython) go to /usr/local/lib, which the image's ld.so.cache names
copy_lib() {
  local lib=$1
  [ -e "$ROOT$lib" ] && return 0
  if [ "$LIBDIR" != "-" ] && [[ $lib == "$LIBDIR"/* ]]; then
    cp -L "$lib" "$DEST/lib/"
  else
    mkdir -p "$ROOT$(dirname "$lib")"
    cp -L "$lib" "$ROOT$lib"
  fi
}
for object in "$REAL" "$DEST"/lib/python"$VERSION"/lib-dynload/*.so; do
  while read -r lib; do
    copy_lib "$lib"
  done < <(ldd "$object" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
done
# a small userland, as python:X.Y-slim has one: programs under test start `sleep`, `sh -c`, `ls`...
TOOLS="sh bash sleep cat echo ls true false env head tail wc sort uniq cut tr mkdir rmdir rm cp mv ln grep
  sed awk find xargs id uname date printf test expr seq tee touch chmod dirname basename pwd readlink stat
  kill timeout nproc yes"
for tool in $TOOLS; do
  found=$(command -v "$tool" 2>/dev/null) || continue
  [[ $found == /* ]] || continue # a shell builtin with no binary
  cp -L "$found" "$ROOT/usr/bin/$tool"
  while read -r lib; do
    copy_lib "$lib"
  done < <(ldd "$found" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
done
# glibc loads libgcc_s itself when a thread is cancelled or unwinds
# (awk reads all of ldconfig's output: quitting at the first match would SIGPIPE ldconfig, and under
# pipefail that ends this script, silently, whenever the pipe still held some of it)
gcc_s=$(ldconfig -p 2>/dev/null | awk '/libgcc_s\.so\.1 .*=>/ && !found {print $NF; found = 1}')
[ -n "$gcc_s" ] && copy_lib "$gcc_s"

# the answer languages' toolchains: their packages' files as they are here (links kept), hard-linked
# (writing and then deleting a 1.3 GB copy costs a minute of a busy disk); copied where /tmp is another
# filesystem or links are refused. From here on, a file of ROOT may be one of this machine's: ROOT is
# only read, and a file written into it is removed first (never written through a link).
INCLUDED=
if [ "$LANGUAGES" != none ]; then
  INCLUDED=$("$PYTHON" -S "$HERE/docker_image_languages.py" files "$LIST" "$LANGUAGES")
  if ! (cd / && xargs -d '\n' -a "$LIST" cp -P -l --parents --remove-destination -t "$ROOT") 2>/dev/null; then
    # the links made so far go first: unlinking one while tar reads its file would change that file's ctime
    (cd "$ROOT" && xargs -d '\n' -a "$LIST" rm -f)
    tar -C / --no-recursion -cf - -T "$LIST" | tar -C "$ROOT" --keep-directory-symlink --unlink-first -xf -
  fi
fi
put() { rm -f "$1" && cat >"$1"; }
# the packages' own library folders (/etc/ld.so.conf.d) as well as the interpreter's
printf '/usr/local/lib\ninclude /etc/ld.so.conf.d/*.conf\n' | put "$ROOT/etc/ld.so.conf"
rm -f "$ROOT/etc/ld.so.cache"
ldconfig -r "$ROOT"

printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' |
  put "$ROOT/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' | put "$ROOT/etc/group"

tar -C "$ROOT" --numeric-owner --owner=0 --group=0 -cf - . |
  docker import --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' --change 'ENV LANG=C.UTF-8' \
    --change 'CMD ["python3"]' - "$TAG" >/dev/null

# the image must run Python as nobody, with no network, the way the sandbox runs it
got=$(docker run --rm --network none --user 65534:65534 "$TAG" python3 -s -S -c \
  'import sys, _ctypes, select, resource, marshal; print("%d.%d" % sys.version_info[:2])')
if [ "$got" != "$VERSION" ]; then
  echo "docker_image.sh: the image runs Python $got, not $VERSION" >&2
  exit 1
fi
if [ -n "$INCLUDED" ]; then
  "$PYTHON" -S "$HERE/docker_image_languages.py" verify "$TAG" "$INCLUDED" ||
    { echo "docker_image.sh: a toolchain in $TAG does not work (above)" >&2; exit 1; }
fi
echo "$TAG ($(docker image inspect --format '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1 / 1e6}'), Python $VERSION," \
  "languages: python${INCLUDED:+,$INCLUDED}; built in $((SECONDS - STARTED)) s)"
