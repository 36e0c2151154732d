#!/usr/bin/env bash
# make run: serve the real checkpoint if present, else the bundled tiny fixture model.
set -euo pipefail
bin=$1 model=${2:-} port=${3:-8080}
if [ -n "$model" ]; then
  exec "$bin" serve --model "$model" --backend fast --port "$port"
fi
if "$bin" inspect >/dev/null 2>&1; then
  exec "$bin" serve --backend fast --port "$port"
fi
echo "lily: the real checkpoint (mlx-community/Qwen3.6-35B-A3B-4bit) was not found in the Hugging Face cache;" >&2
echo "lily: serving the bundled tiny fixture model instead (random weights: its answers are noise)." >&2
exec "$bin" serve --model fixtures/models/tiny-a/mlx --backend fast --port "$port"
