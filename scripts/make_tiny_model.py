"""Write a tiny gpt-oss-architecture GGUF with random weights, for tests and benchmarks.

    python scripts/make_tiny_model.py OUT.gguf [--seed N] [--embd N --layers N ...]

The defaults make the tiny test model; the size flags make a bigger one of the same shape
for benchmarks, where evaluating a token should cost something.

The file is what llama.cpp's ``gpt-oss`` loader expects, shrunk: attention with biases and
per-head sinks, alternating sliding-window and full attention layers, a mixture of experts
with biases, and a byte-level BPE vocabulary (ids 0-255 the bytes, a few merges, then
Harmony's special tokens as control tokens) pre-tokenized like o200k (``gpt-4o``). Its
output is noise, which is the point: with replay (a logits processor that leaves only the
scripted token) it runs the whole product through llama.cpp without real weights.

Token ids differ from o200k_harmony's; code tells special tokens apart by asking the
model's tokenizer, never by hard-coded ids.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# The Harmony markers, in the order they get ids after the bytes and merges.
SPECIAL_TOKENS = (
    "<|startoftext|>",
    "<|endoftext|>",
    "<|return|>",
    "<|constrain|>",
    "<|channel|>",
    "<|start|>",
    "<|end|>",
    "<|message|>",
    "<|call|>",
)

# A few merges (GPT-2 byte-to-unicode spelling; "Ġ" is a space) so the BPE path is real.
MERGES = (("Ġ", "t"), ("h", "e"), ("Ġt", "he"), ("i", "n"), ("e", "r"), ("o", "n"), ("a", "n"))

CONTEXT_LENGTH = 16384  # the trained context: lmc's default context for this model
SLIDING_WINDOW = 32
N_EXPERT_USED = 2


@dataclass(frozen=True)
class Shape:
    """The model's dimensions; the defaults are the tiny test model's."""

    embd: int = 32
    heads: int = 4
    heads_kv: int = 2
    head_dim: int = 16
    layers: int = 2
    experts: int = 4
    ff_exp: int = 32


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from bytes to printable characters (byte-level BPE spelling)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(0xA1, 0xAC + 1), *range(0xAE, 0xFF + 1)]
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


def vocabulary() -> tuple[list[str], list[int], list[str]]:
    """Tokens, their types and the merges: bytes first, then merge results, then specials."""
    import gguf

    byte_chars = bytes_to_unicode()
    tokens = [byte_chars[b] for b in range(256)]
    types = [int(gguf.TokenType.NORMAL)] * 256
    merges = []
    for left, right in MERGES:
        merges.append(f"{left} {right}")
        tokens.append(left + right)
        types.append(int(gguf.TokenType.NORMAL))
    for marker in SPECIAL_TOKENS:
        tokens.append(marker)
        types.append(int(gguf.TokenType.CONTROL))
    return tokens, types, merges


def write_tiny_model(out: Path, seed: int = 0, shape: Shape | None = None) -> Path:
    """Write the tiny model (or one of ``shape``) to ``out`` and return it."""
    import gguf

    shape = shape or Shape()
    N_EMBD, N_HEAD, N_HEAD_KV, HEAD_DIM = shape.embd, shape.heads, shape.heads_kv, shape.head_dim
    N_LAYER, N_EXPERT, N_FF_EXP = shape.layers, shape.experts, shape.ff_exp
    rng = np.random.default_rng(seed)
    tokens, types, merges = vocabulary()
    n_vocab = len(tokens)

    def weights(*shape: int, scale: float = 0.5) -> np.ndarray:
        # numpy shapes are the reverse of GGUF's {ne0, ne1, ...} order.
        return (rng.standard_normal(shape[::-1]) * scale).astype(np.float32)

    def ones(n: int) -> np.ndarray:
        return np.ones(n, dtype=np.float32)

    arch = gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.GPT_OSS]
    writer = gguf.GGUFWriter(str(out), arch)
    writer.add_name("lmc tiny gpt-oss")
    writer.add_context_length(CONTEXT_LENGTH)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(N_LAYER)
    writer.add_feed_forward_length(N_FF_EXP)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD_KV)
    writer.add_key_length(HEAD_DIM)
    writer.add_value_length(HEAD_DIM)
    writer.add_rope_freq_base(150000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_expert_count(N_EXPERT)
    writer.add_expert_used_count(N_EXPERT_USED)
    writer.add_expert_feed_forward_length(N_FF_EXP)
    writer.add_sliding_window(SLIDING_WINDOW)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-4o")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(tokens.index("<|startoftext|>"))
    writer.add_eos_token_id(tokens.index("<|return|>"))
    writer.add_pad_token_id(tokens.index("<|endoftext|>"))
    writer.add_add_bos_token(False)
    writer.add_add_eos_token(False)

    q_dim = N_HEAD * HEAD_DIM
    kv_dim = N_HEAD_KV * HEAD_DIM
    writer.add_tensor("token_embd.weight", weights(N_EMBD, n_vocab))
    writer.add_tensor("output_norm.weight", ones(N_EMBD))
    writer.add_tensor("output.weight", weights(N_EMBD, n_vocab))
    for i in range(N_LAYER):
        blk = f"blk.{i}"
        writer.add_tensor(f"{blk}.attn_norm.weight", ones(N_EMBD))
        writer.add_tensor(f"{blk}.post_attention_norm.weight", ones(N_EMBD))
        writer.add_tensor(f"{blk}.attn_q.weight", weights(N_EMBD, q_dim))
        writer.add_tensor(f"{blk}.attn_k.weight", weights(N_EMBD, kv_dim))
        writer.add_tensor(f"{blk}.attn_v.weight", weights(N_EMBD, kv_dim))
        writer.add_tensor(f"{blk}.attn_output.weight", weights(q_dim, N_EMBD))
        writer.add_tensor(f"{blk}.attn_q.bias", weights(q_dim, scale=0.1))
        writer.add_tensor(f"{blk}.attn_k.bias", weights(kv_dim, scale=0.1))
        writer.add_tensor(f"{blk}.attn_v.bias", weights(kv_dim, scale=0.1))
        writer.add_tensor(f"{blk}.attn_output.bias", weights(N_EMBD, scale=0.1))
        writer.add_tensor(f"{blk}.attn_sinks.weight", weights(N_HEAD, scale=0.1))
        writer.add_tensor(f"{blk}.ffn_gate_inp.weight", weights(N_EMBD, N_EXPERT))
        writer.add_tensor(f"{blk}.ffn_gate_inp.bias", weights(N_EXPERT, scale=0.1))
        for name in ("gate", "up"):
            writer.add_tensor(
                f"{blk}.ffn_{name}_exps.weight", weights(N_EMBD, N_FF_EXP, N_EXPERT, scale=0.2)
            )
            writer.add_tensor(f"{blk}.ffn_{name}_exps.bias", weights(N_FF_EXP, N_EXPERT, scale=0.1))
        writer.add_tensor(
            f"{blk}.ffn_down_exps.weight", weights(N_FF_EXP, N_EMBD, N_EXPERT, scale=0.2)
        )
        writer.add_tensor(f"{blk}.ffn_down_exps.bias", weights(N_EMBD, N_EXPERT, scale=0.1))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where to write the .gguf file")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    default = Shape()
    for name in ("embd", "heads", "heads_kv", "head_dim", "layers", "experts", "ff_exp"):
        flag = "--" + name.replace("_", "-")
        parser.add_argument(flag, type=int, default=getattr(default, name), help=f"({name})")
    args = parser.parse_args(argv)
    shape = Shape(
        args.embd, args.heads, args.heads_kv, args.head_dim, args.layers, args.experts, args.ff_exp
    )
    path = write_tiny_model(args.out, args.seed, shape)
    print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
