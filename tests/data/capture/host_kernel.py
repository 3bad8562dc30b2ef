"""A program whose kernel TileLang compiles for the host (target "c") and runs on CPU tensors, on any machine (a
test program of tilelang-churn's capture: it runs for real, as without capture).

    python3 host_kernel.py [COUNT]   # COUNT kernels of different sizes, each compiled and run once (default 1)
"""

import sys

import tilelang
import tilelang.language as T
import torch


@tilelang.jit(out_idx=[-1], target="c")
def add_one(N, block=64):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.serial(block):
                B[bx * block + i] = A[bx * block + i] + 1.0

    return main


if __name__ == "__main__":
    count = int(sys.argv[1]) if sys.argv[1:] else 1
    for k in range(count):
        n = 64 * (k + 1)
        a = torch.randn(n)
        torch.testing.assert_close(add_one(n)(a), a + 1)
    print(f"host_kernel: {count} kernels right")
