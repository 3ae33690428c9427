#!/usr/bin/env bash
# Creates .venv-infinity for the Infinity peer (bench/peers/start_peer.sh infinity) from
# requirements/bench-infinity.txt, on top of .venv-heavy (tools/setup_heavy_venv.sh): a .pth
# file puts the heavy virtualenv's site-packages after .venv-infinity's own, so torch (several
# GB with PyPI's CUDA libraries) is not installed a second time. About 330 MB. Never run by CI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
[[ -x .venv-heavy/bin/python ]] || { echo "setup_infinity_venv: make .venv-heavy first (tools/setup_heavy_venv.sh)" >&2; exit 1; }
PYTHON=/usr/bin/python3
[[ -x "$PYTHON" ]] || PYTHON=$(command -v python3)
purelib() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])'; }
if [[ $(version "$PYTHON") != $(version .venv-heavy/bin/python) ]]; then
  echo "setup_infinity_venv: $PYTHON is not the Python of .venv-heavy" >&2
  exit 1
fi
[[ -x .venv-infinity/bin/python ]] || "$PYTHON" -m venv .venv-infinity
readlink -f "$(purelib .venv-heavy/bin/python)" > "$(purelib .venv-infinity/bin/python)/zz-venv-heavy.pth"
.venv-infinity/bin/python -m pip install --disable-pip-version-check -q -r requirements/bench-infinity.txt
.venv-infinity/bin/python -m pip check
echo "setup_infinity_venv: ready; run: bench/peers/start_peer.sh infinity MODEL_DIR PORT"
