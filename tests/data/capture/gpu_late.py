"""A program that builds a kernel, then puts a tensor on cuda, then builds another (a test program of
tilelang-churn's capture): without a GPU the capture ends at the tensor, or with --cuda-on-cpu goes on."""

import tilelang
import tilelang.language as T
import torch


@tilelang.jit(out_idx=[-1])
def double(N, dtype=T.float32):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, 128), threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = A[bx * 128 + i] * 2

    return main


if __name__ == "__main__":
    first = double(256)(torch.randn(256))
    x = torch.randn(512, device="cuda")  # the line a machine without a GPU stops at
    second = double(512)(x)
    assert second.shape == (512,)
    print("gpu_late: done")
