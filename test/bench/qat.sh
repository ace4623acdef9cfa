#!/usr/bin/env bash
# Quantization-aware fine-tuning of one model's int8 variant, end to end (issue 30; docs/models.md):
# post-training int8 as `crisp models quantize` makes it → fine-tuned in PyTorch (CPU, 2 threads) against
# the fp32 model on the bundled calibration crops → QDQ graph rebuilt by the TypeScript quantizer → judged
# on Set5 + Set14 ×4 through onnxruntime. Deterministic inputs (fixed crops, seeded sampling).
#
#   bash test/bench/qat.sh 4xLSDIRCompactC3.onnx [qat.py options, e.g. --steps 600 --minutes 38]
#
# Work files go to ${QAT_DIR:-/tmp/crisp-qat}/<model>; the fine-tuned graph is <that>/qat.int8.onnx.
# PYTHON must have torch (default /usr/bin/python3).
set -euo pipefail
cd "$(dirname "$0")/../.."
model=$1
shift
dir=${QAT_DIR:-/tmp/crisp-qat}/$(basename "${model%.onnx}")
node --import tsx test/bench/qat.ts dump "$model" "$dir"
"${PYTHON:-/usr/bin/python3}" test/bench/qat.py "$dir" "$@"
node --import tsx test/bench/qat.ts build "$model" "$dir" "$dir/trained.json" "$dir/qat.int8.onnx"
node --import tsx test/bench/qat.ts eval "$model" "$dir/ptq.onnx"
node --import tsx test/bench/qat.ts eval "$model" "$dir/qat.int8.onnx"
