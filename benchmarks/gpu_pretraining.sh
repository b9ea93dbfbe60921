#!/usr/bin/env bash
# Pretraining and the fine-tuning ablation on a lent GPU, in one call (a lent GPU is short).
# Expects, in the repository: .whl/ (datasets, dill, multiprocess, conllu, evaluate wheels),
# .gpu_data/ud/UD_English-GUM/ (train, dev) and .gpu_data/text/*.txt.gz; $CODE (default .)
# holds the package. Writes logs and metrics under $OUT (the device tool's folder).
set -uo pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
CODE=$(realpath "${CODE:-.}"); export PYTHONPATH=/tmp/site:$CODE UD_DIR=$PWD/.gpu_data/ud PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; cd "$CODE"
nvidia-smi -L
LM_STEPS=${LM_STEPS:-6000}; FT_STEPS=${FT_STEPS:-2000}; BATCH=${BATCH:-256}
start=$(date +%s)
python3 scripts/pretrain.py recipes/en_text_lm.json --text-files "$UD_DIR/../text/*.txt.gz" --output-dir runs/en-lm-gpu \
  --batch-size $BATCH --learning-rate 4e-3 --max-steps $LM_STEPS --refine-steps "100,200,300,$((LM_STEPS * 3 / 4))" \
  --warmup-steps 500 --cooldown-steps $((LM_STEPS / 4)) --eval-steps $((LM_STEPS / 2)) --save-steps $LM_STEPS \
  > "$OUT/pretrain.log" 2>&1
echo "pretraining: $(( $(date +%s) - start )) s"; tail -c 1500 "$OUT/pretrain.log"
# Fine-tuning ablation at the GPU's batch: the same data passes as the CPU recipe's 8,000 steps of 64.
common=(--bf16 --batch-size $BATCH --learning-rate 6e-3 --max-steps $FT_STEPS --warmup-steps 125
        --cooldown-steps $((FT_STEPS * 3 / 8)) --eval-steps $((FT_STEPS / 4)) --save-steps $FT_STEPS --word-dropout 4)
run() { name=$1; shift; python3 scripts/train_pos.py --treebank en_gum "${common[@]}" --output-dir runs/ft-$name "$@" \
        > "$OUT/ft-$name.log" 2>&1; }
run none --num-basis 16 --refine-steps "25,50,75,$((FT_STEPS * 3 / 4))" &
run tuned --model-name-or-path runs/en-lm-gpu/best &
run frozen --model-name-or-path runs/en-lm-gpu/best --freeze-word-embeddings &
run frozen-half --model-name-or-path runs/en-lm-gpu/best --freeze-word-embeddings --encoder-learning-rate-scale 0.5 &
run tuned-low --model-name-or-path runs/en-lm-gpu/best --encoder-learning-rate-scale 0.3 &
wait
echo "all: $(( $(date +%s) - start )) s"
for f in runs/ft-*/metrics.json runs/en-lm-gpu/metrics.json; do echo "== $f"; python3 -c "
import json,sys; m=json.load(open('$f')); b=m['best']
print({k: (round(v,4) if isinstance(v,float) else v) for k,v in b.items()}, 'train_s', round(m.get('train_runtime_s',0)), 'tok/s', round(m.get('train_tokens_per_second',0)))"; done
tar czf "$OUT/runs.tgz" runs/*/metrics.json runs/*/compression.json runs/en-lm-gpu/run.json 2>/dev/null
tar cf - -C runs/en-lm-gpu best | split -b 15M - "$OUT/lm-best.tar."
