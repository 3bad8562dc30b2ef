"""Kernels in every style TileLang defines them, as its users write them (a test of tilelang-churn)."""

import itertools

import tilelang
import tilelang.language as T
from tilelang.autotuner import autotune


@tilelang.jit(out_idx=[-1])
def lazy_scale(M, N, block=(32, 64), dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block[1]), T.ceildiv(M, block[0]), threads=128) as (bx, by):
            for i, j in T.Parallel(block[0], block[1]):
                C[by * block[0] + i, bx * block[1] + j] = A[by * block[0] + i, bx * block[1] + j] * T.cast(2, dtype)

    return main


@tilelang.jit(pass_configs={tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True})
def eager_matmul(A, B, block_M, block_N, block_K, stages=2, dtype=T.float16, accum_dtype=T.float32):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), dtype)
    B: T.Tensor((K, N), dtype)
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), dtype)
        B_shared = T.alloc_shared((block_K, block_N), dtype)
        C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
        T.clear(C_local)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
            T.copy(A[by * block_M, k * block_K], A_shared)
            T.copy(B[k * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


def tile_configs():
    return [{"block_M": m, "block_N": n} for m, n in itertools.product([32, 64], [64, 128])]


@autotune(configs=tile_configs(), warmup=1, rep=1)
@tilelang.jit(out_idx=[-1])
def tuned_add(M, N, block_M=64, block_N=64, threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = (
                    A[by * block_M + i, bx * block_N + j] + B[by * block_M + i, bx * block_N + j]
                )

    return main


@tilelang.jit(out_idx=[-1])
def dynamic_copy(N, block_N=None):
    from styles_tiles import COPY_BLOCK  # a module beside the file, imported where it is used

    block_N = block_N or COPY_BLOCK
    M = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((M, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, block_N), M, threads=128) as (bx, by):
            for j in T.Parallel(block_N):
                C[by, bx * block_N + j] = A[by, bx * block_N + j]

    return main


@T.prim_func
def fixed_negate(A: T.Tensor((128, 128), "float32"), C: T.Tensor((128, 128), "float32")):
    with T.Kernel(1, 128, threads=128) as (bx, by):
        for j in T.Parallel(128):
            C[by, j] = -A[by, j]


def ref_scale(A):
    return A * 2
