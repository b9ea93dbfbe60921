#!/usr/bin/env bash
# Every GPU check of the project in one call, inside a time budget (a lent GPU is short):
#
#   bash benchmarks/gpu_check.sh OUT DATA [BUDGET_SECONDS]     # from the repository root
#
# DATA holds cifar10-jpg.tar.gz and UD_English-GUM/en_gum-ud-{train,dev}.conllu (or .conllu.gz).
# $WHEELS, when set, is a folder of wheels the machine lacks (datasets, evaluate, conllu, ...),
# installed with pip --target first. In order, each with its share of the budget:
#   1. the CIFAR-10 recipe, unchanged (recipes/cifar10_fast.json)  -> OUT/cifar10_fast.json
#   2. scripts/benchmark.py, eager rows (measure 11 needs spaCy; without it, an error row)
#                                                                   -> OUT/bench_eager.json
#   3. scripts/benchmark.py, compiled rows (--compile-mode default: reduce-overhead on CUDA)
#                                                                   -> OUT/bench_compiled.json
#   4. measure 9: the GUM recipe's first $TRAINING_STEPS steps compiled vs eager, bf16 vs float32
#                                                                   -> OUT/bench_training.json
#   5. with what is left, the CIFAR-10 recipe stretched to $LONG_EPOCHS epochs (refined at
#      the same fractions of the run), to see how far the network goes; its validation
#      accuracy per epoch is in the log                            -> OUT/cifar10_long.json
#   6. the networks of benchmarks/cifar10_variants.json (the recipe with other flags; $VARIANTS
#      names some, "airbench94" the peer) and airbench94's network (benchmarks/airbench_peer.py),
#      all at once on the one GPU                                  -> OUT/variants.json
# $GPU_STEPS picks some of them (default "1 2 3 4 5"; 6 only when named); $PYTHON is the interpreter
# (python3). Everything printed goes to OUT/gpu_check.log. The benchmark writes its report
# after every case, so a step stopped by its share of the time keeps what it measured.
set -u
usage="usage: gpu_check.sh OUT DATA [BUDGET_SECONDS]"
out=${1:?$usage}
data=${2:?$usage}
budget=${3:-540}
device=${DEVICE:-cuda}
python=${PYTHON:-python3}
steps=${TRAINING_STEPS:-200}
long_epochs=${LONG_EPOCHS:-48}
chosen=" ${GPU_STEPS:-1 2 3 4 5} "
start=$(date +%s)
work=$(mktemp -d) # trained models, unpacked data, installed wheels: gone at the end
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
exec > >(tee -a "$out/gpu_check.log") 2>&1
export PYTHONUNBUFFERED=1

left() { echo $((budget - ($(date +%s) - start))); }
step() { echo "== $(date -u +%T), $(left) s of $budget left: $*"; }
wanted() { [[ $chosen == *" $1 "* ]]; }
share() { # seconds for a step: PERCENT of the budget, never more than what is left
    local want=$((budget * $1 / 100)) rest
    rest=$(left)
    echo $((want < rest ? want : rest))
}
timed() { # SECONDS COMMAND...: run with a time limit, then say how it ended and how long it took
    local limit=$1 t0=$(date +%s) rc
    shift
    if [ "$limit" -le 5 ]; then echo "skipped: no time left"; return 0; fi
    timeout --signal=INT --kill-after=10 "$limit" "$@"
    rc=$?
    echo "exit $rc after $(($(date +%s) - t0)) s (limit $limit s)"
}

step "environment"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
if [ -n "${WHEELS:-}" ]; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$work/site" "$WHEELS"/*.whl || exit 1
    export PYTHONPATH="$work/site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
"$python" -c "
import accelerate, datasets, evaluate, torch, transformers
print('torch', torch.__version__, 'transformers', transformers.__version__, 'accelerate', accelerate.__version__,
      'datasets', datasets.__version__, 'evaluate', evaluate.__version__)
