#!/usr/bin/env bash
# One entry point for newcomers:
#   ./run.sh            set up (first time only) and start the viewer on the shipped model
#   ./run.sh test       set up (first time only) and run the test suite (pytest)
#   ./run.sh setup      only set up (setup-test: also the browser the tests drive)
# Anything after the first word is passed on (to the viewer, or to pytest).
set -euo pipefail
cd "$(dirname "$0")"
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}

apt_install() {
    # System libraries the viewer and the headless tests need (OpenGL/EGL through Mesa, venv).
    local need=()
    "$PYTHON" -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
    ldconfig -p 2>/dev/null | grep -q 'libEGL.so.1' || need+=(libegl1)
    ldconfig -p 2>/dev/null | grep -q 'libGL.so.1' || need+=(libgl1)
    [ -e /usr/lib/x86_64-linux-gnu/dri/swrast_dri.so ] || [ -e /usr/lib/aarch64-linux-gnu/dri/swrast_dri.so ] \
        || need+=(libgl1-mesa-dri libegl-mesa0)
    [ ${#need[@]} -eq 0 ] && return 0
    echo "Installing system packages: ${need[*]}"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}"
}

browser_install() {
    # The A/B page's test drives a real browser: Debian's Chromium and its WebDriver (tests only).
    command -v chromium >/dev/null && command -v chromedriver >/dev/null && return 0
    echo "Installing system packages for the browser test: chromium chromium-driver"
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver
}

setup() {
    local stamp="$VENV/.installed"
    if [ -f "$stamp" ] && [ "$stamp" -nt pyproject.toml ]; then return 0; fi
    apt_install
    [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    # torch is pinned here: this release has a CPU wheel on our build machines; elsewhere pip picks the
    # platform's default build (CUDA on Linux x86_64), which the viewer uses when a GPU is present.
    "$VENV/bin/python" -m pip install -q "torch==2.13.0" -e ".[test]"
    touch "$stamp"
}

test_workers() {
    # Test files run in parallel processes (pytest-xdist), one file per process so a module's fixtures are
    # built once: as many processes as cores, at most 4 (each holds torch and a GL context). Nothing is
    # added when the arguments choose already (-n / -p no:xdist).
    case " $* " in *" -n"*|*" --numprocesses"*|*"no:xdist"*) return 0 ;; esac
    local cores
    cores=$(nproc 2>/dev/null || echo 1)
    [ "$cores" -gt 4 ] && cores=4
    [ "$cores" -gt 1 ] && echo "-n $cores --dist loadfile"
    return 0
}

cmd=${1:-viewer}
[ $# -gt 0 ] && shift
case "$cmd" in
    setup) setup ;;
    setup-test) setup; browser_install ;;
    test) setup; browser_install; exec "$VENV/bin/python" -m pytest $(test_workers "$@") "$@" ;;
    viewer) setup; exec "$VENV/bin/python" run_viewer.py "$@" ;;
    *) setup; exec "$VENV/bin/python" run_viewer.py "$cmd" "$@" ;;
esac
