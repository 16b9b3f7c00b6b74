#!/bin/bash
# Run jitvm on an emulated arm64 host: a Debian arm64 root under qemu-user-static (binfmt_misc).
# Usage (as root): bench/aarch64.sh setup | test [-c CPU] [pytest args] | fuzz [-c CPU] N SEED
#                  | cpu [-c CPU] | run [-c CPU] -- CMD... | clean
# See README, "arm64, emulated".
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CHECKOUT=$(cd "$HERE/.." && pwd)
STATE=${JITVM_AARCH64_DIR:-$HERE/.aarch64}  # the root and its caches (git-ignored)
ROOT="$STATE/root"
SITE=/opt/jitvm/site            # inside the root: arm64 wheels
SUITE=bookworm
HOST_PY=${HOST_PY:-$(command -v python3)}
# Debian packages the root needs: CPython and what the tests' subprocesses start.
DEB_PACKAGES=python3,libpython3.11-stdlib,bash,coreutils,libstdc++6,libgcc-s1
# The tests the emulated host runs by default (`test` without pytest arguments).
DEFAULT_TESTS=(
    tests/test_interp_vmasm.py
    tests/test_jit_vmasm.py
    tests/test_corpus.py
    tests/test_hal_corpus.py
    tests/test_interp_random.py
    tests/test_jit_vs_interp.py
    tests/test_jit_threads.py
    tests/test_concurrency.py
    tests/test_hal_native.py
    tests/test_api_plan.py
    tests/test_verify_features.py
    tests/test_hwcaps.py
    tests/test_nan_rules.py
    tests/test_aarch64_native.py
)

