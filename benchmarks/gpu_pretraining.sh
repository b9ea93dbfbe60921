#!/usr/bin/env bash
# Pretraining and the fine-tuning ablation on a lent GPU, in one call (a lent GPU is short).
# Expects, in the repository: .whl/ (datasets, dill, multiprocess, conllu, evaluate wheels),
# .gpu_data/ud/UD_English-GUM/ (train, dev), .gpu_data/text/*.txt.gz and .gpu_data/vectors/
# (scripts/train_word_vectors.py's folder; float16 travels, the tagger reads it as float32).
# Writes under $OUT (the device tool's folder: at most 8 files) the logs and metrics in two
# archives and the language model in pieces of 15 MB (`cat lm-best.tar.* | tar xf -`). Every
# run stops by DEADLINE seconds after the start, so the archives are written in time.
#
# The language model ends at K = N_T = LM_K (8): fine-tuning refines it to 2 * LM_K late,
# inside the cool-down, the schedule that keeps the treebank recipe compressible. The taggers
# that need no language model train beside it; the others start when it is saved.
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
CODE=$(realpath "${CODE:-.}"); DATA=$(realpath .gpu_data)
export PYTHONPATH=/tmp/site:$CODE UD_DIR=$DATA/ud PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
OUT=${OUT:-/tmp/out}; LOGS=/tmp/logs; mkdir -p "$OUT" "$LOGS"; cd "$CODE"
nvidia-smi -L
LM_STEPS=${LM_STEPS:-6000}; LM_BATCH=${LM_BATCH:-256}; LM_LR=${LM_LR:-4e-3}; LM_K=${LM_K:-8}
FT_STEPS=${FT_STEPS:-0}; BATCH=${BATCH:-256}; DEADLINE=${DEADLINE:-530}  # FT_STEPS=2000: the ablation below
start=$(date +%s)
left() { echo $((start + DEADLINE - $(date +%s))); }
timeout "$(left)" python3 scripts/pretrain.py recipes/en_text_lm.json --text-files "$DATA/text/*.txt.gz" --output-dir runs/en-lm-gpu \
  --batch-size "$LM_BATCH" --learning-rate "$LM_LR" --max-steps "$LM_STEPS" --num-basis "$LM_K" --num-steps "$LM_K" \
  --refine-steps 100,200,300 --warmup-steps 500 --cooldown-steps $((LM_STEPS / 4)) --eval-steps $((LM_STEPS / 2)) \
  --save-steps $((LM_STEPS / 2)) --compression-report ${LM_EXTRA:-} > "$LOGS/pretrain.log" 2>&1 &
lm=$!
# Fine-tuning at the GPU's batch: the same passes over GUM train as the CPU recipe's 8,000 steps of 64.
common=(--bf16 --compression-report --batch-size "$BATCH" --learning-rate 6e-3 --max-steps "$FT_STEPS" --warmup-steps $((FT_STEPS / 16))
  --cooldown-steps $((FT_STEPS * 3 / 8)) --eval-steps $((FT_STEPS / 4)) --save-steps "$FT_STEPS" --word-dropout 4)
late="$((FT_STEPS * 3 / 4))"
run() { name=$1; shift; timeout "$(left)" python3 scripts/train_pos.py --treebank en_gum "${common[@]}" --output-dir "runs/ft-$name" "$@" \
  > "$LOGS/ft-$name.log" 2>&1; }
scratch=(--num-basis 16 --refine-steps "$((FT_STEPS / 80)),$((FT_STEPS / 40)),$((FT_STEPS * 3 / 80)),$late")
if ((FT_STEPS > 0)); then
  run none "${scratch[@]}" &
  run vectors "${scratch[@]}" --word-vectors "$DATA/vectors" &
fi
wait $lm; echo "pretraining: $(( $(date +%s) - start )) s"; tail -c 1500 "$LOGS/pretrain.log"
lm=(--model-name-or-path runs/en-lm-gpu/best --refine-steps "$late")
if ((FT_STEPS > 0)); then
  run lm "${lm[@]}" &
  run lm-vectors "${lm[@]}" --word-vectors "$DATA/vectors" &
  run lm-vectors-s7 "${lm[@]}" --word-vectors "$DATA/vectors" --seed 7 &
  run lm-vectors-low "${lm[@]}" --word-vectors "$DATA/vectors" --encoder-learning-rate-scale 0.3 &
fi
wait
echo "all: $(( $(date +%s) - start )) s"
for f in runs/*/metrics.json; do echo "== $f"; python3 -c "
import json; m = json.load(open('$f')); b = m['best']
print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in b.items()}, 'train_s', round(m.get('train_runtime_s', 0)),
      'tok/s', round(m.get('train_tokens_per_second', 0)))"; done
tar czf "$OUT/runs.tgz" runs/*/metrics.json runs/*/compression.json runs/*/run.json runs/*/best/README.md 2>/dev/null
tar czf "$OUT/logs.tgz" -C "$LOGS" .
tar cf - -C runs/en-lm-gpu best | split -b 15M - "$OUT/lm-best.tar."
