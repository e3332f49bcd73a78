"""Writes the broken variants of Inputs/tiny-llama.json that errors.test runs: `bad_configs.py DIR`."""

import json
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "tiny-llama.json")) as f:
    base = json.load(f)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
variants = {
    "act": {"hidden_act": "gelu_foo"},
    "hidden": {"hidden_size": 30},
    "odd": {"head_dim": 7},
    "kv0": {"num_key_value_heads": 0},
    "kv3": {"num_key_value_heads": 3},
    "rope": {"rope_scaling": {"rope_type": "banana", "factor": 2.0}},
    "dynamic": {"rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
    "huge": {"vocab_size": 10**30},
    "wide": {"hidden_size": 2**40},
    "topk": {"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 5},
    "topk0": {"model_type": "mixtral", "num_local_experts": 4, "num_experts_per_tok": 0},
    "dtype": {"torch_dtype": "float8"},
}
for name, fields in variants.items():
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump({**base, **fields}, f)
with open(os.path.join(out, "latin1.json"), "wb") as f:
    f.write(json.dumps(base).replace('"llama"', '"ll\u00e9ma"').encode("latin-1"))
