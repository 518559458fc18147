#!/usr/bin/env bash
# compile -> inspect -> run, from the command line. Usage: examples/quickstart.sh [WORKDIR]
set -euo pipefail
work=${1:-$(mktemp -d)}
hetcc zoo export mobilenet_v2 -o "$work/mobilenet_v2.onnx"
# least energy on the HiKey 970 model within 40 ms
hetcc compile "$work/mobilenet_v2.onnx" --target hikey970 --objective energy --deadline 40ms -o "$work/build"
hetcc inspect "$work/build"
hetcc run "$work/build" --verify --repeat 3
# three plans in one artifact, chosen at run time by name
hetcc compile "$work/mobilenet_v2.onnx" --target hikey970 --variants single:big,single:gpu,dp -o "$work/build-variants"
hetcc run "$work/build-variants" --variant single:gpu --verify
# the same model on this machine, costs measured with onnxruntime
hetcc compile "$work/mobilenet_v2.onnx" --target host -o "$work/build-host"
hetcc run "$work/build-host" --verify
