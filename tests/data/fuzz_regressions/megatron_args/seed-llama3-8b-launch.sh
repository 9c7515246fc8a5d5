#!/bin/bash
# A Megatron-LM launch script in the style of examples/llama/train_llama3_8b_h100_fp8.sh
# (Llama 3 8B dimensions: 32 layers, hidden 4096, 32 heads, 8 query groups, ffn 14336,
# vocab 128256), on 2 nodes of 8 GPUs.
GPUS_PER_NODE=8
NUM_NODES=2
TP_SIZE=${TP_SIZE:-2}
PP_SIZE=2
SEQ_LENGTH=8192

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr localhost
    --master_port 6000
)

MODEL_ARGS=(
    --use-mcore-models
    --num-layers 32
    --hidden-size 4096
    --ffn-hidden-size 14336
    --num-attention-heads 32
    --group-query-attention
    --num-query-groups 8
    --kv-channels 128
    --seq-length $SEQ_LENGTH
    --max-position-embeddings $SEQ_LENGTH
    --position-embedding-type rope
    --rotary-base 500000
    --swiglu
    --normalization RMSNorm
    --disable-bias-linear
    --untie-embeddings-and-output-weights
    --vocab-size 128256
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 128
    --train-iters 1000
    --lr 3e-4
    --bf16
    --recompute-activations
    --use-flash-attn
    --my-custom-flag 3
)

PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP_SIZE
    --pipeline-model-parallel-size $PP_SIZE
    --context-parallel-size 2
    --sequence-parallel
    --use-distributed-optimizer
    --overlap-grad-reduce
    --overlap-param-gather
    --tp-comm-overlap
)

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${MODEL_ARGS[@]} ${TRAINING_ARGS[@]} ${PARALLEL_ARGS[@]} \
    --data-path /data/my_text_document --tokenizer-type HuggingFaceTokenizer  # data is not modelled
