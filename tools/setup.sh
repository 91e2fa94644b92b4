#!/usr/bin/env bash
# Installs what building and testing minirt needs on Debian, skipping what is
# already there. Sourced by run-demo.sh and run-tests.sh.
#   tools/setup.sh            Debian packages only
#   tools/setup.sh --venv     also the Python tooling venv (.venv: onnx, onnxruntime, numpy,
#                             onnxconverter-common)
#   tools/setup.sh --triton   also .venv-triton: a real Triton server (nvidia-pytriton), its
#                             clients and onnxruntime, for tests/triton/ and bench/triton_load.py
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(cmake g++ make libeigen3-dev libprotobuf-dev protobuf-compiler libgtest-dev libgmock-dev
      libbenchmark-dev libonnx-testdata python3 python3-venv clang libclang-rt-14-dev clang-format pkg-config)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ "${1:-}" = "--venv" ]; then
  # Test and benchmark tooling only; the library and the CLI never use Python.
  if [ ! -x .venv/bin/python ] ||
     ! .venv/bin/python -c "import onnx, onnxruntime, numpy, onnxconverter_common" 2>/dev/null; then
    # (An existing .venv that lacks a package gets it added.)
    echo "setup: creating .venv with onnx, onnxruntime, numpy, onnxconverter-common"
    [ -x .venv/bin/python ] || python3 -m venv .venv
    .venv/bin/pip install -q --disable-pip-version-check -r tools/requirements.txt
  fi
  # ONNX's node tests up to opset 25 (1,765 folders): onnx 1.22.0 is the last
  # wheel that ships them. Only its test data is kept, in .venv/onnx-1.22.0-node/node
  # (ctest conformance.onnx122_node); the venv's own onnx stays as pinned.
  if [ ! -d .venv/onnx-1.22.0-node/node ]; then
    echo "setup: fetching ONNX 1.22.0's node tests into .venv/onnx-1.22.0-node"
    tmp=$(mktemp -d)
    .venv/bin/pip download -q --disable-pip-version-check --no-deps --only-binary=:all: onnx==1.22.0 -d "$tmp"
    .venv/bin/python - "$tmp" .venv/onnx-1.22.0-node <<'PY'
import glob, os, shutil, sys, zipfile
tmp, dest = sys.argv[1], sys.argv[2]
prefix = "onnx/backend/test/data/node/"
(wheel,) = glob.glob(os.path.join(tmp, "onnx-1.22.0-*.whl"))
part = dest + ".part"
shutil.rmtree(part, ignore_errors=True)
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            out = os.path.join(part, "node", name[len(prefix):])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with z.open(name) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
shutil.rmtree(dest, ignore_errors=True)
os.rename(part, dest)
print(f"setup: {len(os.listdir(os.path.join(dest, 'node')))} node tests in {dest}/node")
PY
    rm -rf "$tmp"
  fi
fi

if [ "${1:-}" = "--triton" ]; then
  # Test and benchmark tooling only: the backend never uses Python.
  if [ ! -x .venv-triton/bin/python ] || ! .venv-triton/bin/python -c "import pytriton, tritonclient.http, tritonclient.grpc, onnxruntime" 2>/dev/null; then
    echo "setup: creating .venv-triton with nvidia-pytriton (the Triton server), tritonclient, onnxruntime"
    python3 -m venv .venv-triton
    .venv-triton/bin/pip install -q --disable-pip-version-check -r tools/requirements-triton.txt
  fi
fi
