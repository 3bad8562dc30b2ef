"""RMSNorm, B[i, :] = A[i, :] * rsqrt(mean(A[i, :]^2) + 1e-12), over the rows of an M x N matrix.

TileLang's own example ``examples/norm/rms_norm.py`` (tile-ai/tilelang), its ``rms_norm`` kernel body as a
plain T.prim_func (the example's last form before it moved to the eager style), without the example's
``@tilelang.jit`` decorator, and with the element type and the block size as parameters instead of the
example's fixed float32 and 128 threads. Each block takes blk_m whole rows: it copies them to shared memory
and on into a fragment, sums their squares with T.reduce_sum, and scales each row by the reciprocal root of
its mean square. There is no separate accumulator type: with float16 the sum of squares is float16 too
(and 1e-12 rounds to 0), as the example with dtype changed would have it.

Parameters: M, N (rows x columns), blk_m (rows per block), dtype (A, B and every buffer), threads (per block).
"""

import tilelang.language as T

# one lowering's cost against the book's GEMM's: 0.25-0.38x over the four modes (TileLang 0.1.15, 2026-12-02)
LOWERING_COST = 0.3


def build(M=1024, N=1024, blk_m=1, dtype="float16", threads=128):
    """The RMSNorm as a T.prim_func (the kernel contract: ``build(**params) -> T.prim_func``)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, blk_m), threads=threads) as bx:
            A_shared = T.alloc_shared((blk_m, N), dtype)
            A_pow_local = T.alloc_fragment((blk_m, N), dtype)
            A_local = T.alloc_fragment((blk_m, N), dtype)
            A_powsum = T.alloc_fragment((blk_m,), dtype)

            T.copy(A[bx * blk_m : (bx + 1) * blk_m, :], A_shared)
            T.copy(A_shared, A_local)
            for i, j in T.Parallel(blk_m, N):
                A_pow_local[i, j] = A_local[i, j] * A_local[i, j]
            T.reduce_sum(A_pow_local, A_powsum, dim=1)
            for i in T.Parallel(blk_m):
                A_powsum[i] = T.rsqrt(A_powsum[i] / N + 1e-12)
            for i, j in T.Parallel(blk_m, N):
                A_local[i, j] *= A_powsum[i]
            T.copy(A_local, B[bx * blk_m : (bx + 1) * blk_m, :])

    return main


# GPU hooks (the GPU stage, config gpu: true; the contract: scripts/tilelang_churn/kernel/kernels.py)
OUT_IDX = [1]  # B


def inputs(params, device):
    """A: standard normal, in the kernel's element type."""
    import torch

    return [torch.randn(params["M"], params["N"], device=device).to(getattr(torch, params["dtype"]))]


def reference(params, inputs):
    """The kernel's formula in torch, computed in float32: A * rsqrt(mean(A^2) + 1e-12)."""
    import torch

    a = inputs[0].float()
    return (a * torch.rsqrt(a.pow(2).mean(dim=1, keepdim=True) + 1e-12)).to(inputs[0].dtype)


def work(params):
    """Bytes moved: A read once, B written once."""
    itemsize = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}[params["dtype"]]
    return {"bytes": 2 * params["M"] * params["N"] * itemsize}
