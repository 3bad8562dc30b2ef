"""GEMM, C = A @ B: the book's standard TileLang GEMM (chapter 12, example 4).

The kernel every job of config `shapes` and the book's script `gemm_lower_trace.py` trace: A (M x K) times
B (K x N) into C (M x N), each block computes a block_M x block_N tile of C, walking K in steps of block_K
through a software pipeline of ``stages`` stages (0: not pipelined), accumulating in ``accum_dtype``.

Parameters: M, N, K (the problem), block_M, block_N, block_K (the tile), dtype (A, B and C), accum_dtype
(the accumulator fragment), threads (per block), stages (num_stages of T.Pipelined).
"""

import tilelang.language as T

# What the tables make of it (the contract: scripts/tilelang_churn/kernel/kernels.py): every parameter is a column
# of its own, labelled MxNxK bBMxBNxBK dtype/accum tTHREADS sSTAGES; the cost model's unit of lowering cost.
COLUMNS = ("M", "N", "K", "block_M", "block_N", "block_K", "dtype", "accum_dtype", "threads", "stages")
LOWERING_COST = 1.0


def build(
    M,
    N,
    K,
    block_M=128,
    block_N=128,
    block_K=32,
    dtype="float16",
    accum_dtype="float32",
    threads=128,
    stages=3,
):
    """The GEMM as a T.prim_func (the kernel contract: ``build(**params) -> T.prim_func``)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


# GPU hooks (the GPU stage, config gpu: true; the contract: scripts/tilelang_churn/kernel/kernels.py)
OUT_IDX = [2]  # C


def inputs(params, device):
    """A and B: standard normal, in the kernel's element type."""
    import torch

    dtype = getattr(torch, params["dtype"])
    a = torch.randn(params["M"], params["K"], device=device).to(dtype)
    b = torch.randn(params["K"], params["N"], device=device).to(dtype)
    return [a, b]


def reference(params, inputs):
    """torch.matmul of the same A and B (cuBLAS), in the kernel's element type."""
    import torch

    return torch.matmul(*inputs)


def work(params):
    """2 M N K floating-point operations."""
    return {"flops": 2 * params["M"] * params["N"] * params["K"]}
