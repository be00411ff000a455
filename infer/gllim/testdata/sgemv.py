# OpenBLAS sgemv of the forward pass's size (450×1888 float32), one thread:
# the machine's floor that issue #13 measures posed against.
import os, sys, timeit
import numpy as np
rng = np.random.default_rng(1)
A = rng.standard_normal((450, 1888)).astype(np.float32)
x = rng.standard_normal(1888).astype(np.float32)
y = np.empty(450, dtype=np.float32)
for _ in range(2000):
    np.dot(A, x, out=y)
best = []
for rep in range(7):
    n = 20000
    t = timeit.timeit(lambda: np.dot(A, x, out=y), number=n)
    best.append(t / n * 1e6)
best.sort()
print("sgemv 450x1888 float32, OPENBLAS_NUM_THREADS=%s: min %.1f us, median %.1f us, max %.1f us" % (os.environ.get("OPENBLAS_NUM_THREADS"), best[0], best[3], best[-1]))