print('device', torch.cuda.get_device_name() if torch.cuda.is_available() else 'no CUDA device')
" || exit 1
mkdir -p "$work/ud/UD_English-GUM"
for file in "$data"/UD_English-GUM/*.conllu*; do
    name=$(basename "$file" .gz)
    case $file in *.gz) gunzip -c "$file" >"$work/ud/UD_English-GUM/$name" ;; *) cp "$file" "$work/ud/UD_English-GUM/" ;; esac
done
echo "UD data for measure 9: $(cd "$work/ud/UD_English-GUM" && wc -l -- * | tr -s ' \n' ' ')"

train_cifar() { # SECONDS FOLDER ARGS...: the CIFAR-10 recipe (with ARGS) into FOLDER
    local limit=$1 folder=$2
    shift 2
    timed "$limit" "$python" scripts/train_image.py recipes/cifar10_fast.json \
        --dataset "$data/cifar10-jpg.tar.gz" --output-dir "$folder" "$@"
}
cifar() { # NAME PERCENT ARGS...: the CIFAR-10 recipe, its metrics.json copied to OUT
    local name=$1 percent=$2
    shift 2
    train_cifar "$(share "$percent")" "$work/$name" "$@"
    cp "$work/$name/metrics.json" "$out/$name.json" 2>/dev/null || echo "no $name metrics.json"
}
bench() { # NAME PERCENT ARGS...: one benchmark run, its report copied to OUT even when cut short
    local name=$1 percent=$2
    shift 2
    timed "$(share "$percent")" "$python" scripts/benchmark.py --device "$device" \
        --output-dir "$work/$name" "$@"
    cp "$work/$name/benchmark.json" "$out/$name.json" 2>/dev/null || echo "no $name report"
}
if wanted 1; then
    step "1. the CIFAR-10 recipe on $device"
    cifar cifar10_fast 45
fi
if wanted 2; then
    step "2. benchmark, eager"
    bench bench_eager 15 --compile-mode none
fi
if wanted 3; then
    step "3. benchmark, compiled"
    bench bench_compiled 22 --only compiled_
fi
if wanted 4; then
    step "4. benchmark, measure 9 ($steps steps of the GUM recipe)"
    bench bench_training 18 --only training_throughput --training-steps "$steps" --ud-dir "$work/ud"
fi
if wanted 5; then
    step "5. the CIFAR-10 recipe stretched to $long_epochs epochs"
    cifar cifar10_long 100 --epochs "$long_epochs" --refine-epochs "$((long_epochs / 2))" "$((long_epochs * 13 / 16))"
fi
if wanted 6; then
    step "6. the networks of benchmarks/cifar10_variants.json${VARIANTS:+ ($VARIANTS)} and airbench94's, side by side"
    limit=$(left)
    "$python" -c "import sys; from image_models.data import extract_archive; extract_archive(sys.argv[1])" \
        "$data/cifar10-jpg.tar.gz" # once, before the runs that share it
    mkdir -p "$work/variants"
    pids=() # waited for by name: a bare wait would also wait for the tee of the log
    while IFS=$'\t' read -r name flags; do
        eval "set -- $flags" # flags: shell-quoted words
        OMP_NUM_THREADS=2 train_cifar "$limit" "$work/variants/$name" --compression-report false "$@" \
            >"$work/variants/$name.log" 2>&1 &
        pids+=($!)
    done < <("$python" -c "
import json, os, shlex
chosen = os.environ.get('VARIANTS', '').split()
for name, flags in json.load(open('benchmarks/cifar10_variants.json')).items():
    if not name.startswith('_') and (not chosen or name in chosen):
        print(name, ' '.join(map(shlex.quote, flags)), sep='\t')")
    if [ -z "${VARIANTS:-}" ] || [[ " $VARIANTS " == *" airbench94 "* ]]; then
        mkdir -p "$work/variants/airbench94"
        OMP_NUM_THREADS=2 timed "$limit" "$python" benchmarks/airbench_peer.py --dataset "$data/cifar10-jpg.tar.gz" \
            --num-threads 2 --output "$work/variants/airbench94/metrics.json" >"$work/variants/airbench94.log" 2>&1 &
        pids+=($!)
    fi
    wait "${pids[@]}"
    # one file for all (a lent machine hands back few files): each run's metrics, or its log's end
    "$python" - "$work/variants" "$out/variants.json" <<'PY'
import json, pathlib, sys
folder, report = pathlib.Path(sys.argv[1]), {}
for log in sorted(folder.glob("*.log")):
    metrics = folder / log.stem / "metrics.json"
    report[log.stem] = json.loads(metrics.read_text()) if metrics.exists() else {"log_tail": log.read_text()[-2000:]}
pathlib.Path(sys.argv[2]).write_text(json.dumps(report, indent=1))
for name, result in report.items():
    history = [round(100 * entry["accuracy"], 1) for entry in result.get("history", [])]
    print(name, {key: result[key] for key in ("best", "test", "test_tta", "train_runtime_s") if key in result},
          history or {key: value for key, value in result.items() if "accuracy" in key or "log_tail" in key})
PY
fi
step "done"
