#!/usr/bin/env bash
# One Megatron-LM training step on one GPU, without Transformer Engine or Apex (neither is in
# the lent machine's image): local transformer implementation, unfused attention, PyTorch
# AdamW, mock data. Megatron-LM source is carried in .megatron/ (git archive of the mirror's
# HEAD, d98e8a64, 2026-08-22). Prints Megatron's own per-iteration log lines.
# Run on the device machine: bash calibration/megatron_step.sh   (writes $OUT/megatron_*.log)
set -u
cd "$(dirname "$0")/../.megatron" || exit 1
export PYTHONPATH=$PWD CUDA_DEVICE_MAX_CONNECTIONS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}
python3 -c "import megatron.core, megatron.training; print('megatron imports ok')" 2>&1 | tail -5
run() { # name, then extra args
  local name=$1; shift
  timeout 240 torchrun --standalone --nproc_per_node 1 pretrain_gpt.py \
    --transformer-impl local --no-gradient-accumulation-fusion --no-masked-softmax-fusion \
    --no-bias-swiglu-fusion --no-bias-dropout-fusion --no-rope-fusion --no-persist-layer-norm \
    --swiglu --disable-bias-linear --normalization RMSNorm --position-embedding-type rope \
    --untie-embeddings-and-output-weights --group-query-attention \
    --bf16 --mock-data --tokenizer-type NullTokenizer --split 1,0,0 \
    --lr 1e-4 --min-lr 1e-5 --lr-decay-style constant --weight-decay 0.1 --clip-grad 1.0 \
    --eval-iters 0 --eval-interval 1000 --log-interval 1 --timing-log-level 2 \
    --attention-dropout 0 --hidden-dropout 0 --seed 1234 --distributed-timeout-minutes 5 \
    --use-distributed-optimizer "$@" > "$OUT/megatron_$name.log" 2>&1
  echo "== $name rc=$?"
  grep -E "iteration +[0-9]+/|Error|error:|Traceback" "$OUT/megatron_$name.log" | tail -3 | cut -c1-200
}
# A: Llama-3-8B shapes, 4 layers, 8 micro-batches of 1 x 4096 tokens; the same with 16
# micro-batches (per-micro-batch cost) and with 2 layers (per-layer cost).
L8B="--hidden-size 4096 --ffn-hidden-size 14336 --num-attention-heads 32 --num-query-groups 8 \
  --seq-length 4096 --max-position-embeddings 4096 --vocab-size 128256 --micro-batch-size 1 --train-iters 8"
run llama8b4l --num-layers 4 --global-batch-size 8 $L8B
run llama8b4l_mb16 --num-layers 4 --global-batch-size 16 $L8B
run llama8b2l --num-layers 2 --global-batch-size 8 $L8B
# B: a tiny model (compute negligible): step time is framework overhead.
TINY="--hidden-size 256 --ffn-hidden-size 1024 --num-attention-heads 4 --num-query-groups 4 \
  --seq-length 256 --max-position-embeddings 256 --vocab-size 4096 --micro-batch-size 1 --train-iters 8"
run tiny4l_mb8 --num-layers 4 --global-batch-size 8 $TINY
run tiny16l_mb8 --num-layers 16 --global-batch-size 8 $TINY
