"""FlashAttention forward, Output = softmax(Q K^T / sqrt(dim)) V, tensors laid out [batch, heads, seq, dim].

TileLang's own example ``examples/flash_attention/example_mha_fwd_bhsd.py`` (tile-ai/tilelang), its
``flashattn`` kernel body unchanged, as a plain T.prim_func: without the example's ``@autotune`` and
``@tilelang.jit`` decorators (so without its ``TL_ENABLE_FAST_MATH`` pass config), and with the element types
as parameters instead of the example's fixed float16 / float32. Each block takes block_M queries of one head,
walks the keys and values in blocks of block_N through a software pipeline of num_stages stages with an
online softmax (exp2 with log2(e) folded into the scale), and writes its block_M rows of Output. With
is_causal, a query attends to the keys up to its own position (offset by seq_kv - seq_q) and the key loop
stops at the diagonal.

Parameters: batch, heads, seq_q, seq_kv (seq_kv >= seq_q), dim (the head size), is_causal, block_M, block_N
(query and key/value tile), num_stages (of T.Pipelined), threads (per block), dtype (Q, K, V, Output and the
P tile fed to the second GEMM), accum_dtype (the scores, the softmax statistics and the output accumulator).
"""

import tilelang.language as T

# one lowering's cost against the book's GEMM's: 2.3-2.9x over the four modes (TileLang 0.1.15, 2026-12-02)
LOWERING_COST = 2.5


def build(
    batch=1,
    heads=8,
    seq_q=1024,
    seq_kv=1024,
    dim=64,
    is_causal=False,
    block_M=64,
    block_N=64,
    num_stages=1,
    threads=128,
    dtype="float16",
    accum_dtype="float32",
):
    """The FlashAttention forward as a T.prim_func (the kernel contract: ``build(**params) -> T.prim_func``)."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    q_shape = [batch, heads, seq_q, dim]
    kv_shape = [batch, heads, seq_kv, dim]

    past_len = seq_kv - seq_q
    if past_len < 0:
        raise ValueError(f"seq_kv must be greater than or equal to seq_q, got seq_q={seq_q}, seq_kv={seq_kv}")

    @T.prim_func
    def main(
        Q: T.Tensor(q_shape, dtype),
        K: T.Tensor(kv_shape, dtype),
        V: T.Tensor(kv_shape, dtype),
        Output: T.Tensor(q_shape, dtype),
    ):
        with T.Kernel(T.ceildiv(seq_q, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[bz, by, bx * block_M : (bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))

            loop_range = (
                T.min(T.ceildiv(seq_kv, block_N), T.ceildiv((bx + 1) * block_M + past_len, block_N))
                if is_causal
                else T.ceildiv(seq_kv, block_N)
            )

            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, by, k * block_N : (k + 1) * block_N, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        q_idx = bx * block_M + i + past_len
                        k_idx = k * block_N + j
                        acc_s[i, j] = T.if_then_else(q_idx >= k_idx, 0, -T.infinity(acc_s.dtype))
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k * block_N + j >= seq_kv, -T.infinity(acc_s.dtype), 0)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)

                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)

                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]

                T.copy(V[bz, by, k * block_N : (k + 1) * block_N, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)

            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_M : (bx + 1) * block_M, :])

    return main


# GPU hooks (the GPU stage, config gpu: true; the contract: scripts/tilelang_churn/kernel/kernels.py)
OUT_IDX = [3]  # Output


def inputs(params, device):
    """Q, K, V: standard normal, [batch, heads, seq, dim], in the kernel's element type."""
    import torch

    dtype = getattr(torch, params["dtype"])
    b, h, d = params["batch"], params["heads"], params["dim"]
    q = torch.randn(b, h, params["seq_q"], d, device=device).to(dtype)
    k = torch.randn(b, h, params["seq_kv"], d, device=device).to(dtype)
    v = torch.randn(b, h, params["seq_kv"], d, device=device).to(dtype)
    return [q, k, v]


def reference(params, inputs):
    """torch's scaled_dot_product_attention; causal as the kernel aligns it (query i sees keys up to
    i + seq_kv - seq_q), which is torch's is_causal when seq_q == seq_kv."""
    import torch
    import torch.nn.functional as F

    q, k, v = inputs
    if not params["is_causal"]:
        return F.scaled_dot_product_attention(q, k, v)
    if params["seq_q"] == params["seq_kv"]:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    past = params["seq_kv"] - params["seq_q"]
    rows = torch.arange(params["seq_q"], device=q.device)[:, None] + past
    mask = rows >= torch.arange(params["seq_kv"], device=q.device)[None, :]
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def work(params):
    """4 batch heads seq_q seq_kv dim operations (the two GEMMs), about half of them with the causal mask."""
    flops = 4 * params["batch"] * params["heads"] * params["seq_q"] * params["seq_kv"] * params["dim"]
    return {"flops": flops // 2 if params["is_causal"] else flops}
