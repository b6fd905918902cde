#!/usr/bin/env bash
# Sets up .venv (when setup.py changed since the last set-up), writes the
# project's synthetic default corpus and generates a dataset from it
# into ./out/synthetic/versions/<version>. Extra arguments go to pipelines.generate, e.g.
#   ./run_local.sh --decoys mcic --direct_num_workers 2
set -euo pipefail
cd "$(dirname "$0")"

python=${PYTHON:-python3}
stamp=".venv/.installed-$(sha256sum setup.py | cut -c1-16)"
if [ ! -f "$stamp" ]; then
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -e '.[train,test]'
  rm -f .venv/.installed-*
  touch "$stamp"
fi

.venv/bin/python -m pipelines.make_corpus --num_images 4000 --seed 0 \
  --output out/corpus/captions_synthetic.json
.venv/bin/python -m pipelines.generate \
  --input out/corpus/captions_synthetic.json --output out/synthetic \
  --n_dev 500 --n_test 500 "$@"
