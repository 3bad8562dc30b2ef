"""A program that asks TileLang for kernels in every way a program does (a test program of tilelang-churn's
capture, scripts/capture_kernels.py): a @tilelang.jit kernel lazy and eager, called and compiled, an @autotune
one, tilelang.compile of a module-level T.prim_func and of a factory's, one kernel from a subprocess, and two that
no config can name (defined inside a function; given a callable). It checks the outputs it gets back.

    python3 program.py [--child]
"""

import subprocess
import sys

import tilelang
import tilelang.language as T
import torch
from tilelang.autotuner import autotune


@tilelang.jit(out_idx=[-1])
def lazy_scale(M, N, block=(32, 64), dtype=T.float16):
    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block[1]), T.ceildiv(M, block[0]), threads=128) as (bx, by):
            for i, j in T.Parallel(block[0], block[1]):
                C[by * block[0] + i, bx * block[1] + j] = A[by * block[0] + i, bx * block[1] + j] * T.cast(2, dtype)

    return main


@tilelang.jit
def eager_add(A, B, block_M=32, block_N=32, dtype=T.float32):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), dtype)
    B: T.Tensor((M, N), dtype)
    C = T.empty((M, N), dtype)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        for i, j in T.Parallel(block_M, block_N):
            row, col = by * block_M + i, bx * block_N + j
            C[row, col] = A[row, col] + B[row, col]
    return C


@autotune(configs=[{"block_M": 64, "block_N": 64}, {"block_M": 32, "block_N": 128}], warmup=1, rep=1)
@tilelang.jit(out_idx=[-1])
def tuned_copy(M, N, block_M=32, block_N=32):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            for i, j in T.Parallel(block_M, block_N):
                C[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j]

    return main


@T.prim_func
def fixed_negate(A: T.Tensor((128, 128), "float32"), C: T.Tensor((128, 128), "float32")):
    with T.Kernel(1, 128, threads=128) as (bx, by):
        for j in T.Parallel(128):
            C[by, j] = -A[by, j]


def build_copy(N, block=128, dtype="float16"):
    M = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block), M, threads=128) as (bx, by):
            for j in T.Parallel(block):
                C[by, bx * block + j] = A[by, bx * block + j]

    return main


def make_inner(N):
    @tilelang.jit(out_idx=[-1])
    def inner(M):
        @T.prim_func
        def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
            with T.Kernel(M, threads=128) as bx:
                for j in T.Parallel(N):
                    C[bx, j] = A[bx, j]

        return main

    return inner


@tilelang.jit(out_idx=[-1])
def with_callable(M, N, combine=None):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=128) as bx:
            for j in T.Parallel(N):
                C[bx, j] = A[bx, j]

    return main


def expect(out, shape, dtype):
    assert tuple(out.shape) == shape and out.dtype == dtype, (tuple(out.shape), out.dtype, shape, dtype)


def main():
    a = torch.randn(256, 128, dtype=torch.float16)
    expect(lazy_scale(256, 128)(a), (256, 128), torch.float16)
    x, y = torch.randn(96, 64), torch.randn(96, 64)
    expect(eager_add(x, y, block_M=64), (96, 64), torch.float32)
    expect(eager_add.compile(M=64, N=64, block_M=32)(x[:64], y[:64]), (64, 64), torch.float32)
    expect(tuned_copy(128, 256)(torch.randn(128, 256)), (128, 256), torch.float32)
    expect(tilelang.compile(fixed_negate, out_idx=[-1])(torch.randn(128, 128)), (128, 128), torch.float32)
    copy = tilelang.compile(build_copy(512), out_idx=[-1], pass_configs={"tl.disable_warp_specialized": True})
    expect(copy(torch.randn(7, 512, dtype=torch.float16)), (7, 512), torch.float16)
    expect(make_inner(64)(32)(torch.randn(32, 64)), (32, 64), torch.float32)
    expect(with_callable(64, 64, combine=max)(torch.randn(64, 64)), (64, 64), torch.float32)
    expect(lazy_scale(256, 128)(a), (256, 128), torch.float16)  # the same kernel again
    subprocess.run([sys.executable, __file__, "--child"], check=True)
    print("program: done")


def child():
    expect(lazy_scale(512, 64)(torch.randn(512, 64, dtype=torch.float16)), (512, 64), torch.float16)


if __name__ == "__main__":
    child() if sys.argv[1:] == ["--child"] else main()