die() { echo "aarch64.sh: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "run as root (chroot, binfmt_misc, mounts)"; }

host_packages() {
    local missing=()
    command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
    [ -e /usr/bin/qemu-aarch64-static ] || missing+=(qemu-user-static)
    command -v update-binfmts >/dev/null || missing+=(binfmt-support)
    if [ ${#missing[@]} -gt 0 ]; then
        apt-get install -y "${missing[@]}" || { apt-get update && apt-get install -y "${missing[@]}"; }
    fi
}

binfmt() {
    [ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
    [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64
    grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 || die "binfmt_misc qemu-aarch64 is not enabled"
}

host_version() { "$HOST_PY" -c "import importlib.metadata as m; print(m.version('$1'))"; }

wheels() {
    # Same versions as the host's, so both sides agree on what they test.
    local pkgs=() p plat=()
    for p in llvmlite numpy pytest hypothesis ml_dtypes; do pkgs+=("$p==$(host_version "$p")"); done
    pkgs+=(iree-base-runtime==3.13.0)
    for v in $(seq 36 -1 17); do plat+=(--platform "manylinux_2_${v}_aarch64"); done
    plat+=(--platform manylinux2014_aarch64)
    "$HOST_PY" -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
        --upgrade --target "$ROOT$SITE.new" "${plat[@]}" --python-version 3.11 --implementation cp \
        --abi cp311 --only-binary=:all: "${pkgs[@]}"
    rm -rf "$ROOT$SITE"
    mv "$ROOT$SITE.new" "$ROOT$SITE"
    printf '%s\n' "${pkgs[@]}" > "$ROOT$SITE/.versions"
}

setup() {
    need_root
    host_packages
    binfmt
    if [ ! -x "$ROOT/usr/bin/python3" ]; then
        rm -rf "$ROOT.new"; mkdir -p "$STATE"
        # extract: packages are unpacked on the host, no maintainer script runs under emulation
        mmdebstrap --variant=extract --architectures=arm64 --include="$DEB_PACKAGES" \
            "$SUITE" "$ROOT.new"
        mkdir -p "$ROOT.new/tmp" "$ROOT.new/proc" "$ROOT.new/dev" "$ROOT.new/sys" "$ROOT.new/opt/jitvm"
        chmod 1777 "$ROOT.new/tmp"
        mv "$ROOT.new" "$ROOT"
    fi
    [ -e "$ROOT$SITE/.versions" ] || wheels
    in_root "" python3 -c "import platform, llvmlite, numpy, iree.runtime; print(platform.machine(), 'python', platform.python_version(), 'ok')"
}

# in_root CPU CMD...: run CMD in the arm64 root (CPU: a qemu -cpu model, "" for qemu's default),
# in a mount namespace of its own so concurrent runs and their mounts stay apart.
in_root() {
    local cpu=$1; shift
    binfmt
    local envs=(PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 PYTHONPATH="${RUN_PYTHONPATH:-}$SITE"
                PYTHONDONTWRITEBYTECODE=1)
    [ -n "$cpu" ] && envs+=(QEMU_CPU="$cpu")
    local v
    for v in $(compgen -e); do
        case $v in JITVM_*|HYPOTHESIS_*) envs+=("$v=${!v}");; esac
    done
    unshare --mount --propagation private -- /bin/bash -c '
        root=$1; shift
        mount --rbind /proc "$root/proc"
        mount --rbind /dev "$root/dev"
        mount --rbind /sys "$root/sys"
        exec chroot "$root" /usr/bin/env -i "$@"
    ' in_root "$ROOT" "${envs[@]}" "$@"
}

# checkout: copies the checkout (tracked and untracked files, not ignored ones) into a folder
# of the root named by its content, so concurrent runs of different states keep their files.
# Prints the folder's path inside the root.
checkout() {
    "$HOST_PY" - "$CHECKOUT" "$ROOT" <<'PY'
import hashlib, os, shutil, subprocess, sys
checkout, root = sys.argv[1:]
names = subprocess.run(["git", "-C", checkout, "ls-files", "-co", "--exclude-standard", "-z"],
                       check=True, capture_output=True).stdout.decode().split("\0")
names = sorted(n for n in names if n and os.path.isfile(os.path.join(checkout, n)))
h = hashlib.sha256()
for n in names:
    h.update(n.encode() + b"\0" + open(os.path.join(checkout, n), "rb").read() + b"\0")
inner = "/opt/jitvm/src/" + h.hexdigest()[:16]
dest = root + inner
if not os.path.isdir(dest):
    tmp = dest + ".tmp%d" % os.getpid()
    for n in names:
        os.makedirs(os.path.dirname(os.path.join(tmp, n)), exist_ok=True)
        shutil.copy2(os.path.join(checkout, n), os.path.join(tmp, n))
    try:
        os.rename(tmp, dest)
    except OSError:  # a concurrent run copied the same content first
        shutil.rmtree(tmp)
print(inner)
PY
}

# corpus: compiles the test corpus on the host into the root's corpus cache (VMVX bytecode does
# not depend on the target; the llvm-cpu programs are built for arm64, the triple the root's
# own corpus build names; the cache records the tool versions, so the root needs no compiler).
CORPUS_CACHE=/opt/jitvm/corpus-cache
corpus() {
    (cd "$CHECKOUT" && JITVM_CORPUS_CACHE="$ROOT$CORPUS_CACHE" JITVM_CORPUS_LLVM_TRIPLE=aarch64-unknown-linux-gnu \
        "$HOST_PY" -c \
        "from tests.corpus import build_corpus; print(len(build_corpus()), 'corpus programs')")
}

# CPU option: -c MODEL (a qemu -cpu model: cortex-a57, neoverse-n1, a64fx, max, ...)
CPU=
cpu_option() { if [ "${1:-}" = -c ]; then CPU=$2; return 0; fi; return 1; }

prepare() {
    need_root
    [ -e "$ROOT$SITE/.versions" ] || setup >&2
    SRC=$(checkout)
    RUN_PYTHONPATH="$SRC:"
}

in_src() {  # in_src CMD...: CMD in the copied checkout, inside the root
    in_root "$CPU" /bin/bash -c 'cd "$1" && shift && exec "$@"' in_src "$SRC" \
        env JITVM_CORPUS_CACHE="$CORPUS_CACHE" "$@"
}

cmd=${1:-}; shift || true
case $cmd in
    setup) setup ;;
    test)
        if cpu_option "$@"; then shift 2; fi
        prepare; corpus
        # no test named (only options, or nothing): the default list
        named=0; for a in "$@"; do case $a in -*) ;; *) named=1;; esac; done
        # (less a compile-time bound meant for native speed, which emulation under load misses)
        if [ $named = 0 ]; then set -- "$@" "${DEFAULT_TESTS[@]}" --deselect \
            tests/test_jit_vmasm.py::test_declared_ref_registers_beyond_those_used_compile_quickly; fi
        in_src python3 -m pytest -q -p no:cacheprovider "$@" ;;
    fuzz)
        if cpu_option "$@"; then shift 2; fi
        [ $# -eq 2 ] || die "usage: fuzz [-c CPU] PROGRAMS SEED"
        prepare
        # PROGRAMS in all: spread evenly over the generator's kinds
        in_src python3 -c 'import sys
from jitvm.fuzz.campaign import main
from jitvm.fuzz.generators.program import KINDS
n, seed = int(sys.argv[1]), sys.argv[2]
sys.exit(main(["--kind", "all", "--programs", str(-(-n // len(KINDS))), "--seed", seed, "--save", "/tmp/fuzz-mismatches"]))' "$@" ;;
    cpu)
        if cpu_option "$@"; then shift 2; fi
        prepare
        # JSON: the kernel's hwcaps, the JIT's target, the HAL's hal.cpu answers, IREE's own
        # iree-cpuinfo and the VM features (JITVM_DISABLE_FEATURES applies)
        in_src python3 -c 'import json, subprocess
from jitvm.runtime.native import hwcaps, target
from jitvm.runtime.modules.hal import library
from jitvm.verify import features
t = target.host()
keys = [name for arch, _, _, name in library.CPU_FEATURE_BITS if arch == "aarch64"]
iree = subprocess.run(["/opt/jitvm/site/iree/_runtime_libs/iree-cpuinfo"], capture_output=True, text=True).stdout.split()
print(json.dumps({"hwcaps": [hex(w) for w in hwcaps.read()], "target": {"triple": t.triple, "cpu": t.cpu, "features": t.features},
                  "hal.cpu": {k: library.cpu_feature_value(k) for k in keys},
                  "iree-cpuinfo": {k: int(v) for k, v in zip(iree[::2], iree[1::2])},
                  "vm_features": features.format_features(features.available_features())}, indent=1))' ;;
    run)
        if cpu_option "$@"; then shift 2; fi
        [ "${1:-}" = -- ] && shift
        prepare
        in_src "$@" ;;
    clean) rm -rf "$STATE" ;;
    *) sed -n '2,5p' "$0"; exit 2 ;;
esac
