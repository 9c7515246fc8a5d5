# clustersim import: Hugging Face configs, Megatron-LM arguments, DeepSpeed configs (issue 16).
# Llama-3.2-3B tied: 3,212,749,824 parameters (tests/interop_test.cpp derives it).
add_test(NAME cli.import_hf_llama32_3b
         COMMAND clustersim import hf tests/data/hf/llama-3.2-3b.json
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.import_hf_llama32_3b PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "# parameters: 3,212,749,824 \\(3\\.21B\\)\n.*model:\n  hf_config: tests/data/hf/llama-3.2-3b.json.*# tie_embeddings: true\n")
# An unknown architecture: exit 1 and the supported list.
add_test(NAME cli.import_hf_unknown_architecture_exits_nonzero
         COMMAND clustersim import hf tests/data/hf/unknown-architecture.json
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.import_hf_unknown_architecture_exits_nonzero PROPERTIES WILL_FAIL TRUE LABELS quick)
add_test(NAME cli.import_hf_unknown_architecture_message
         COMMAND sh -c "$<TARGET_FILE:clustersim> import hf tests/data/hf/unknown-architecture.json 2>&1; echo exit=$?"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.import_hf_unknown_architecture_message PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "error: tests/data/hf/unknown-architecture.json: architectures: unsupported architecture 'FalconForCausalLM'; supported architectures: LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, DeepseekV3ForCausalLM, GPT2LMHeadModel, GPTNeoXForCausalLM\nexit=1")
# A scenario whose model is a config.json beside it simulates (Llama-2-7B, 6738.4M parameters).
add_test(NAME cli.simulate_hf_config_scenario
         COMMAND clustersim simulate tests/data/hf/llama-2-7b-scenario.yaml --no-baseline
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.simulate_hf_config_scenario PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "model       llama-2-7b: 6738\\.4M parameters, 32 layers, hidden 4096")
# A launch script: 2 nodes x 8 GPUs, TP 2 x PP 2 x CP 2 -> DP 2 on Megatron-Core's stack; an unknown
# flag is a warning.
add_test(NAME cli.import_megatron_launch_script
         COMMAND sh -c "$<TARGET_FILE:clustersim> import megatron --file tests/data/megatron/llama3-8b-launch.sh 2>&1"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.import_megatron_launch_script PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "warning: unknown flags, ignored: --my-custom-flag.*  nodes: 2\nstack: megatron_core\nlayout:\n  tp: 2\n  pp: 2\n  cp: 2\n  dp: 2\n  data_parallel: zero1")
# DeepSpeed: 64 = 4 x 2 x 8 GPUs, ZeRO-3, offload reported as not modelled.
add_test(NAME cli.import_deepspeed_zero3
         COMMAND clustersim import deepspeed tests/data/deepspeed/zero3-offload.json --model llama3-8b --seq 4096
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.import_deepspeed_zero3 PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "offload not modelled.*  dp: 8\n  data_parallel: zero3\n")
# Round trip: Megatron arguments -> scenario -> simulate (GPT-style, tied, TP 2 x DP 4 on 8 GPUs;
# vocab 50257 padded to 50432 = 197 x 256; 1,316,081,664 parameters = 1316.1M).
add_test(NAME cli.import_megatron_then_simulate
         COMMAND sh -c "$<TARGET_FILE:clustersim> import megatron --gpus 8 --num-layers 24 --hidden-size 2048 --num-attention-heads 16 --seq-length 2048 --vocab-size 50257 --tensor-model-parallel-size 2 --micro-batch-size 2 --global-batch-size 64 --bf16 --use-distributed-optimizer > ${CMAKE_CURRENT_BINARY_DIR}/megatron-import.yaml && $<TARGET_FILE:clustersim> simulate ${CMAKE_CURRENT_BINARY_DIR}/megatron-import.yaml --no-baseline"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(cli.import_megatron_then_simulate PROPERTIES LABELS quick
  PASS_REGULAR_EXPRESSION "megatron-model: 1316\\.1M parameters.*layout      TP 2 x PP 1 x DP 4, zero1")
